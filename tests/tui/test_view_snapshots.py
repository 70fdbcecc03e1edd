"""Snapshot tests of every view of `mq top` on a fixed model, so a layout change shows up in review.

The model (tuisupport.fixed_state) has two masters with a slave each over two name servers: a
heartbeat over 30 s (warn) and over 90 s (critical), a master missing from one name server and not
answering, a slave whose diff grows and is not in sync, a group whose lag grows. Update the SVGs with
`pytest tests/tui/test_view_snapshots.py --snapshot-update` and review the difference.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.tuisupport import NOW_MONO, NOW_WALL, NS, fixed_state

from mqtools.tui.app import TopApp

SIZE = (170, 24)


@pytest.fixture(autouse=True)
def utc() -> Iterator[None]:
    """The header prints the last refresh in local time: pin the zone."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if before is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before
    time.tzset()


def fixed_app(view: str = "brokers") -> TopApp:
    return TopApp(poller=None, namesrv=NS, context="prod-east", refresh=2.0, view=view, state=fixed_state(),
                  clock=lambda: NOW_MONO, wall_clock=lambda: NOW_WALL, snapshot_dir=Path("/nonexistent"))


@pytest.mark.parametrize("view", ["brokers", "ha", "topics", "groups", "namesrv", "proxies"])
def test_view(snap_compare, view: str) -> None:
    assert snap_compare(fixed_app(view), terminal_size=SIZE)


def test_topic_drill_down(snap_compare) -> None:
    assert snap_compare(fixed_app("topics"), press=["enter"], terminal_size=SIZE)


def test_group_drill_down(snap_compare) -> None:
    assert snap_compare(fixed_app("groups"), press=["enter"], terminal_size=SIZE)


def test_filtered_and_sorted(snap_compare) -> None:
    assert snap_compare(fixed_app("topics"), press=["slash", *"!TBW", "enter", "M"], terminal_size=SIZE)


def test_help(snap_compare) -> None:
    assert snap_compare(fixed_app(), press=["question_mark"], terminal_size=(170, 40))
