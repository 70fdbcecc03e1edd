"""TimerMessageStore over a real MessageStore in a temp dir, driven step by step with a fake clock."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from unit.store.store_helpers import inner, tiny_config

from mqtools.common import properties as P
from mqtools.common.codec import decode_stored
from mqtools.common.message import MessageExt
from mqtools.server.store.message_store import MessageStore
from mqtools.server.store.timer import timer_logic as L
from mqtools.server.store.timer.timer_checkpoint import TimerCheckpointFile
from mqtools.server.store.timer.timer_message_store import TimerMessageStore

T0 = 1_700_000_000_000  # a whole second, ms
SETTINGS = L.TimerSettings(precision_ms=1000, max_delay_sec=3600)


class Clock:
    def __init__(self) -> None:
        self.ms = T0

    def __call__(self) -> float:
        return self.ms / 1000


async def open_store(root: Path, clock: Clock) -> tuple[MessageStore, TimerMessageStore]:
    cfg = tiny_config(
        root,
        mapped_file_size_commit_log=256 * 1024,
        timer_roll_window_slot=20,
        mapped_file_size_timer_log=52 * 8 + 16,
    )
    store = MessageStore(cfg, clock=clock)
    await store.start()
    timer = TimerMessageStore(store, cfg, clock=clock, slots_total=3600)
    timer.load()
    timer.dequeue_running = True
    timer.maybe_move_write_time()
    return store, timer


async def send(store: MessageStore, clock: Clock, body: bytes, **props: str) -> None:
    msg = inner(topic="Orders", body=body, queue_id=1, **props)
    outcome = L.rewrite_for_timer(msg, clock.ms, SETTINGS)
    assert outcome in (L.Rewrite.REWRITTEN, L.Rewrite.DUE_NOW)
    assert (await store.put_message(msg)).ok


def delivered(store: MessageStore) -> list[MessageExt]:
    out: list[MessageExt] = []
    while len(out) < store.get_max_offset_in_queue("Orders", 1):
        result = store.get_message("test", "Orders", 1, len(out), 1000)
        out += [decode_stored(b) for b in result.buffers]
    return out


async def run(timer: TimerMessageStore) -> None:
    """Enqueue what arrived, then deliver every tick that is over."""
    while await timer.enqueue_once():
        pass
    while await timer.dequeue_once() != -1:
        pass


async def test_delivered_once_its_tick_is_over_never_before(tmp_path: Path) -> None:
    clock = Clock()
    store, timer = await open_store(tmp_path, clock)
    await send(store, clock, b"a", TIMER_DELIVER_MS=str(T0 + 3500), KEYS="k")
    await send(store, clock, b"b", TIMER_DELAY_SEC="2")
    await run(timer)
    assert delivered(store) == [] and timer.congest_num == 2
    assert timer.metrics.count("Orders") == 2
    clock.ms = T0 + 1999
    await run(timer)
    assert delivered(store) == []
    clock.ms = T0 + 2000  # TIMER_DELAY_SEC=2 at T0 is due at T0+2000: filed under T0+1000, a tick over then
    await run(timer)
    assert [m.body for m in delivered(store)] == [b"b"]
    clock.ms = T0 + 3999
    await run(timer)
    assert len(delivered(store)) == 1
    clock.ms = T0 + 4000
    await run(timer)
    out = delivered(store)
    assert [m.body for m in out] == [b"b", b"a"]
    a = out[1]
    assert a.store_timestamp >= int(a.properties[P.TIMER_DELIVER_MS])
    assert a.properties[L.TIMER_OUT_MS] == str(T0 + 3000) and a.properties[P.KEYS] == "k"
    assert a.properties[L.TIMER_ENQUEUE_MS] == str(T0) and a.properties[L.TIMER_DEQUEUE_MS] == str(T0 + 4000)
    assert timer.congest_num == 0 and timer.metrics.count("Orders") == 0
    timer.log.close()
    await store.shutdown()


async def test_already_due_at_enqueue_goes_straight_back(tmp_path: Path) -> None:
    clock = Clock()
    store, timer = await open_store(tmp_path, clock)
    await send(store, clock, b"late", TIMER_DELAY_MS="1500")
    clock.ms = T0 + 10_000  # the wheel was busy: the message reaches it after its time
    timer.maybe_move_write_time()
    assert await timer.enqueue_once() == 1
    (msg,) = delivered(store)
    assert msg.properties[L.TIMER_ENQUEUE_MS] == str(L.NEVER_ENQUEUED) and timer.log.max_offset == 0
    assert msg.body == b"late"  # the wheel files messages read without their bodies; this one went back whole
    assert timer.metrics.count("Orders") == 0
    timer.log.close()
    await store.shutdown()


async def test_long_delays_roll_round_the_window(tmp_path: Path) -> None:
    clock = Clock()
    store, timer = await open_store(tmp_path, clock)  # a window of 20 ticks
    await send(store, clock, b"far", TIMER_DELIVER_MS=str(T0 + 50_500))
    for second in range(1, 51):
        clock.ms = T0 + second * 1000
        await run(timer)
        assert delivered(store) == [], second
    clock.ms = T0 + 51_000
    await run(timer)
    (msg,) = delivered(store)
    assert msg.properties[L.TIMER_ROLL_TIMES] == "2" and msg.body == b"far"
    assert msg.store_timestamp >= T0 + 50_500
    timer.log.close()
    await store.shutdown()


async def test_a_delete_marker_cancels_its_message(tmp_path: Path) -> None:
    clock = Clock()
    store, timer = await open_store(tmp_path, clock)
    await send(store, clock, b"keep", TIMER_DELIVER_MS=str(T0 + 2500), UNIQ_KEY="U1")
    await send(store, clock, b"cancel", TIMER_DELIVER_MS=str(T0 + 2500), UNIQ_KEY="U2")
    await send(
        store, clock, b"", TIMER_DELIVER_MS=str(T0 + 2500), TIMER_DEL_UNIQKEY="Orders+U2", UNIQ_KEY="U3"
    )
    clock.ms = T0 + 3000
    await run(timer)
    assert [m.body for m in delivered(store)] == [b"keep"]
    timer.log.close()
    await store.shutdown()


async def test_recovery_after_a_crash_loses_nothing(tmp_path: Path) -> None:
    clock = Clock()
    store, timer = await open_store(tmp_path, clock)
    for i in range(12):  # more than one 8-record timerlog file
        await send(store, clock, b"m%d" % i, TIMER_DELIVER_MS=str(T0 + 5000 + i * 1000))
    assert await timer.enqueue_once() == 12
    await timer.flush_once()  # a checkpoint ...
    for i in range(12, 15):  # ... then more, and the process dies before the next one
        await send(store, clock, b"m%d" % i, TIMER_DELIVER_MS=str(T0 + 5000 + i * 1000))
    assert await timer.enqueue_once() == 3
    assert timer.checkpoint.value.master_timer_queue_offset == 12
    timer.wheel.close()
    timer.log.close()
    (tmp_path / "timerwheel").unlink()  # even the wheel is lost: the log alone must bring it back
    await store.shutdown()

    clock.ms = T0 + 1000
    store, timer = await open_store(tmp_path, clock)
    assert timer.curr_queue_offset == 12  # the checkpoint's: the last three are taken again
    assert len(timer.log.queue.files) == 2
    clock.ms = T0 + 30_000
    await run(timer)
    bodies = [m.body for m in delivered(store)]
    assert set(bodies) == {b"m%d" % i for i in range(15)}
    for m in delivered(store):
        assert m.store_timestamp >= int(m.properties[P.TIMER_DELIVER_MS])
    timer.log.close()
    await store.shutdown()


async def test_running_service_delivers_and_checkpoints_on_shutdown(tmp_path: Path) -> None:
    """The loops themselves, on the real clock: a message 1 s ahead comes out once its tick is over, and
    shutdown leaves a checkpoint a restart resumes from."""
    cfg = tiny_config(tmp_path, mapped_file_size_commit_log=256 * 1024, timer_flush_interval_ms=100)
    store = MessageStore(cfg)
    await store.start()
    timer = TimerMessageStore(store, cfg, slots_total=3600)
    await timer.start()
    start = int(time.time() * 1000)
    msg = inner(topic="Orders", body=b"live", queue_id=1, TIMER_DELIVER_MS=str(start + 1000))
    assert L.redirect_to_timer(msg, start, SETTINGS) is L.Rewrite.REWRITTEN
    assert (await store.put_message(msg)).ok
    deadline = time.monotonic() + 30
    while not delivered(store):
        assert time.monotonic() < deadline, "the timer message never came out"
        await asyncio.sleep(0.05)
    (out,) = delivered(store)
    assert out.store_timestamp >= start + 1000
    await timer.shutdown()
    cp = TimerCheckpointFile(tmp_path / "config" / "timercheck").value
    assert cp.master_timer_queue_offset == cp.last_timer_queue_offset == 1
    assert cp.last_read_time_ms > int(out.properties[L.TIMER_OUT_MS])
    assert cp.last_timer_log_flush_pos == 52
    # started again, as a broker the controller makes master once more: it carries on from there
    await timer.start()
    assert timer.curr_queue_offset == 1 and timer.log.max_offset == 52
    again = inner(topic="Orders", body=b"again", queue_id=1, TIMER_DELAY_MS="500")
    assert L.redirect_to_timer(again, int(time.time() * 1000), SETTINGS) is L.Rewrite.REWRITTEN
    assert (await store.put_message(again)).ok
    while len(delivered(store)) < 2:
        assert time.monotonic() < deadline + 30, "the second timer message never came out"
        await asyncio.sleep(0.05)
    await timer.shutdown()
    await store.shutdown()


async def test_flow_control_reads_the_slot_only_under_a_limit_that_a_slot_can_reach(tmp_path: Path) -> None:
    """timerCongestNumEachSlot: at Apache's default (Integer.MAX_VALUE) nothing is refused and no slot is read;
    under a limit of 2, a slot of 4 refuses every send and a slot of 4 under a limit of 4 none."""
    clock = Clock()
    store, timer = await open_store(tmp_path, clock)
    for i in range(4):
        await send(store, clock, b"x%d" % i, TIMER_DELIVER_MS=str(T0 + 5000))
    await run(timer)
    slot = T0 + 4000  # due on a whole second: filed under the tick before, as the send path asks
    wheel = timer.wheel
    assert wheel is not None and wheel.get_num(slot) == 4

    class Unread:
        def get_num(self, _time_ms: int) -> int:
            raise AssertionError("the wheel was read")

    timer.wheel = Unread()  # type: ignore[assignment]
    try:
        assert not timer.is_reject(slot)
    finally:
        timer.wheel = wheel
    timer.config.timer_congest_num_each_slot = 2
    assert all(timer.is_reject(slot) for _ in range(50))
    timer.config.timer_congest_num_each_slot = 4
    assert not any(timer.is_reject(slot) for _ in range(50))
    timer.log.close()
    await store.shutdown()


async def test_a_slave_files_up_to_its_master_and_made_master_delivers_from_where_the_master_got(
        tmp_path: Path) -> None:
    """Apache's slave timer: it files what the wheel topic holds up to the master's queue offset and delivers
    nothing; the master's checkpoint moves its read time. Made master, it delivers what the master had filed and
    not delivered, and not what the master had delivered."""
    from mqtools.server.store.timer.timer_checkpoint import DataVersion

    clock = Clock()
    store, timer = await open_store(tmp_path, clock)
    timer.dequeue_running = False  # a slave
    await send(store, clock, b"early", TIMER_DELAY_SEC="2")
    await send(store, clock, b"late", TIMER_DELAY_SEC="5")
    await send(store, clock, b"unfiled", TIMER_DELAY_SEC="6")  # the master had not filed it when it died
    await run(timer)
    assert timer.curr_queue_offset == 0 and delivered(store) == []  # nothing filed before the master says
    await timer.follow_master(T0, 2, DataVersion(0, T0, 1))
    await run(timer)
    assert timer.curr_queue_offset == 2 and timer.congest_num == 2 and delivered(store) == []
    assert timer.metrics.count("Orders") == 0  # a slave's counts are its master's
    # the master's counts of its last sync: stale (it filed or delivered more since)
    timer.follow_master_metrics({"Orders": (3, T0 + 3000)}, {"counter": 7, "stateVersion": 0, "timestamp": T0})
    assert timer.metrics.count("Orders") == 3
    clock.ms = T0 + 3000  # the master delivered "early" (its tick, T0+1000, read): its checkpoint says so
    await timer.follow_master(T0 + 3000, 2, DataVersion(0, T0 + 3000, 2))
    await run(timer)
    assert delivered(store) == [] and timer.congest_num == 1 and timer.curr_read_time_ms == T0 + 3000
    await timer.set_master(True)  # the master died: its wheel counted again, "late" the one pending
    assert timer.metrics.count("Orders") == 1 and timer.congest_num == 1
    clock.ms = T0 + 7000
    await run(timer)
    assert sorted(m.body for m in delivered(store)) == [b"late", b"unfiled"]
    assert timer.congest_num == 0 and timer.metrics.count("Orders") == 0
    timer.log.close()
    await store.shutdown()


async def test_a_slave_does_not_file_what_its_master_has_delivered(tmp_path: Path) -> None:
    """A message whose tick the master has read when the slave gets to it (the slave behind, or new to the timer)
    was delivered there: the slave does not file it, so a new master never counts it or delivers it again."""
    from mqtools.server.store.timer.timer_checkpoint import DataVersion
    from mqtools.server.store.timer.timer_log import UNIT_SIZE

    clock = Clock()
    store, timer = await open_store(tmp_path, clock)
    timer.dequeue_running = False
    await send(store, clock, b"gone", TIMER_DELAY_SEC="2")
    await send(store, clock, b"kept", TIMER_DELAY_SEC="9")
    clock.ms = T0 + 4000
    await timer.follow_master(T0 + 4000, 2, DataVersion(0, T0 + 4000, 1))
    await run(timer)
    assert timer.curr_queue_offset == 2 and timer.congest_num == 1
    assert timer.log.max_offset == UNIT_SIZE  # one record: "kept"
    await timer.set_master(True)
    clock.ms = T0 + 10_000
    await run(timer)
    assert [m.body for m in delivered(store)] == [b"kept"]
    timer.log.close()
    await store.shutdown()


async def send_bad_queue(store: MessageStore, clock: Clock, body: bytes, real_qid: str, **props: str) -> None:
    """A message as one sent straight to the wheel's topic can be: REAL_QID that is no queue."""
    msg = inner(topic="Orders", body=body, queue_id=1, **props)
    assert L.rewrite_for_timer(msg, clock.ms, SETTINGS) is L.Rewrite.REWRITTEN
    msg.properties[P.REAL_QID] = real_qid
    msg.properties_string = P.properties_to_string(msg.properties)
    assert (await store.put_message(msg)).ok


