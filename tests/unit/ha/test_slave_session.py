"""The HA slave session as a sans-IO state machine: master bytes in (built with the protocol's own encoders),
a fake clock, a fake store; reports, store writes and close decisions out. Every entry of both transition
tables is driven, and every driver event a state does not take raises."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from mqtools.server.ha.autoswitch_client import AutoSwitchHAClient
from mqtools.server.ha.autoswitch_protocol import (
    SlaveHandshake,
    encode_master_handshake,
    encode_slave_handshake,
    encode_slave_report,
    encode_transfer_header,
)
from mqtools.server.ha.epoch_file import EpochEntry, EpochFileCache
from mqtools.server.ha.protocol import HAProtocolError, OffsetMismatch, encode_header, encode_report
from mqtools.server.ha.slave import HAClient, Pump
from mqtools.server.ha.slave_session import (
    AUTOSWITCH_TRANSITIONS,
    CLASSIC_TRANSITIONS,
    HANDSHAKE_TIMEOUT_S,
    Action,
    AutoSwitchSlaveSession,
    Event,
    IllegalTransition,
    SessionTimeout,
    SlaveSession,
    State,
)

READY, HANDSHAKE, TRANSFER, SUSPEND = State.READY, State.HANDSHAKE, State.TRANSFER, State.SUSPEND
T0 = 1000.0


class FakeStore:
    """A commitlog in memory: appends only at its end (anywhere while empty), truncation returns the cut."""

    def __init__(self, base: int = 0, data: bytes = b"", refuse: bool = False) -> None:
        self.base, self.log, self.refuse = base, bytearray(data), refuse
        self.truncations: list[int] = []
        #: What `seen()` returned at each dispatch_appended (the pump test: the bytes written by then).
        self.dispatches: list[object] = []
        self.seen: Callable[[], object] = lambda: self.max_phy_offset

    @property
    def max_phy_offset(self) -> int:
        return self.base + len(self.log)

    def append_to_commit_log(self, start_offset: int, data: bytes) -> bool:
        if self.refuse:
            return False
        if not self.log:
            self.base = start_offset
        assert start_offset == self.max_phy_offset
        self.log += data
        return True

    def dispatch_appended(self) -> None:
        self.dispatches.append(self.seen())

    def truncate_commit_log(self, offset: int) -> int:
        cut = self.max_phy_offset - offset
        del self.log[offset - self.base:]
        self.truncations.append(offset)
        return cut


def frame(offset: int, body: bytes = b"") -> bytes:
    return encode_header(offset, len(body)) + body


def transfer(offset: int, body: bytes = b"", epoch: int = 1, start: int = 0, confirm: int = 0) -> bytes:
    return encode_transfer_header(offset, len(body), epoch, start, confirm) + body


def classic(store: FakeStore | None = None) -> SlaveSession:
    return SlaveSession(store or FakeStore(), report_interval=5.0, housekeeping_interval=20.0)


def autoswitch(store: FakeStore | None = None, epochs: list[tuple[int, int]] | None = None) -> AutoSwitchSlaveSession:
    return AutoSwitchSlaveSession(store or FakeStore(), EpochFileCache(None, epochs), 7,
                                  report_interval=5.0, housekeeping_interval=20.0)


# ------------------------------------------------------------------ classic


def test_classic_connect_reports_at_once_without_a_handshake():
    s = classic(FakeStore(4096, b"x" * 10))
    out = s.connected(T0)
    assert s.state is TRANSFER
    assert out.send == encode_report(4106) and out.error is None
    assert s.next_deadline() == T0 + 5.0  # the report interval comes before housekeeping


def test_classic_frame_is_appended_then_reported_even_split_anywhere():
    store = FakeStore()
    s = classic(store)
    s.connected(T0)
    stream = frame(1024, b"abc") + frame(1027, b"defg")
    first = s.data_received(stream[:5], T0 + 1)
    assert first.send == b"" and first.appended == 0  # half a header: nothing yet
    out = s.data_received(stream[5:], T0 + 1)
    assert bytes(store.log) == b"abcdefg" and store.base == 1024  # an empty slave takes the master's start
    assert out.appended == 7 and out.send == encode_report(1031)  # one report for the whole read


def test_classic_heartbeat_reports_only_when_the_interval_passed():
    s = classic(FakeStore(0, b"abc"))
    s.connected(T0)
    assert s.data_received(frame(3), T0 + 1).send == b""
    assert s.tick(T0 + 4.9).send == b""
    assert s.tick(T0 + 5.0).send == encode_report(3)
    assert s.next_deadline() == T0 + 10.0
    assert s.data_received(frame(3), T0 + 11).send == encode_report(3)  # a read past the interval reports too


def test_classic_frame_at_the_wrong_offset_closes_and_counts_a_mismatch():
    store = FakeStore(0, b"abc")
    s = classic(store)
    s.connected(T0)
    out = s.data_received(frame(3, b"ok") + frame(99, b"zz") + frame(5, b"never"), T0 + 1)
    assert isinstance(out.error, OffsetMismatch) and "99" in str(out.error)
    assert s.mismatches == 1 and s.state is SUSPEND
    assert out.send == b"" and bytes(store.log) == b"abcok"  # nothing more goes out, nothing past the bad frame
    assert s.next_deadline() is None
    s.closed("closed by the driver")
    assert s.state is READY and s.close_reason == str(out.error)  # the session's own reason is kept
    assert s.connected(T0 + 10).send == encode_report(5)  # the next connection reports the real offset


def test_classic_store_refusal_and_garbage_close():
    s = classic(FakeStore(refuse=True))
    s.connected(T0)
    out = s.data_received(frame(0, b"abc"), T0)
    assert type(out.error) is HAProtocolError and "refused" in str(out.error) and s.mismatches == 0
    s = classic()
    s.connected(T0)
    out = s.data_received(encode_header(-5, 3), T0)
    assert "bad transfer header" in str(out.error) and s.state is SUSPEND


def test_classic_housekeeping_timeout_closes_and_reads_reset_it():
    s = classic()
    s.connected(T0)
    s.data_received(frame(0), T0 + 15)
    assert s.tick(T0 + 34.9).error is None  # 19.9 s after the last read
    out = s.tick(T0 + 35)
    assert isinstance(out.error, SessionTimeout) and "20.0s" in str(out.error)
    assert s.state is SUSPEND and out.send == b""


def test_a_session_is_reused_across_connections():
    s = classic()
    s.connected(T0)
    s.data_received(frame(0, b"ab")[:7], T0)  # half a frame when the socket dies
    s.closed("connection reset")
    assert s.state is READY and s.close_reason == "connection reset"
    assert s.tick(T0 + 100).send == b"" and s.next_deadline() is None
    s.connected(T0 + 100)
    assert s.data_received(frame(0, b"cd"), T0 + 100).send == encode_report(2)  # the stale half is gone


# ------------------------------------------------------------------ AutoSwitch


def test_autoswitch_connect_sends_the_handshake_and_waits_for_the_answer():
    s = autoswitch(FakeStore(0, b"abc"))
    out = s.connected(T0)
    assert out.send == encode_slave_handshake(SlaveHandshake(7)) and s.state is HANDSHAKE
    assert s.next_deadline() == T0 + HANDSHAKE_TIMEOUT_S
    assert s.tick(T0 + 4).send == b""  # no report before the answer
    out = s.tick(T0 + HANDSHAKE_TIMEOUT_S)
    assert isinstance(out.error, SessionTimeout) and "handshake" in str(out.error) and s.state is SUSPEND


def test_autoswitch_divergent_tail_is_cut_to_the_consistent_point_then_reported():
    store = FakeStore(0, b"a" * 150)
    s = autoswitch(store, [(1, 0), (2, 100)])  # epoch 2 (100..150) was never the master's
    s.connected(T0)
    answer = encode_master_handshake(200, [EpochEntry(1, 0), EpochEntry(3, 120)])
    out = s.data_received(answer, T0 + 1)
    assert store.truncations == [100] and store.max_phy_offset == 100 and s.truncated_bytes == 50
    assert s.epochs.entries() == [EpochEntry(1, 0)]
    assert s.state is TRANSFER and out.send == encode_slave_report(100)
    out = s.data_received(transfer(100, b"b" * 20, epoch=1, start=0, confirm=90)
                          + transfer(120, b"c" * 5, epoch=3, start=120, confirm=110), T0 + 2)
    assert out.send == encode_slave_report(125) and out.appended == 25
    assert [(e.epoch, e.start_offset) for e in s.epochs.entries()] == [(1, 0), (3, 120)]
    assert s.master_confirm_offset == 110


def test_autoswitch_answer_and_frames_in_one_read_report_twice():
    store = FakeStore(0, b"a" * 10)
    s = autoswitch(store, [(1, 0)])
    s.connected(T0)
    out = s.data_received(encode_master_handshake(13, [EpochEntry(1, 0)]) + transfer(10, b"xyz"), T0)
    assert store.truncations == [] and out.send == encode_slave_report(10) + encode_slave_report(13)


def test_autoswitch_no_epoch_in_common_keeps_only_what_precedes_both_first_epochs():
    store = FakeStore(0, b"a" * 150)
    s = autoswitch(store, [(2, 50)])
    s.connected(T0)
    out = s.data_received(encode_master_handshake(300, [EpochEntry(3, 80)]), T0)
    assert store.truncations == [50] and s.truncated_bytes == 100  # min(80, 50, 150)
    assert s.epochs.entries() == [] and out.send == encode_slave_report(50)
    store = FakeStore(0, b"a" * 30)
    s = autoswitch(store, [(2, 10)])
    s.connected(T0)
    out = s.data_received(encode_master_handshake(25, []), T0)  # a master without epochs: its max offset
    assert store.truncations == [10] and out.send == encode_slave_report(10)


def test_autoswitch_without_local_epochs_keeps_the_log():
    store = FakeStore(0, b"a" * 40)
    s = autoswitch(store)
    s.connected(T0)
    out = s.data_received(encode_master_handshake(300, [EpochEntry(3, 80)]), T0)
    assert store.truncations == [] and s.truncated_bytes == 0 and out.send == encode_slave_report(40)


def test_autoswitch_second_handshake_in_transfer_is_a_protocol_error():
    s = autoswitch()
    s.connected(T0)
    s.data_received(encode_master_handshake(0, [EpochEntry(1, 0)]), T0)
    out = s.data_received(encode_master_handshake(0, [EpochEntry(1, 0)]), T0 + 1)
    assert type(out.error) is HAProtocolError and "handshake answer in state TRANSFER" in str(out.error)
    assert s.state is SUSPEND and out.send == b""


def test_autoswitch_frame_before_the_answer_closes_and_mismatches_count():
    s = autoswitch()
    s.connected(T0)
    out = s.data_received(transfer(0, b"x"), T0)
    assert "transfer frame in state HANDSHAKE" in str(out.error) and s.state is SUSPEND
    s = autoswitch(FakeStore(0, b"abc"))
    s.connected(T0)
    s.data_received(encode_master_handshake(3, [EpochEntry(1, 0)]), T0)
    out = s.data_received(transfer(7, b"x"), T0)
    assert isinstance(out.error, OffsetMismatch) and s.mismatches == 1


# ------------------------------------------------------------------ the tables


def recording(flavour: str) -> SlaveSession:
    """A session of either flavour that records each (state, event) its machine fires, nested ones too."""
    s = classic() if flavour == "classic" else autoswitch(epochs=[(1, 0)])
    fired: list[tuple[State, Event]] = []
    inner = s._fire

    def fire(event: Event, arg: object, now: float) -> None:
        fired.append((s.state, event))
        inner(event, arg, now)

    s._fire = fire  # type: ignore[method-assign]
    s.fired = fired  # type: ignore[attr-defined]
    return s


def _reach(s: SlaveSession, state: State) -> None:
    if state is READY:
        return
    s.connected(T0)
    if state is TRANSFER and s.transitions is AUTOSWITCH_TRANSITIONS:
        s.data_received(encode_master_handshake(0, [EpochEntry(1, 0)]), T0)
    if state is SUSPEND:
        s.tick(T0 + 60)
    assert s.state is state


_EVENTS: dict[Event, Callable[[SlaveSession, bool], object]] = {
    Event.CONNECTED: lambda s, c: s.connected(T0),
    Event.DATA: lambda s, c: s.data_received(b"\x00", T0),  # a partial header
    Event.HANDSHAKE_ANSWER: lambda s, c: s.data_received(encode_master_handshake(0, [EpochEntry(1, 0)]), T0),
    Event.FRAME: lambda s, c: s.data_received(frame(0) if c else transfer(0), T0),
    Event.TICK: lambda s, c: s.tick(T0 + 1),
    Event.EXPIRED: lambda s, c: s.tick(T0 + 60),
    Event.PEER_ERROR: lambda s, c: s.data_received(encode_header(-1, -1) if c else b"\x00\x00\x00\x09", T0),
    Event.CLOSED: lambda s, c: s.closed("reset"),
}
_ALL = [("classic", k) for k in CLASSIC_TRANSITIONS] + [("autoswitch", k) for k in AUTOSWITCH_TRANSITIONS]


@pytest.mark.parametrize(("flavour", "key"), _ALL, ids=[f"{f}-{k[0].name}-{k[1].name}" for f, k in _ALL])
def test_every_transition(flavour: str, key: tuple[State, Event]):
    table = CLASSIC_TRANSITIONS if flavour == "classic" else AUTOSWITCH_TRANSITIONS
    s = recording(flavour)
    state, event = key
    _reach(s, state)
    out = _EVENTS[event](s, flavour == "classic")
    assert s.fired[-1] == key  # type: ignore[attr-defined] and s.state is table[key].target
    closing = table[key].action in (Action.CLOSE, Action.REJECT)
    assert (getattr(out, "error", None) is not None) == closing


def test_classic_is_autoswitch_without_the_handshake():
    assert not any(HANDSHAKE in (k[0], v.target) for k, v in CLASSIC_TRANSITIONS.items())
    added = {k: v for k, v in AUTOSWITCH_TRANSITIONS.items() if k not in CLASSIC_TRANSITIONS}
    assert all(HANDSHAKE in (k[0], v.target) or k[1] is Event.HANDSHAKE_ANSWER for k, v in added.items())
    assert {k for k, v in CLASSIC_TRANSITIONS.items() if AUTOSWITCH_TRANSITIONS[k] != v} == {(READY, Event.CONNECTED)}
    used = {step.action for table in (CLASSIC_TRANSITIONS, AUTOSWITCH_TRANSITIONS) for step in table.values()}
    assert used == set(Action)  # no action is dead code


_DRIVER_EVENTS = (Event.CONNECTED, Event.DATA, Event.TICK, Event.CLOSED)
_ILLEGAL = [(f, st, ev) for f, table in (("classic", CLASSIC_TRANSITIONS), ("autoswitch", AUTOSWITCH_TRANSITIONS))
            for st in ((READY, TRANSFER, SUSPEND) if f == "classic" else (READY, HANDSHAKE, TRANSFER, SUSPEND))
            for ev in _DRIVER_EVENTS if (st, ev) not in table]


@pytest.mark.parametrize(("flavour", "state", "event"), _ILLEGAL,
                         ids=[f"{f}-{s.name}-{e.name}" for f, s, e in _ILLEGAL])
def test_a_driver_event_the_state_does_not_take_raises(flavour: str, state: State, event: Event):
    s = recording(flavour)
    _reach(s, state)
    with pytest.raises(IllegalTransition, match=f"not allowed in state {state.name}"):
        _EVENTS[event](s, flavour == "classic")
    assert s.state is state


def test_illegal_list_is_what_a_driver_could_get_wrong():
    assert {(f, s, e) for f, s, e in _ILLEGAL if f == "autoswitch"} == {
        ("autoswitch", READY, Event.DATA), ("autoswitch", READY, Event.CLOSED),
        ("autoswitch", HANDSHAKE, Event.CONNECTED), ("autoswitch", TRANSFER, Event.CONNECTED),
        ("autoswitch", SUSPEND, Event.CONNECTED), ("autoswitch", SUSPEND, Event.DATA)}


# ------------------------------------------------------------------ the byte pump


class FakeTransport:
    """What the pump writes to, in place of the socket's transport."""

    def __init__(self) -> None:
        self.sent = bytearray()
        self.closed = False

    def write(self, data: bytes) -> None:
        self.sent += data

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> None:
        return None


