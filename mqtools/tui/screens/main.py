"""The main screen: header, the current view's table with its info and notes, and the prompt.

Keys follow k9s: `:` switch view, `/` filter (`/!` inverts), enter drill down, esc back, shift+letter
sort, `p` pause, `s` snapshot, `?` help, `q` quit; with --allow-writes `w`/`a` (broker write
permission) and `r` (reset a group to latest), each confirmed first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static

from mqtools.tui.widgets.header import TopHeader
from mqtools.tui.widgets.prompt import Prompt
from mqtools.tui.widgets.table import LiveTable

if TYPE_CHECKING:
    from mqtools.tui.app import TopApp

KEY_HINT = ":view  /filter  enter drill  esc back  shift+letter sort  p pause  s snapshot  ? help  q quit"


class MainScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("colon", "prompt(':')", "view", show=False),
        Binding("slash", "prompt('/')", "filter", show=False),
        Binding("escape", "back", "back", show=False),
        Binding("p", "pause", "pause", show=False),
        Binding("s", "snapshot", "snapshot", show=False),
        Binding("question_mark", "help", "help", show=False),
        Binding("q", "quit", "quit", show=False),
        Binding("w", "write('wipe')", "wipe write perm", show=False),
        Binding("a", "write('add')", "add write perm", show=False),
        Binding("r", "write('reset')", "reset group", show=False),
    ]

    def __init__(self) -> None:
        super().__init__(id="main")

    @property
    def top(self) -> TopApp:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield TopHeader(id="header")
        yield Static(id="info")
        yield LiveTable()
        yield Static(id="notes")
        yield Prompt()
        yield Static(KEY_HINT, id="keys")

    def on_mount(self) -> None:
        self.query_one(Prompt).close()
        self.query_one(LiveTable).focus()

    def on_key(self, event: events.Key) -> None:
        char = event.character
        if char and len(char) == 1 and char.isalpha() and char.isupper() and not self._prompting():
            event.stop()
            self.top.sort_by(char)

    def _prompting(self) -> bool:
        return bool(self.query_one(Prompt).display)

    def action_prompt(self, mode: str) -> None:
        level = self.top.nav.current
        self.query_one(Prompt).open(mode, (level.filter_text or "") if mode == "/" else "")

    def on_prompt_done(self, message: Prompt.Done) -> None:
        self.query_one(LiveTable).focus()
        if message.value is None:
            return
        if message.mode == ":":
            self.top.switch_view(message.value)
        else:
            self.top.set_filter(message.value)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.top.drill()

    def action_back(self) -> None:
        self.top.back()

    def action_pause(self) -> None:
        self.top.toggle_pause()

    def action_snapshot(self) -> None:
        self.top.save_snapshot()

    def action_help(self) -> None:
        self.top.show_help()

    async def action_quit(self) -> None:
        self.top.exit()

    def action_write(self, what: str) -> None:
        self.top.write_action(what)
