"""Sans-IO slave session of HA replication (RocketMQ's HAClient / AutoSwitchHAClient state machine).

One object per HA client holds the whole session: its state (RocketMQ's HAConnectionState: READY,
HANDSHAKE, TRANSFER, SUSPEND), the decoder of the master's stream, when to report and when the master
has been silent too long. The driver (slave.py's byte pump) feeds it four events - `connected(now)`,
`data_received(data, now)`, `tick(now)`, `closed(reason)` - and does what each returned `Output` says:
send its bytes, close the connection when it carries an error, sleep at most until `next_deadline()`.
The store is written through the sink passed in (appends, truncation, epoch entries), synchronously, as
the asyncio loops did. Clocks are passed in, never read, so every path is testable without sockets.

Which event is allowed in which state, where it leads and what it does is data: `CLASSIC_TRANSITIONS`;
`AUTOSWITCH_TRANSITIONS` adds the handshake. An event missing from the table raises `IllegalTransition`
(a driver bug); a master message the state forbids is in the table and closes the connection.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from mqtools.server.ha.autoswitch_protocol import (
    HAConnectionState,
    MasterHandshake,
    MasterStreamReader,
    SlaveHandshake,
    Transfer,
    encode_slave_handshake,
    encode_slave_report,
)
from mqtools.server.ha.epoch_file import EpochFileCache
from mqtools.server.ha.protocol import (
    Frame,
    FrameReader,
    HAProtocolError,
    OffsetMismatch,
    ReportSchedule,
    check_frame,
    encode_report,
)

log = logging.getLogger("mq.ha.slave")

#: How long a slave waits for the master's handshake answer before it tries again.
HANDSHAKE_TIMEOUT_S = 5.0

State = HAConnectionState
READY, HANDSHAKE, TRANSFER, SUSPEND = State.READY, State.HANDSHAKE, State.TRANSFER, State.SUSPEND


class CommitLogSink(Protocol):
    """What a classic slave needs from the store (the store facade's HA part)."""

    @property
    def max_phy_offset(self) -> int: ...

    def append_to_commit_log(self, start_offset: int, data: bytes) -> bool: ...

    def dispatch_appended(self) -> None:
        """Build the consume queues and index of what was appended: the driver calls it once the report of the
        new offset is written, so a SYNC_MASTER's producers do not wait for this slave's dispatch."""


class TruncatableSink(CommitLogSink, Protocol):
    """An AutoSwitch slave also cuts a divergent tail off its log."""

    def truncate_commit_log(self, offset: int) -> int: ...


class IllegalTransition(RuntimeError):
    """The driver gave an event the current state does not take (a bug in the driver, not the master)."""


class SessionTimeout(HAProtocolError):
    """The master said nothing for the housekeeping interval (or the handshake timeout)."""


class Event(enum.Enum):
    """What happens to a session: the driver's four calls, and what they turn into."""

    CONNECTED = "connected"
    DATA = "data received"
    HANDSHAKE_ANSWER = "handshake answer"  # decoded from DATA
    FRAME = "transfer frame"  # decoded from DATA
    TICK = "tick"
    EXPIRED = "deadline expired"  # a TICK past the state's timeout
    PEER_ERROR = "peer error"  # bytes the protocol forbids, a frame at the wrong offset, a refused append
    CLOSED = "closed"


class Action(enum.Enum):
    """What a transition does (each is one method of the session)."""

    START_TRANSFER = "report the own offset at once"
    SEND_HANDSHAKE = "say who this slave is"
    DECODE = "decode, take each message, report growth"
    RECONCILE = "cut the log back to the consistent point, then start the transfer"
    APPEND = "check the frame's offset, append its body"
    REPORT_IF_DUE = "report when the interval passed or the log grew"
    CLOSE = "close, saying why"
    REJECT = "close: the master sent what this state forbids"
    RESET = "forget the connection's buffers and timers"
    NOTHING = "nothing to do"


class Step(NamedTuple):
    target: State
    action: Action


Transitions = dict[tuple[State, Event], Step]

#: Classic HA: no handshake, the first report goes out as soon as the connection is up.
CLASSIC_TRANSITIONS: Transitions = {
    (READY, Event.CONNECTED): Step(TRANSFER, Action.START_TRANSFER),
    (READY, Event.TICK): Step(READY, Action.NOTHING),
    (TRANSFER, Event.DATA): Step(TRANSFER, Action.DECODE),
    (TRANSFER, Event.FRAME): Step(TRANSFER, Action.APPEND),
    (TRANSFER, Event.TICK): Step(TRANSFER, Action.REPORT_IF_DUE),
    (TRANSFER, Event.EXPIRED): Step(SUSPEND, Action.CLOSE),
    (TRANSFER, Event.PEER_ERROR): Step(SUSPEND, Action.CLOSE),
    (TRANSFER, Event.CLOSED): Step(READY, Action.RESET),
    (SUSPEND, Event.TICK): Step(SUSPEND, Action.NOTHING),
    (SUSPEND, Event.CLOSED): Step(READY, Action.RESET),
}

#: AutoSwitch HA: the handshake (broker id out, the master's epochs in) comes between connect and transfer.
AUTOSWITCH_TRANSITIONS: Transitions = {
    **CLASSIC_TRANSITIONS,
    (READY, Event.CONNECTED): Step(HANDSHAKE, Action.SEND_HANDSHAKE),
    (HANDSHAKE, Event.DATA): Step(HANDSHAKE, Action.DECODE),
    (HANDSHAKE, Event.HANDSHAKE_ANSWER): Step(TRANSFER, Action.RECONCILE),
    (HANDSHAKE, Event.FRAME): Step(SUSPEND, Action.REJECT),
    (HANDSHAKE, Event.TICK): Step(HANDSHAKE, Action.NOTHING),
    (HANDSHAKE, Event.EXPIRED): Step(SUSPEND, Action.CLOSE),
    (HANDSHAKE, Event.PEER_ERROR): Step(SUSPEND, Action.CLOSE),
    (HANDSHAKE, Event.CLOSED): Step(READY, Action.RESET),
    (TRANSFER, Event.HANDSHAKE_ANSWER): Step(SUSPEND, Action.REJECT),
}


@dataclass(frozen=True, slots=True)
class Output:
    """What the driver must do after one event."""

    send: bytes = b""
    """Bytes for the master, in order (reports, the handshake)."""
    error: HAProtocolError | None = None
    """Set: close the connection now, for this reason (then call `closed`)."""
    appended: int = 0
    """Commitlog bytes appended (the driver's transfer-speed meter)."""


class SlaveSession:
    """Classic HA's slave session; one per client, reused across connections (READY between them)."""

    transitions: Transitions = CLASSIC_TRANSITIONS

    def __init__(self, sink: CommitLogSink, *, report_interval: float = 5.0,
                 housekeeping_interval: float = 20.0) -> None:
        self._sink = sink
        self.report_interval = report_interval
        self.housekeeping_interval = housekeeping_interval
        self.state: State = READY
        #: Frames that did not start at the own max offset (each closed the connection).
        self.mismatches = 0
        #: Why the last connection ended (as the driver said, or this session decided).
        self.close_reason = ""
        self._reader = self._new_reader()
        self._schedule = ReportSchedule(report_interval)
        self._last_read = 0.0
        self._out = bytearray()
        self._error: HAProtocolError | None = None
        self._appended = 0
        self._came_from: State = READY
        self._handlers: dict[Action, Callable[[Event, Any, float], None]] = {
            Action.START_TRANSFER: self._start_transfer, Action.SEND_HANDSHAKE: self._send_handshake,
            Action.DECODE: self._decode, Action.RECONCILE: self._reconcile, Action.APPEND: self._append,
            Action.REPORT_IF_DUE: self._report_if_due, Action.CLOSE: self._close, Action.REJECT: self._reject,
            Action.RESET: self._reset, Action.NOTHING: self._nothing,
        }

    # ------------------------------------------------------------------ the driver's events

    def connected(self, now: float) -> Output:
        return self._run(Event.CONNECTED, None, now)

    def data_received(self, data: bytes, now: float) -> Output:
        return self._run(Event.DATA, data, now)

    def tick(self, now: float) -> Output:
        """Timers: the state's timeout first (housekeeping, handshake), else the periodic report."""
        timeout = self._timeout()
        if timeout is not None and now - self._last_read >= timeout:
            what = "the handshake answer" if self.state is HANDSHAKE else "anything"
            return self._run(Event.EXPIRED, SessionTimeout(f"no {what} from the master for {timeout}s"), now)
        return self._run(Event.TICK, None, now)

    def closed(self, reason: str) -> Output:
        """The connection is gone (the master closed it, the socket failed, or the driver closed it)."""
        return self._run(Event.CLOSED, reason, self._last_read)

    def next_deadline(self) -> float | None:
        """When `tick` has something to do (on the clock passed in); None: nothing until the next event."""
        timeout = self._timeout()
        if timeout is None:
            return None
        deadline = self._last_read + timeout
        if self.state is TRANSFER:
            deadline = min(deadline, self._schedule.last_report_time + self.report_interval)
        return deadline

    def _timeout(self) -> float | None:
        return {HANDSHAKE: HANDSHAKE_TIMEOUT_S, TRANSFER: self.housekeeping_interval}.get(self.state)

    # ------------------------------------------------------------------ the machine

    def _run(self, event: Event, arg: Any, now: float) -> Output:
        self._fire(event, arg, now)
        out = Output(bytes(self._out), self._error, self._appended)
        self._out.clear()
        self._error, self._appended = None, 0
        return out

    def _fire(self, event: Event, arg: Any, now: float) -> None:
        step = self.transitions.get((self.state, event))
        if step is None:
            raise IllegalTransition(f"{event.value} is not allowed in state {self.state.name}")
        self._came_from, self.state = self.state, step.target
        try:
            self._handlers[step.action](event, arg, now)
        except HAProtocolError as exc:
            self._fire(Event.PEER_ERROR, exc, now)

    # ------------------------------------------------------------------ actions

    def _nothing(self, event: Event, arg: Any, now: float) -> None:
        """A tick with no timer due, or outside a connection."""

    def _start_transfer(self, event: Event, arg: Any, now: float) -> None:
        self._schedule = ReportSchedule(self.report_interval)
        self._last_read = now
        self._report(now)

    def _send_handshake(self, event: Event, arg: Any, now: float) -> None:
        raise NotImplementedError("classic HA has no handshake")

    def _decode(self, event: Event, data: bytes, now: float) -> None:
        self._last_read = now
        for item in self._reader.feed(data):
            self._fire(Event.HANDSHAKE_ANSWER if isinstance(item, MasterHandshake) else Event.FRAME, item, now)
            if self.state is SUSPEND:
                return
        if self.state is TRANSFER:
            self._report_if_due(event, None, now)

    def _reconcile(self, event: Event, answer: MasterHandshake, now: float) -> None:
        raise NotImplementedError("classic HA has no handshake")

    def _append(self, event: Event, frame: Frame, now: float) -> None:
        own = self._sink.max_phy_offset
        self._check_offset(own, frame)
        self._store(own, frame.from_offset, frame.body)

    def _report_if_due(self, event: Event, arg: Any, now: float) -> None:
        """After each growth of the log (appends), and every report interval anyway."""
        if self._schedule.due(self._sink.max_phy_offset, now):
            self._report(now)

    def _close(self, event: Event, error: HAProtocolError, now: float) -> None:
        """Nothing more goes out on a connection this session gave up."""
        self._out.clear()
        self._error = error
        self.close_reason = str(error)

    def _reject(self, event: Event, arg: Any, now: float) -> None:
        self._close(event, HAProtocolError(f"the master sent a {event.value} in state {self._came_from.name}"), now)

    def _reset(self, event: Event, reason: str, now: float) -> None:
        self._reader = self._new_reader()
        self._schedule = ReportSchedule(self.report_interval)
        self._out.clear()
        self.close_reason = self.close_reason if self._came_from is SUSPEND else reason

    # ------------------------------------------------------------------ helpers (what the flavours differ in)

    def _new_reader(self) -> FrameReader | MasterStreamReader:
        return FrameReader()

    def _encode_report(self, offset: int) -> bytes:
        return encode_report(offset)

    def _report(self, now: float) -> None:
        offset = self._sink.max_phy_offset
        self._out += self._encode_report(offset)
        self._schedule.reported(offset, now)

    def _check_offset(self, own: int, frame: Frame) -> None:
        """Classic HA's check (heartbeats too); a mismatch is counted, then closes the connection."""
        try:
            check_frame(own, frame)
        except OffsetMismatch:
            self.mismatches += 1
            raise

    def _store(self, own: int, offset: int, body: bytes) -> None:
        if body:
            if not self._sink.append_to_commit_log(offset, body):
                raise HAProtocolError(f"store refused {len(body)} bytes at {offset} (own max {own})")
            self._appended += len(body)


class AutoSwitchSlaveSession(SlaveSession):
    """Controller mode's slave session: the handshake with this slave's broker id, the master's epochs and
    the cut back to the consistent point, then frames labelled with epochs and the master's confirm offset.
    Unlike Apache's client, which first reports after its 5 s heartbeat interval, it reports as soon as the
    handshake is done, so a rejoining slave streams at once."""

    transitions: Transitions = AUTOSWITCH_TRANSITIONS

    def __init__(self, sink: TruncatableSink, epochs: EpochFileCache, broker_id: int, *,
                 sync_from_last_file: bool = False, report_interval: float = 5.0,
                 housekeeping_interval: float = 20.0) -> None:
        super().__init__(sink, report_interval=report_interval, housekeeping_interval=housekeeping_interval)
        self._truncatable = sink
        self.epochs = epochs
        self.broker_id = broker_id
        self.sync_from_last_file = sync_from_last_file
        #: Bytes this slave cut from its own log at handshakes (a divergent tail), in all.
        self.truncated_bytes = 0
        #: The master's confirm offset, as its last frame gave it (-1: none yet).
        self.master_confirm_offset = -1

    def _new_reader(self) -> FrameReader | MasterStreamReader:
        return MasterStreamReader()

    def _encode_report(self, offset: int) -> bytes:
        return encode_slave_report(offset)

    def _send_handshake(self, event: Event, arg: Any, now: float) -> None:
        self._last_read = now
        self._out += encode_slave_handshake(SlaveHandshake(self.broker_id, self.sync_from_last_file))

    def _reconcile(self, event: Event, answer: MasterHandshake, now: float) -> None:
        """Cut the local log back to where it agrees with the master's, then report at once."""
        local_max = self._sink.max_phy_offset
        if not self.epochs.entries():
            log.info("HA handshake: no local epochs, continuing from %d", local_max)
            self._start_transfer(event, None, now)
            return
        point = self.epochs.find_consistent_point(local_max, answer.epochs)
        if point < 0:
            # No epoch in common (a replica elected before it held any of the old epoch's bytes starts its log
            # with its own epoch). The elected master is the authority: only the bytes from before either's
            # first epoch can be shared; everything after came in epochs it does not have. Apache's slave
            # retries the handshake for ever here.
            first = answer.epochs[0].start_offset if answer.epochs else answer.max_offset
            point = min(first, self.epochs.entries()[0].start_offset, local_max)
            log.warning("HA handshake: no epoch in common with the master (local %s, master %s): keeping %d bytes",
                        self.epochs.entries(local_max), answer.epochs, point)
        cut = self._truncatable.truncate_commit_log(point) if point < local_max else 0
        self.truncated_bytes += cut
        self.epochs.truncate_from_offset(point)
        log.log(logging.WARNING if cut else logging.INFO,
                "HA handshake: master max %d epoch %d; local log agrees up to %d, %d bytes past it cut",
                answer.max_offset, answer.last_epoch, point, cut)
        self._start_transfer(event, None, now)

    def _append(self, event: Event, frame: Transfer, now: float) -> None:  # type: ignore[override]
        own = self._sink.max_phy_offset
        self._check_offset(own, Frame(frame.offset, frame.body))
        if frame.epoch > self.epochs.last_epoch:
            self.epochs.append(frame.epoch, frame.epoch_start_offset)
        self.master_confirm_offset = frame.confirm_offset
        self._store(own, frame.offset, frame.body)
