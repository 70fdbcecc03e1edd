"""The live table: a DataTable that takes a view's rows each refresh and changes only what changed.

Rebuilding a thousand rows every two seconds would make keys wait; when the rows are the same ones in
the same order only the cells whose text or colour changed are updated, and the cursor stays on the
row it was on (by key) when the rows change.

Column widths are set here from the texts, not left to DataTable's auto width: that measures new rows
on the table's next idle, and a frame drawn before it is cached at the header's width until some cell
changes (Textual 8.2: a drill-down showed "broker-a" as "broker" until the next change, CI at 53c3471).
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable

from mqtools.live.tables import CRIT, WARN, Row, Table

STYLES = {CRIT: "bold #ff5f5f", WARN: "#ffd75f"}


def styled(text: str, level: int, stale: bool, right: bool) -> Text:
    style = STYLES.get(level, "")
    if stale:
        style = f"{style} dim".strip()
    return Text(text, style=style, justify="right" if right else "left", no_wrap=True)


class LiveTable(DataTable[Text]):
    """Rows keyed by the view's row keys, columns by the view's column keys."""

    def __init__(self) -> None:
        super().__init__(id="table", cursor_type="row", zebra_stripes=False)
        self._columns_of: tuple[str, ...] = ()
        self._keys: list[str] = []
        self._shown: dict[str, list[tuple[str, int, bool]]] = {}
        """What each shown cell holds (text, level, stale): compared before any Text is made."""
        self.view_rows: list[Row] = []

    def show(self, table: Table, rows: list[Row]) -> None:
        """Show `rows` (already filtered and sorted) under `table`'s columns."""
        columns = tuple(c.key for c in table.columns)
        marks = {r.key: [(c.text, r.level, r.stale) for c in r.cells] for r in rows}
        keys = [r.key for r in rows]
        self.view_rows = rows
        widths = [max([cell_len(c.header), *(cell_len(m[i][0]) for m in marks.values())])
                  for i, c in enumerate(table.columns)]
        if columns == self._columns_of and keys == self._keys:
            shown = self.ordered_columns
            grown = {i for i, (w, col) in enumerate(zip(widths, shown, strict=True)) if w > col.width}
            for i in grown:  # set before the cells change: a frame drawn in between is drawn at the new width
                shown[i].width = widths[i]
            for key in keys:
                old, new = self._shown[key], marks[key]
                if old == new:
                    continue
                for i, (before, after) in enumerate(zip(old, new, strict=True)):
                    if before != after:
                        self.update_cell(key, columns[i], styled(*after, table.columns[i].right),
                                         update_width=i in grown)
            self._shown = marks
            return
        selected = self._keys[self.cursor_row] if 0 <= self.cursor_row < len(self._keys) else None
        self.clear(columns=True)
        for col, width in zip(table.columns, widths, strict=True):
            self.add_column(Text(col.header, justify="right" if col.right else "left"), key=col.key, width=width)
        rights = [c.right for c in table.columns]
        self.add_rows_keyed(rows, {k: [styled(*m, right) for m, right in zip(v, rights, strict=True)]
                                   for k, v in marks.items()})
        self._columns_of, self._keys, self._shown = columns, keys, marks
        if selected in marks:
            self.move_cursor(row=keys.index(selected), animate=False)

    def add_rows_keyed(self, rows: list[Row], texts: dict[str, list[Text]]) -> None:
        for row in rows:
            self.add_row(*texts[row.key], key=row.key)

    def selected(self) -> Row | None:
        """The row under the cursor, as the view built it."""
        if 0 <= self.cursor_row < len(self.view_rows):
            return self.view_rows[self.cursor_row]
        return None
