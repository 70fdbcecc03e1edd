"""Pure-Python twins of modules that a compiled module replaces, loaded beside the compiled ones.

A fresh copy of a module is executed with MQ_PURE_PYTHON set, so it keeps its own pure forms and both
paths can be compared in one process.
"""

from __future__ import annotations

import importlib.util
from types import ModuleType

import pytest

from mqtools.common import speedups


def pure_copy(module: ModuleType) -> ModuleType:
    monkey = pytest.MonkeyPatch()
    monkey.setenv(speedups.PURE_PYTHON_ENV, "1")
    try:
        spec = importlib.util.spec_from_file_location(f"pure_{module.__name__}", module.__file__)
        assert spec is not None and spec.loader is not None
        copy = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(copy)
    finally:
        monkey.undo()
    return copy