async def test_a_message_that_cannot_be_written_back_is_dropped_and_its_tick_goes_on(tmp_path: Path) -> None:
    """It once raised out of the tick before the read time moved: the tick was read again and again, its earlier
    messages delivered each time, and nothing after it ever."""
    clock = Clock()
    store, timer = await open_store(tmp_path, clock)
    await send(store, clock, b"a", TIMER_DELAY_SEC="2")
    await send_bad_queue(store, clock, b"x", "x", TIMER_DELAY_SEC="2")
    await send_bad_queue(store, clock, b"-", "-1", TIMER_DELAY_SEC="2")
    await send(store, clock, b"b", TIMER_DELAY_SEC="3")
    await run(timer)
    clock.ms = T0 + 3000
    await run(timer)
    await run(timer)
    assert [m.body for m in delivered(store)] == [b"a", b"b"]
    timer.log.close()
    await store.shutdown()


async def test_one_already_due_is_dropped_at_enqueue_and_the_wheel_reads_on(tmp_path: Path) -> None:
    clock = Clock()
    store, timer = await open_store(tmp_path, clock)
    await send_bad_queue(store, clock, b"x", "x", TIMER_DELAY_SEC="1")
    await send(store, clock, b"b", TIMER_DELAY_SEC="1")
    clock.ms = T0 + 5000
    timer.maybe_move_write_time()  # the wheel is past their tick when it reads them: put back at once
    await run(timer)
    assert [m.body for m in delivered(store)] == [b"b"]
    assert timer.curr_queue_offset == 2
    timer.log.close()
    await store.shutdown()
