"""Rows of a live view: typed cells with the text a person reads, the figure a script reads, and a
threshold level; filtering and sorting; the formatting of ages, sizes and rates.

A value that is not available is None and reads `n/a`, as everywhere in mq.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from mqtools.common.presentation import NA, Column

OK, WARN, CRIT = 0, 1, 2
LEVEL_NAMES = {OK: "ok", WARN: "warn", CRIT: "critical"}
SPARK = "▁▂▃▄▅▆▇█"


@dataclass(slots=True)
class Cell:
    value: Any
    """The figure as JSON carries it (None: unknown)."""
    text: str
    level: int = OK


@dataclass(slots=True)
class Row:
    key: str
    """Stable identity across refreshes (a broker's address, a topic's name)."""
    cells: list[Cell]
    level: int = OK
    stale: bool = False
    """Its figures are from an earlier refresh: the latest attempt to read them failed."""
    drill: str | None = None
    """What enter opens on this row (a topic or group name); None when nothing."""

    def __post_init__(self) -> None:
        self.level = max([self.level, *(c.level for c in self.cells)])

    def text(self) -> str:
        return "  ".join(c.text for c in self.cells)

    def json(self, columns: list[Column]) -> dict[str, Any]:
        return {**{c.key: cell.value for c, cell in zip(columns, self.cells, strict=True)},
                "level": LEVEL_NAMES[self.level], "stale": self.stale}


@dataclass(slots=True)
class Table:
    view: str
    """brokers, ha, topics, groups, namesrv, topic or group."""
    title: str
    columns: list[Column]
    rows: list[Row]
    info: list[str] = field(default_factory=list)
    """Lines shown above the rows (a topic's route, a group's members)."""
    notes: list[str] = field(default_factory=list)
    """Lines shown below the rows: what could not be read, an empty cluster."""

    def value(self, row: Row, key: str) -> Any:
        """The figure of a row in the column whose JSON key is `key` (KeyError for no such column)."""
        index = next((i for i, c in enumerate(self.columns) if c.key == key), None)
        if index is None:
            raise KeyError(key)
        return row.cells[index].value

    def column_for(self, letter: str) -> int | None:
        """The first column whose header starts with `letter` (shift+letter sorts by it)."""
        return next((i for i, c in enumerate(self.columns) if c.header.upper().startswith(letter.upper())), None)


def filtered(rows: list[Row], pattern: str | None) -> list[Row]:
    """Rows whose text matches the regex (case-insensitive); a leading `!` keeps those that do not.
    A pattern that is not a regex matches as plain text."""
    if not pattern or pattern == "!":
        return rows
    invert = pattern.startswith("!")
    body = pattern[1:] if invert else pattern
    try:
        regex = re.compile(body, re.IGNORECASE)
    except re.error:
        regex = re.compile(re.escape(body), re.IGNORECASE)
    return [r for r in rows if bool(regex.search(r.text())) != invert]


def sort_key(value: Any) -> tuple[int, Any]:
    """Unknown values last whatever the direction; numbers by value, the rest by text."""
    if value is None:
        return (2, 0)
    if isinstance(value, bool):
        return (0, int(value))
    if isinstance(value, (int, float)):
        return (0, value)
    if isinstance(value, dict):
        known = [v for v in value.values() if isinstance(v, (int, float))]
        return (0, max(known)) if known else (2, 0)
    return (1, str(value).lower())


def sorted_rows(rows: list[Row], column: int | None, descending: bool) -> list[Row]:
    if column is None:
        return rows
    known = [r for r in rows if sort_key(r.cells[column].value)[0] != 2]
    unknown = [r for r in rows if sort_key(r.cells[column].value)[0] == 2]
    return sorted(known, key=lambda r: sort_key(r.cells[column].value), reverse=descending) + unknown


# -- formatting ----------------------------------------------------------------------------------


def na(value: Any, fmt: str = "{}") -> str:
    return NA if value is None else fmt.format(value)


def age(ms: float | None) -> str:
    """12.3s, 4m05s, 2h03m."""
    if ms is None:
        return NA
    seconds = ms / 1000
    if abs(seconds) < 60:
        return f"{seconds:.1f}s"
    sign, seconds = ("-" if seconds < 0 else ""), abs(int(seconds))
    if seconds < 3600:
        return f"{sign}{seconds // 60}m{seconds % 60:02d}s"
    return f"{sign}{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def size(n: float | None) -> str:
    if n is None:
        return NA
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return NA


def num(value: float | None, digits: int = 2) -> str:
    return NA if value is None else f"{value:.{digits}f}"


def percent(ratio: float | None) -> str:
    return NA if ratio is None else f"{ratio * 100:.1f}%"


def signed_rate(per_s: float | None, unit: str = "/s") -> str:
    if per_s is None:
        return NA
    return f"{per_s:+.1f}{unit}"


def sparkline(values: list[float], width: int = 16) -> str:
    """The last `width` values as block characters scaled to their own range."""
    tail = values[-width:]
    if not tail:
        return ""
    low, high = min(tail), max(tail)
    span = high - low
    if span <= 0 or math.isnan(span):
        return SPARK[0 if high == 0 else 3] * len(tail)
    return "".join(SPARK[min(len(SPARK) - 1, int((v - low) / span * (len(SPARK) - 1)))] for v in tail)


def plain(table: Table, rows: list[Row] | None = None) -> str:
    """The table as aligned text: title, info, header, rows, notes."""
    shown = table.rows if rows is None else rows
    cells = [[c.text for c in r.cells] for r in shown]
    widths = [max([len(col.header), *(len(r[i]) for r in cells)]) for i, col in enumerate(table.columns)]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if col.right else v.ljust(w)
                         for v, col, w in zip(values, table.columns, widths, strict=True)).rstrip()

    out = [table.title, *table.info, line([c.header for c in table.columns]), *(line(r) for r in cells)]
    if table.notes:
        out += ["", *table.notes]
    return "\n".join(out) + "\n"
