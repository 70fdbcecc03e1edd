"""How `mq` commands print: rich tables on a terminal, plain aligned text when piped, JSON and CSV.

A command gets a `View` (columns, rows, footer) from its model's renderer (mqtools.common.presentation)
and hands it here; it never formats by hand. Unknown values are None in the row and print as `n/a` (tables, CSV) or `null`
(JSON). Every JSON document carries `kind` and `schemaVersion` (mqtools.common.presentation, where the
JSON Schemas ship); `mq admin schema` prints them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from mqtools.common.presentation import NA, Column, View, cell

FORMATS = ("table", "json", "csv")


def is_terminal(stream: TextIO) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


def render(view: View, fmt: str, stream: TextIO | None = None) -> None:
    import json

    out = stream or sys.stdout
    if fmt == "json":
        out.write(json.dumps(view.document(), indent=2, default=str) + "\n")
    elif fmt == "csv":
        import csv

        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([c.header for c in view.columns])
        writer.writerows([[cell(v) for v in row] for row in view.rows])
    elif is_terminal(out):
        _rich(view, out)
    else:
        out.write(plain(view))


def plain(view: View) -> str:
    """Aligned columns separated by two spaces: what `grep` and `awk` want."""
    cells = [[cell(v) for v in row] for row in view.rows]
    widths = [max([len(c.header), *(len(r[i]) for r in cells)]) for i, c in enumerate(view.columns)]
    lines = [view.title] if view.title else []
    lines.append(_line([c.header for c in view.columns], view.columns, widths))
    lines += [_line(r, view.columns, widths) for r in cells]
    if view.footer or view.partial:
        lines += ["", *view.footer, *view.notes()]
    return "\n".join(lines) + "\n"


def _line(values: Sequence[str], columns: list[Column], widths: list[int]) -> str:
    parts = [v.rjust(w) if c.right else v.ljust(w) for v, c, w in zip(values, columns, widths, strict=True)]
    return "  ".join(parts).rstrip()


def _rich(view: View, out: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=view.title, header_style="bold", show_edge=False, pad_edge=False)
    for column in view.columns:
        table.add_column(column.header, justify="right" if column.right else "left", no_wrap=column.right)
    for row in view.rows:
        table.add_row(*(Text(NA, style="dim") if v is None else Text(cell(v)) for v in row))
    console = Console(file=out)
    console.print(table)
    for line in view.footer:
        console.print(Text(line))
    for line in view.notes():
        console.print(Text(line, style="bold yellow"))
