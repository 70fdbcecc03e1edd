"""Snapshot tests of every view of `mq top` on a fixed model, so a layout change shows up in review.

The model (tuisupport.fixed_state) has two masters with a slave each over two name servers: a
heartbeat over 30 s (warn) and over 90 s (critical), a master missing from one name server and not
answering, a slave whose diff grows and is not in sync, a group whose lag grows. Update the SVGs with
`pytest tests/tui/test_view_snapshots.py --snapshot-update` and review the difference.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.tuisupport import NOW_MONO, NOW_WALL, NS, fixed_state

from mqtools.tui.app import TopApp
from mqtools.tui.widgets.table import LiveTable

SIZE = (170, 24)
SETTLE_PAUSES = 100


def pressing(*keys: str, until: Callable[[TopApp], bool] = lambda app: True):  # type: ignore[no-untyped-def]
    """Press `keys`, then wait until `until` holds of the app and the table has measured its rows. A
    key's effect travels as messages (enter: a RowSelected from the table to the screen, then the drill),
    so the keys having been sent does not mean the view changed; a DataTable sets its virtual size on
    its own idle. (The cut cells of CI at 8b928c6 and 53c3471 were a Textual cache, fixed in LiveTable.)"""

    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        await pilot.pause()
        if keys:
            await pilot.press(*keys)
        for _ in range(SETTLE_PAUSES):
            tables = pilot.app.screen.query(LiveTable)
            if until(pilot.app) and not any(
                    getattr(t, "_require_update_dimensions", False) or getattr(t, "_new_rows", None)
                    for t in tables):  # DataTable's own flags (Textual 8): absent elsewhere, nothing to wait on
                return
            await pilot.pause()
        raise AssertionError("the keys never took effect, or the table never measured its rows")

    return run


def drilled(app: TopApp) -> bool:
    return app.nav.current.target is not None


def sorted_on_m(app: TopApp) -> bool:
    return app.nav.current.filter_text == "!TBW" and app.nav.current.sort_column is not None


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
    assert snap_compare(fixed_app(view), run_before=pressing(), terminal_size=SIZE)


def test_topic_drill_down(snap_compare) -> None:
    assert snap_compare(fixed_app("topics"), run_before=pressing("enter", until=drilled), terminal_size=SIZE)


def test_group_drill_down(snap_compare) -> None:
    assert snap_compare(fixed_app("groups"), run_before=pressing("enter", until=drilled), terminal_size=SIZE)


def test_filtered_and_sorted(snap_compare) -> None:
    assert snap_compare(fixed_app("topics"), run_before=pressing("slash", *"!TBW", "enter", "M", until=sorted_on_m), terminal_size=SIZE)


def test_help(snap_compare) -> None:
    assert snap_compare(fixed_app(), press=["question_mark"], terminal_size=(170, 40))
