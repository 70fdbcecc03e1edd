"""LiveTable draws every cell whole from the first frame after show(), and after a cell grows in place.

Textual's DataTable measures auto-width columns on its own idle and caches lines by an update count that
measuring does not change: a frame drawn between the two stayed cut at the header's width (CI at
53c3471 and 8b928c6, the drill-down's "broker-a" shown as "broker").
"""

from __future__ import annotations

from textual.app import App, ComposeResult

from mqtools.common.presentation import Column
from mqtools.live.tables import Cell, Row, Table
from mqtools.tui.widgets.table import LiveTable

COLUMNS = [Column("BROKER", key="broker"), Column("QUEUE", right=True, key="queue")]


def table(*cells: tuple[str, int]) -> Table:
    rows = [Row(f"{b}/{q}", [Cell(b, b), Cell(q, str(q))]) for b, q in cells]
    return Table(view="group", title="group", columns=COLUMNS, rows=rows)


class Host(App[None]):
    CSS = "LiveTable { height: 1fr; }"

    def compose(self) -> ComposeResult:
        yield LiveTable()


def line(widget: LiveTable, y: int) -> str:
    return widget.render_line(y).text


async def test_a_frame_drawn_before_the_idle_shows_whole_cells_and_stays_whole() -> None:
    async with Host().run_test(size=(60, 8)) as pilot:
        widget = pilot.app.query_one(LiveTable)
        await pilot.pause()
        shown = table(("broker-a", 0), ("broker-b", 1))
        widget.show(shown, shown.rows)
        assert "broker-a" in line(widget, 1)  # drawn before the table's idle
        await pilot.pause()
        assert "broker-a" in line(widget, 1)


async def test_a_cell_that_grows_in_place_widens_its_column_in_the_same_frame() -> None:
    async with Host().run_test(size=(60, 8)) as pilot:
        widget = pilot.app.query_one(LiveTable)
        before = table(("b", 0))
        widget.show(before, before.rows)
        await pilot.pause()
        after = Table(view="group", title="group", columns=COLUMNS,
                      rows=[Row("b/0", [Cell("broker-with-a-long-name", "broker-with-a-long-name"), Cell(0, "0")])])
        widget.show(after, after.rows)
        assert "broker-with-a-long-name" in line(widget, 1)
        await pilot.pause()
        assert "broker-with-a-long-name" in line(widget, 1)
        assert widget.cursor_row == 0
