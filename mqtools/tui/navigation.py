"""Where the user is: a stack of levels (a view, or a drill-down into one topic or group), each with
its own filter and sort, so esc goes back to exactly what was shown before enter."""

from __future__ import annotations

from dataclasses import dataclass

from mqtools.live.collect import Wanted
from mqtools.live.tables import Table
from mqtools.live.views import VIEWS

ALIASES = {"ns": "namesrv", "nameserver": "namesrv", "namesrvs": "namesrv", "broker": "brokers",
           "topic": "topics", "group": "groups", "slaves": "ha", "proxy": "proxies", "px": "proxies"}


def view_named(text: str) -> str | None:
    """A view from what was typed after `:` (a prefix is enough when it names one view)."""
    name = text.strip().lstrip(":").lower()
    if not name:
        return None
    if name in VIEWS:
        return name
    if name in ALIASES:
        return ALIASES[name]
    matches = [v for v in VIEWS if v.startswith(name)]
    return matches[0] if len(matches) == 1 else None


@dataclass(slots=True)
class Level:
    view: str
    """brokers, ha, topics, groups, namesrv, proxies; or topic / group / broker for a drill-down."""
    target: str | None = None
    filter_text: str | None = None
    sort_column: int | None = None
    descending: bool = False

    @property
    def label(self) -> str:
        return self.view if self.target is None else f"{self.view} {self.target}"


class Navigation:
    def __init__(self, view: str = "brokers") -> None:
        self.levels = [Level(view)]

    @property
    def current(self) -> Level:
        return self.levels[-1]

    def breadcrumb(self) -> list[str]:
        return [lvl.label for lvl in self.levels]

    def switch(self, view: str) -> None:
        """`:view` starts a new breadcrumb at that view."""
        self.levels = [Level(view)]

    def drill(self, target: str) -> bool:
        kind = {"topics": "topic", "groups": "group", "brokers": "broker"}.get(self.current.view)
        if kind is None:
            return False
        self.levels.append(Level(kind, target))
        return True

    def back(self) -> bool:
        """Esc: clear the filter first, then go up one level; False when there is nothing to undo."""
        if self.current.filter_text:
            self.current.filter_text = None
            return True
        if len(self.levels) > 1:
            self.levels.pop()
            return True
        return False

    def sort_by(self, table: Table, letter: str) -> str | None:
        """Shift+letter: sort by the column starting with it; again: the other direction."""
        column = table.column_for(letter)
        if column is None:
            return None
        level = self.current
        if level.sort_column == column:
            level.descending = not level.descending
        else:
            level.sort_column, level.descending = column, table.columns[column].right
        return table.columns[column].header

    def sort_label(self, table: Table) -> tuple[str, bool] | None:
        col = self.current.sort_column
        if col is None or col >= len(table.columns):
            return None
        return table.columns[col].header, self.current.descending

    def wanted(self, proxies: tuple[str, ...] = ()) -> Wanted:
        """What the current level needs polled beyond brokers, HA and name servers (`proxies`: the ones
        given, read while their view shows)."""
        level = self.current
        return Wanted(topics=level.view == "topics", groups=level.view == "groups",
                      topic_details=(level.target,) if level.view == "topic" and level.target else (),
                      group_details=(level.target,) if level.view == "group" and level.target else (),
                      proxies=proxies if level.view == "proxies" else ())
