"""`?`: every key of `mq top`, and the colours' thresholds."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = [
    (":VIEW", "switch view: brokers, ha, topics, groups, namesrv, proxies (a prefix is enough)"),
    ("/REGEX", "filter rows by a regex; /!REGEX keeps the rows that do not match"),
    ("enter", "drill down: a topic's route and queues, a group's progress per queue and verdict, a broker's findings"),
    ("esc", "clear the filter, then go back along the breadcrumb"),
    ("shift+LETTER", "sort by the column whose name starts with LETTER; again: reverse"),
    ("up/down, pgup/pgdn", "move"),
    ("p", "pause / resume refreshing"),
    ("s", "save a snapshot of the view as JSON and text"),
    ("w", "brokers view, with --allow-writes: wipe the broker's write permission"),
    ("a", "brokers view, with --allow-writes: add the broker's write permission back"),
    ("r", "groups view, with --allow-writes: reset the group to the latest offsets"),
    ("?", "this help"),
    ("q", "quit"),
]
THRESHOLDS = [
    "yellow: heartbeat older than 30 s, a slave's diff or a group's lag growing",
    "red: heartbeat older than 90 s, a broker that does not answer, a slave not in sync or not connected,",
    "     a broker missing from a name server, a name server that does not answer",
    "dim: figures from an earlier refresh (the last attempt failed); n/a: not available",
]


def help_text(allow_writes: bool) -> str:
    width = max(len(k) for k, _ in KEYS)
    lines = ["mq top keys", ""]
    lines += [f"  {k.ljust(width)}  {what}" for k, what in KEYS]
    lines += ["", f"write actions: {'enabled' if allow_writes else 'disabled (start with --allow-writes)'}",
              "", "colours", *(f"  {t}" for t in THRESHOLDS), "", "esc, q or ? closes this help"]
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "dismiss", "close")]

    def __init__(self, allow_writes: bool) -> None:
        super().__init__(id="help")
        self.allow_writes = allow_writes

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(help_text(self.allow_writes), id="help-text")
