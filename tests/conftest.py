"""Suite-wide setup.

A shell without job control starts a background command with SIGINT ignored, and an ignored
signal stays ignored across exec: pytest, and every `mq` process a test starts, would then ignore
SIGINT, and the tests that stop `mq ... --watch` with it would wait forever. The suite takes
SIGINT back for itself, so its children start with the default whatever launched pytest.

Every test is marked by the directory it lives in (unit, integration, compat, reference, spark, tui),
and the directories that start JVMs, a SparkSession or third-party clients are also `slow`, so
`-m "not slow"` or `-m "not reference"` select what they say (tests/README.md).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

HERE = Path(__file__).parent
#: The directories whose tests take a marker of their name; the second set are also `slow`.
DIRECTORY_MARKERS = ("unit", "integration", "compat", "reference", "spark", "tui")
SLOW = frozenset({"compat", "reference", "spark", "tui"})


def pytest_configure(config: pytest.Config) -> None:
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        try:
            top = Path(item.path).relative_to(HERE).parts[0]
        except ValueError:
            continue
        if top in DIRECTORY_MARKERS:
            item.add_marker(top)
            if top in SLOW:
                item.add_marker("slow")