def _pumped(client: HAClient) -> tuple[list[Pump], FakeTransport]:
    """The client's next connection is a FakeTransport; the list gets its Pump, which the test feeds."""
    pumps: list[Pump] = []
    transport = FakeTransport()

    async def connect(address: str) -> tuple[FakeTransport, Pump]:
        client.connected, client.sessions = True, client.sessions + 1
        pump = Pump(client)
        pump.connection_made(transport)  # type: ignore[arg-type]
        pumps.append(pump)
        return transport, pump

    client._connect = connect  # type: ignore[method-assign, assignment]
    return pumps, transport


async def _first(pumps: list[Pump]) -> Pump:
    for _ in range(500):
        if pumps:
            return pumps[0]
        await asyncio.sleep(0.01)
    raise AssertionError("the client never connected")


async def test_pump_feeds_the_session_writes_its_reports_and_ticks_at_its_deadline():
    store = FakeStore()
    client = HAClient(store, "127.0.0.1:1", report_interval=0.05, housekeeping_interval=5.0)
    pumps, writer = _pumped(client)
    store.seen = lambda: bytes(writer.sent)
    task = asyncio.create_task(client._session("127.0.0.1:1"))
    pump = await _first(pumps)
    pump.data_received(frame(0, b"abc"))
    for _ in range(200):
        await asyncio.sleep(0.01)
        if len(writer.sent) >= 24:
            break
    assert bytes(writer.sent[:16]) == encode_report(0) + encode_report(3)
    # the append was dispatched once, after its report was written (a SYNC_MASTER's producers wait for the report)
    assert store.dispatches == [encode_report(0) + encode_report(3)]
    assert bytes(writer.sent[16:24]) == encode_report(3)  # the interval's report, from a tick
    assert client.speed.total == 3 and client.last_read_ms > 0 and client.last_write_ms > 0
    pump.eof_received()
    with pytest.raises(HAProtocolError, match="master closed"):
        await task
    assert writer.closed and client.session.state is READY and client.session.close_reason == "master closed the connection"


