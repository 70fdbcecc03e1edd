"""The documents a live view is saved as: one view (`TopView`, the TUI's `s`) or every view of one
round (`TopSnapshot`, `mq top --once -o json`), each with `kind` and `schemaVersion` as every mq JSON
document; their JSON Schemas ship in mqtools.common.presentation (`mq admin schema TopView`)."""

from __future__ import annotations

import datetime
from typing import Any

from mqtools.common.presentation import NA, document
from mqtools.live.tables import Row, Table, plain


def iso(wall: float | None) -> str | None:
    if wall is None:
        return None
    return datetime.datetime.fromtimestamp(wall, datetime.UTC).isoformat(timespec="milliseconds")


def table_json(table: Table, rows: list[Row] | None = None) -> dict[str, Any]:
    shown = table.rows if rows is None else rows
    return {"title": table.title, "columns": [{"key": c.key, "header": c.header} for c in table.columns],
            "rows": [r.json(table.columns) for r in shown], "info": list(table.info), "notes": list(table.notes)}


def view_document(table: Table, rows: list[Row], *, target: str | None, context: str | None,
                  namesrv: list[str], taken_at: float, filter_text: str | None,
                  sort: tuple[str, bool] | None) -> dict[str, Any]:
    """One view as shown: its rows after the filter and sort, and what the filter and sort were."""
    return document("TopView", {
        "view": table.view, "target": target, "takenAt": iso(taken_at), "context": context, "namesrv": namesrv,
        "filter": filter_text or None, "sort": None if sort is None else {"column": sort[0], "descending": sort[1]},
        **table_json(table, rows)})


def snapshot_document(tables: dict[str, Table], *, context: str | None, namesrv: list[str],
                      taken_at: float) -> dict[str, Any]:
    """Every top-level view of one round."""
    return document("TopSnapshot", {"takenAt": iso(taken_at), "context": context, "namesrv": namesrv,
                                    "views": {name: table_json(t) for name, t in tables.items()}})


def header_lines(*, context: str | None, namesrv: list[str], taken_at: float) -> list[str]:
    return [f"mq top  context {context or NA}  name servers {';'.join(namesrv)}  at {iso(taken_at)}"]


def view_text(table: Table, rows: list[Row], header: list[str]) -> str:
    return "\n".join(header) + "\n\n" + plain(table, rows)
