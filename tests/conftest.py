"""Suite-wide setup.

A shell without job control starts a background command with SIGINT ignored, and an ignored
signal stays ignored across exec: pytest, and every `mq` process a test starts, would then ignore
SIGINT, and the tests that stop `mq ... --watch` with it would wait forever. The suite takes
SIGINT back for itself, so its children start with the default whatever launched pytest.
"""

from __future__ import annotations

import signal

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
