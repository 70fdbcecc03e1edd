"""`mq top`: a Textual live view of a RocketMQ cluster (ours or Apache's) built on mqtools.client.

The app holds the live state and where the user is; the poller (a thread of its own) feeds it job
outcomes, and every refresh, outcome or clock tick redraws the current view from the state. Without
a poller the app shows the state it was given (snapshot tests on a fixed model).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import App
from textual.css.query import NoMatches
from textual.widgets import Static

from mqtools.live import export
from mqtools.live.state import LiveState, Outcome
from mqtools.live.tables import Row, Table, filtered, sorted_rows
from mqtools.live.views import build
from mqtools.tui.navigation import Navigation, view_named
from mqtools.tui.poller import Poller
from mqtools.tui.screens.confirm import ConfirmScreen
from mqtools.tui.screens.help import HelpScreen
from mqtools.tui.screens.main import MainScreen
from mqtools.tui.widgets.header import HeaderFacts, TopHeader
from mqtools.tui.widgets.table import LiveTable

RENDER_DELAY = 0.1
"""Outcomes arriving within this of each other are drawn once."""
TIMELESS = {"topics": ("topics",), "groups": ("groups",), "namesrv": ("probe", "snapshot"), "proxies": ("proxies",)}
"""Views whose rows change only with these jobs' outcomes (see TopApp._signature)."""


class TopApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "mq top"
    ENABLE_COMMAND_PALETTE = False
    SCREENS: ClassVar = {}

    def __init__(self, *, poller: Poller | None, namesrv: list[str], context: str | None = None,
                 refresh: float = 2.0, allow_writes: bool = False, snapshot_dir: Path | None = None,
                 view: str = "brokers", state: LiveState | None = None, proxies: tuple[str, ...] = (),
                 clock: Callable[[], float] = time.monotonic, wall_clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.poller = poller
        self.namesrv = namesrv
        self.context_name = context
        self.refresh_seconds = refresh
        self.allow_writes = allow_writes
        self.snapshot_dir = snapshot_dir or Path.cwd()
        self.state = state or LiveState()
        self.nav = Navigation(view)
        self.proxies = proxies
        self.clock, self.wall_clock = clock, wall_clock
        self.paused = False
        self.current_table: Table | None = None
        self.current_rows: list[Row] = []
        self.last_snapshot: tuple[Path, Path] | None = None
        self.last_round_seconds: float | None = None
        self._render_timer = None
        self._drawn: tuple[object, ...] | None = None
        self._texts: dict[str | None, str] = {}

    # -- lifecycle -------------------------------------------------------------------------------

    def on_mount(self) -> None:
        self.push_screen(MainScreen())
        if self.poller is not None:
            self.poller.attach(self.on_outcome)
            self.set_interval(self.refresh_seconds, self.kick)
            self.set_interval(1.0, self.redraw)
            self.kick()
        self.call_after_refresh(self.redraw)

    def on_unmount(self) -> None:
        if self.poller is not None:
            self.poller.close()

    def kick(self) -> None:
        """Start a round now unless paused (a job still running from before is not started again)."""
        if self.poller is not None and not self.paused:
            self.run_worker(self._round(), group="rounds", exit_on_error=False)

    async def _round(self) -> None:
        assert self.poller is not None
        self.last_round_seconds = await self.poller.round(self.nav.wanted(self.proxies))
        self.state.round_done(self.wall_clock(), self.clock())
        self.redraw()

    def on_outcome(self, outcome: Outcome) -> None:
        self.state.apply(outcome)
        if self._render_timer is None:
            self._render_timer = self.set_timer(RENDER_DELAY, self._timed_redraw)

    def _timed_redraw(self) -> None:
        self._render_timer = None
        self._drawn: tuple[object, ...] | None = None
        self._texts: dict[str | None, str] = {}
        self.redraw()

    # -- drawing ---------------------------------------------------------------------------------

    def redraw(self) -> None:
        """Build the current view from the state and show it."""
        if not self.screen_stack:
            return
        if not isinstance(self.screen, MainScreen):
            main = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
            if main is None:
                return
        else:
            main = self.screen
        try:
            live_table, info, note_widget, header = (main.query_one(LiveTable), main.query_one("#info", Static),
                                                     main.query_one("#notes", Static), main.query_one(TopHeader))
        except NoMatches:
            return  # the screen is being composed or taken down: the next outcome or tick draws it
        level = self.nav.current
        signature = self._signature()
        if signature is None or signature != self._drawn:
            table = build(self.state, level.view, level.target, self.clock(), self.wall_clock())
            rows = sorted_rows(filtered(table.rows, level.filter_text), level.sort_column, level.descending)
            self.current_table, self.current_rows, self._drawn = table, rows, signature
            live_table.show(table, rows)
        table, rows = self.current_table, self.current_rows
        assert table is not None
        notes = [*table.notes]
        if level.filter_text:
            notes.append(f"{len(rows)} of {len(table.rows)} rows match /{level.filter_text}")
        for widget, lines in ((info, table.info), (note_widget, notes)):
            text = "\n".join(lines)
            if self._texts.get(widget.id) != text:  # an update re-lays the screen out: only on a change
                self._texts[widget.id] = text
                widget.update(Text(text))
                widget.display = bool(lines)
        header.show(self.header_facts(table))

    def _signature(self) -> tuple[object, ...] | None:
        """What the current view's rows depend on, for views whose rows do not age with the clock
        (topics, groups, name servers); None for the others, which are rebuilt at every redraw. A
        redraw whose signature did not change (another view's outcome, a clock tick) keeps the rows."""
        level = self.nav.current
        deps = TIMELESS.get(level.view)
        if deps is None:
            return None
        slots = [self.state.slots.get(key) for key in deps]
        return (level.view, level.target, level.filter_text, level.sort_column, level.descending,
                *((id(s.value), s.error) if s is not None else None for s in slots))

    def header_facts(self, table: Table) -> HeaderFacts:
        now = self.clock()
        stale = [(key, None if slot.ok_mono is None else (now - slot.ok_mono) * 1000)
                 for key, slot in sorted(self.state.slots.items()) if slot.stale]
        return HeaderFacts(self.context_name, self.namesrv, self.refresh_seconds, self.state.last_round_wall,
                           self.state.last_round_mono, now, stale, self.paused, self.nav.breadcrumb(),
                           self.nav.current.filter_text, self.nav.sort_label(table))

    # -- keys ------------------------------------------------------------------------------------

    def switch_view(self, text: str) -> None:
        view = view_named(text)
        if view is None:
            self.notify(f"no view {text!r}: brokers, ha, topics, groups, namesrv", severity="error")
            return
        self.nav.switch(view)
        self.redraw()
        self.kick()

    def set_filter(self, text: str) -> None:
        self.nav.current.filter_text = text or None
        self.redraw()

    def sort_by(self, letter: str) -> None:
        if self.current_table is not None and self.nav.sort_by(self.current_table, letter) is not None:
            self.redraw()

    def drill(self) -> None:
        row = self._selected()
        if row is not None and row.drill is not None and self.nav.drill(row.drill):
            self.redraw()
            self.kick()

    def _selected(self) -> Row | None:
        if not self.screen_stack or not isinstance(self.screen, MainScreen):
            return None
        return self.screen.query_one(LiveTable).selected()

    def back(self) -> None:
        if self.nav.back():
            self.redraw()
            self.kick()

    def toggle_pause(self) -> None:
        self.paused = not self.paused
        self.redraw()
        if not self.paused:
            self.kick()

    def show_help(self) -> None:
        self.push_screen(HelpScreen(self.allow_writes))

    def save_snapshot(self) -> tuple[Path, Path] | None:
        """The current view as shown (filter and sort applied) to <view>-<time>.json and .txt."""
        table = self.current_table
        if table is None:
            return None
        level, taken = self.nav.current, self.wall_clock()
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", level.label.replace(" ", "-"))
        stem = self.snapshot_dir / f"mq-top-{name}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(taken))}"
        doc = export.view_document(table, self.current_rows, target=level.target, context=self.context_name,
                                   namesrv=self.namesrv, taken_at=taken, filter_text=level.filter_text,
                                   sort=self.nav.sort_label(table))
        header = export.header_lines(context=self.context_name, namesrv=self.namesrv, taken_at=taken)
        paths = (stem.with_suffix(".json"), stem.with_suffix(".txt"))
        try:
            self.snapshot_dir.mkdir(parents=True, exist_ok=True)
            paths[0].write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
            paths[1].write_text(export.view_text(table, self.current_rows, header), encoding="utf-8")
        except OSError as exc:
            self.notify(f"snapshot not saved: {exc}", severity="error")
            return None
        self.last_snapshot = paths
        self.notify(f"saved {paths[0]} and {paths[1].name}")
        return paths

    # -- writes ----------------------------------------------------------------------------------

    def write_action(self, what: str) -> None:
        """wipe / add a broker's write permission (brokers view), reset a group (groups view)."""
        if not self.allow_writes:
            self.notify("read-only: start mq top with --allow-writes to change the cluster", severity="warning")
            return
        row, table = self._selected(), self.current_table
        view = self.nav.current.view
        if row is None or table is None or (what in ("wipe", "add")) != (view == "brokers") or \
                (what == "reset") != (view == "groups"):
            self.notify(f"{'w/a act on a broker row' if what != 'reset' else 'r acts on a group row'}",
                        severity="warning")
            return
        if what == "reset":
            group = str(table.value(row, "group"))
            question = (f"Reset consumer group {group} to the latest offset of every queue of every topic it "
                        "consumes? Messages not yet consumed are skipped.")
        else:
            group = str(table.value(row, "brokerName"))
            verb = "Take write permission from" if what == "wipe" else "Give write permission back to"
            question = f"{verb} broker {group} on every name server?"

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(self._write(what, group), group="writes", exit_on_error=False)

        self.push_screen(ConfirmScreen(question), answered)

    async def _write(self, what: str, name: str) -> None:
        assert self.poller is not None
        try:
            if what == "reset":
                moved = await self.poller.call(lambda admin: admin.offsets.reset_group_to_latest(name))
                self.notify(f"group {name}: {len(moved)} queues reset to latest")
            else:
                change = await self.poller.call(lambda admin: admin.namesrv.wipe_write_perm(name) if what == "wipe"
                                                else admin.namesrv.add_write_perm(name))
                done = ", ".join(f"{ns}: {n} topics" for ns, n in change.topics.items())
                self.notify(f"{'wiped' if what == 'wipe' else 'added'} write permission of {name} ({done})")
                if (error := change.error()) is not None:
                    self.notify(f"{what} {name} not applied everywhere: {error}", severity="warning")
        except Exception as exc:  # noqa: BLE001 - a refused action is reported, the view goes on
            self.notify(f"{what} {name} failed: {exc}", severity="error")
        self.kick()
