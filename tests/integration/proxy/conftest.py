"""Fixtures every proxy test shares: the 5.1.2 Python client needs an event loop on the main thread."""

from __future__ import annotations

from support.eventloop import main_thread_loop

__all__ = ["main_thread_loop"]
