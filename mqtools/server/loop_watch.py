"""LoopWatch: when a server's event loop is held up, say where and whether the machine or mq held it.

A server runs every request, heartbeat and timer on one loop; a loop that does not turn for a second costs a
broker its controller heartbeats (an election), a name server its answers. The loop itself can only notice
afterwards ("heartbeats 3141 ms apart"), which names neither the code nor the cause. A daemon thread
watches the loop's tick: once the loop has not turned for HOLD_S it logs the loop thread's stack (again
each further HOLD_S while the stack moves on), and when the loop turns again one line of how long it was
held and how much CPU the process spent meanwhile. Little CPU over a long hold means the process waited (a
disk, a page fault, or a machine too loaded to schedule it); CPU near the hold's length means mq's own work
held the loop there. The watching thread notices its own late wake-ups too: a thread that slept 100 ms and
woke seconds later either could not take the interpreter (C code holding the GIL: the process computed
meanwhile) or was not run at all (an overloaded machine, SIGSTOP, a disk wait with the GIL held).

`HoldJudge` is the arithmetic (clock readings in, what to say out); `LoopWatch` runs the thread.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback
from dataclasses import dataclass

log = logging.getLogger("mq.loop")

#: How the two lines that say a process was held up begin (tests and drills look for them in node logs).
HELD_UP, NOT_SCHEDULED = "event loop held up", "this process was not scheduled for"
#: A loop that has not turned for this long is held up (a heartbeat is due every second).
HOLD_S = 1.0
#: How often the loop ticks and the watcher looks.
TICK_S = 0.1
#: Stack frames shown, innermost last.
STACK_FRAMES = 12
#: Stacks logged in one hold at most (a stuck loop is not a log flood).
MAX_STACKS = 5


@dataclass(slots=True)
class Hold:
    """One hold of the loop, as the watcher saw it."""

    since: float
    """Monotonic time of the loop's last tick before the hold."""
    cpu_since: float
    """The process's CPU time (seconds) at that tick."""
    stacks: int = 0
    last_stack: str = ""


class HoldJudge:
    """Decides what the watcher says, from the loop's last tick and the clocks it reads."""

    def __init__(self, hold_s: float = HOLD_S) -> None:
        self.hold_s = hold_s
        self.hold: Hold | None = None
        self._next_stack_at = 0.0

    def look(self, now: float, tick: float, cpu_at_tick: float) -> bool:
        """The watcher looks at `now`, the loop having last ticked at `tick`: whether to take its stack now."""
        if now - tick < self.hold_s:
            return False
        if self.hold is None or self.hold.since != tick:
            self.hold = Hold(tick, cpu_at_tick)
            self._next_stack_at = tick + self.hold_s
        if now >= self._next_stack_at and self.hold.stacks < MAX_STACKS:
            self._next_stack_at = now + self.hold_s
            return True
        return False

    def stack_taken(self, stack: str) -> bool:
        """A stack of this hold was taken: whether it is worth a line (not the same as the last logged)."""
        assert self.hold is not None
        if stack == self.hold.last_stack:
            return False
        self.hold.stacks += 1
        self.hold.last_stack = stack
        return True

    def ended(self, tick: float, cpu: float) -> tuple[float, float] | None:
        """The loop ticked again at `tick`: the hold that ended, as (held seconds, CPU seconds), if there was one."""
        hold, self.hold = self.hold, None
        if hold is None or tick <= hold.since:
            self.hold = hold
            return None
        return tick - hold.since, cpu - hold.cpu_since


class LoopWatch:
    """The loop's tick (a timer on the loop) and the thread that watches it."""

    def __init__(self, hold_s: float = HOLD_S, tick_s: float = TICK_S) -> None:
        self.judge = HoldJudge(hold_s)
        self.tick_s = tick_s
        self._tick = time.monotonic()
        self._cpu = time.process_time()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._loop_thread = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start ticking on the running loop and watching it from a daemon thread."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._on_tick()
        self._thread = threading.Thread(target=self._watch, name="loop-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * self.tick_s + 1)

    def _on_tick(self) -> None:
        tick, cpu = time.monotonic(), time.process_time()
        # the watcher reads _tick and _cpu without a lock: a stale pair only delays its verdict by a tick
        self._tick, self._cpu = tick, cpu
        assert self._loop is not None
        self._handle = self._loop.call_later(self.tick_s, self._on_tick)

    def _watch(self) -> None:
        judge = self.judge
        while True:
            slept_from, cpu_from = time.monotonic(), time.process_time()
            if self._stop.wait(self.tick_s):
                return
            now = time.monotonic()
            late = now - slept_from - self.tick_s
            if late >= judge.hold_s:
                self._woke_late(late, time.process_time() - cpu_from)
            tick, cpu = self._tick, self._cpu
            ended = judge.ended(tick, cpu) if judge.hold is not None else None
            if ended is not None:
                held, used = ended
                log.warning(HELD_UP + " %d ms; the process used %d ms of CPU meanwhile (%s)", held * 1000,
                            used * 1000, "mq's own work" if used >= held / 2 else "waiting, not computing")
            if judge.look(now, tick, cpu):
                self._log_stack(now - tick)

    @staticmethod
    def _woke_late(late: float, used: float) -> None:
        """The watching thread woke `late` seconds after it should have, the process having used `used` seconds of
        CPU meanwhile: computing, the interpreter was held (C code keeping the GIL: a large JSON, a big copy), so
        the stack comes when it lets go; not computing, the process was not run (an overloaded machine, SIGSTOP)."""
        if used >= late / 2:
            log.warning("the watching thread woke %d ms late while the process computed %d ms: the interpreter "
                        "was held by code that keeps the GIL", late * 1000, used * 1000)
        else:
            log.warning(NOT_SCHEDULED + " %d ms (the watching thread woke that late, the process "
                        "computing %d ms of it): the machine is overloaded, the process was paused, or it waited on "
                        "the disk with the interpreter held", late * 1000, used * 1000)

    def _log_stack(self, held_s: float) -> None:
        frame = sys._current_frames().get(self._loop_thread)  # the one way to see another thread's stack
        if frame is None:
            return
        stack = "".join(traceback.format_list(traceback.extract_stack(frame, limit=STACK_FRAMES)))
        if self.judge.stack_taken(stack):
            log.warning("event loop not turned for %d ms so far, at:\n%s", held_s * 1000, stack.rstrip())