async def test_pump_closes_on_the_sessions_decision_and_autoswitch_shares_it():
    store = FakeStore(0, b"abc")
    client = AutoSwitchHAClient(store, EpochFileCache(None, [(1, 0)]), 4)
    pumps, writer = _pumped(client)
    task = asyncio.create_task(client._session("127.0.0.1:1"))
    (await _first(pumps)).data_received(encode_master_handshake(3, [EpochEntry(1, 0)]) + transfer(9, b"x"))
    with pytest.raises(OffsetMismatch):
        await asyncio.wait_for(task, 5)
    assert bytes(writer.sent) == encode_slave_handshake(SlaveHandshake(4))  # the report was dropped: it gave up
    assert client.mismatches == 1 and client.broker_id == 4 and client.truncated_bytes == 0
    assert client.session.state is READY and writer.closed


async def test_a_store_failure_inside_the_pumps_callback_ends_the_session_with_it():
    """The pump runs the session in the transport's data callback: an append that raises (a full disk) must end
    this connection through the client's session, not vanish into the loop's exception handler."""
    store = FakeStore()

    def broken(start_offset: int, data: bytes) -> bool:
        raise OSError(28, "No space left on device")

    store.append_to_commit_log = broken  # type: ignore[method-assign]
    client = HAClient(store, "127.0.0.1:1", housekeeping_interval=5.0)
    pumps, writer = _pumped(client)
    task = asyncio.create_task(client._session("127.0.0.1:1"))
    (await _first(pumps)).data_received(frame(0, b"abc"))
    with pytest.raises(OSError, match="No space left"):
        await asyncio.wait_for(task, 5)
    assert writer.closed and client.session.state is READY and "No space left" in client.session.close_reason
    assert store.dispatches == []


@pytest.mark.parametrize("settle_first", [False, True])
async def test_shutdown_ends_the_client_even_as_its_master_goes(settle_first: bool):
    """A controller-mode slave elected master stops its client right as the old master's connection ends: the
    stop must end the client's task, not be taken for the connection's end and followed by a reconnect (the
    promotion waits for it)."""
    client = HAClient(FakeStore(), "127.0.0.1:1", housekeeping_interval=5.0, reconnect_interval=0.01)
    pumps, _ = _pumped(client)
    client.start()
    pump = await _first(pumps)
    await asyncio.sleep(0)  # the session waits on the pump
    pump.eof_received()
    if settle_first:
        await asyncio.sleep(0)
    await asyncio.wait_for(client.shutdown(), 2)
    assert client._task is not None and client._task.done()
    assert len(pumps) == 1  # no reconnect after the stop
