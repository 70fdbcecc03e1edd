"""The compiled codec, when there is one.

``_ccodec`` (from ``_ccodec.pyx``) is built at install time where Cython and a C compiler are
present; the modules whose hot functions it replaces (codec, properties, hashing) keep their
pure-Python forms as the reference, and use those when it is absent or ``MQ_PURE_PYTHON`` is set
(how the test suite checks the pure path on a machine that has both).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

#: Set (to anything but "" or "0") to run the pure-Python forms even where the compiled module exists.
PURE_PYTHON_ENV = "MQ_PURE_PYTHON"


def pure_python_forced() -> bool:
    return os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")


def compiled(name: str = "mqtools.common._ccodec") -> ModuleType | None:
    """The compiled module `name` (the codec's by default), or None (not built here, or the pure path asked
    for)."""
    if pure_python_forced():
        return None
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
