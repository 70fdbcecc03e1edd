"""TimerMessageStore: takes timer messages from ``rmq_sys_wheel_timer`` into the wheel and puts them
back into their topics when their tick comes (RIP-43, Apache's TimerMessageStore, in asyncio).

Enqueue walks the wheel topic's consume queue (queue 0) from ``curr_queue_offset``: a message whose
TIMER_OUT_MS tick has already begun is put back at once; any other gets a TimerLog record chained
into its slot (rolled to the window's end when it is due beyond the roll window). Dequeue reads the
slot of ``curr_read_time_ms`` once that tick is over (``curr_read < curr_write``, the write time being
the start of the current tick), puts each message back to REAL_TOPIC / REAL_QID (or, with the roll
bit, into the wheel topic again), then moves to the next tick. A message is therefore never
delivered before TIMER_OUT_MS + precision, which the send path made no later than the time asked.

Every timerFlushIntervalMs (Apache's TimerFlushService) the checkpoint values are taken, then the
TimerLog, the wheel and the checkpoint are synced, in that order, in a worker thread.

Recovery at start (``load``, in a thread) is ``timer_recovery``'s.

Masters run all of it. A slave (``dequeue=False``) files what its master has filed, up to the master's
queue offset, and delivers nothing; its master's checkpoint (read time, queue offset), taken every few
seconds (SlaveSynchronize), moves it along, so that when it is made master (``set_master``) it delivers
from where its master got, the messages the master had filed and not delivered included, as Apache's
slave does. A delete marker (TIMER_DEL_UNIQKEY) cancels the message it names when both fall in the same
tick, as in Apache.
"""

from __future__ import annotations

import asyncio
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from mqtools.common import properties as P
from mqtools.common.codec import CorruptMessageError, decode_stored
from mqtools.common.hashing import cached_java_hash
from mqtools.common.javanum import INT_MAX
from mqtools.common.log_limiter import LimitedLog
from mqtools.common.loop import PUTS_PER_TURN, wait_event
from mqtools.common.message import MessageExt
from mqtools.server.lifecycle import cancel_and_wait
from mqtools.server.store.config import MessageStoreConfig
from mqtools.server.store.results import PutMessageResult
from mqtools.server.store.timer import timer_logic as L
from mqtools.server.store.timer import timer_recovery, timer_slots
from mqtools.server.store.timer.timer_checkpoint import DataVersion, TimerCheckpointFile
from mqtools.server.store.timer.timer_log import TimerLog, encode_record, need_roll
from mqtools.server.store.timer.timer_metrics import Metric, TimerMetrics
from mqtools.server.store.timer.timer_wheel import SLOTS_TOTAL, TimerWheel

log = logging.getLogger(__name__)
#: Periodic duties that fail the same way until the machine is mended: a line a minute, not one a round.
_failures = LimitedLog(log)

BATCH = 32
CLEAN_INTERVAL = 30.0
#: Empty ticks skipped in one dequeue step before the loop yields (a first start begins a week back).
SKIP_PER_STEP = 4096
MAX_PUT_ATTEMPTS = 3
_NO_RETRY = frozenset({"MESSAGE_ILLEGAL", "PROPERTIES_SIZE_EXCEEDED"})
#: A slave's read time moved past at most this many ticks has their slots taken off its count one by one.
FOLLOW_TICKS_INLINE = 1024


class TimerMessageStore:
    """The timer service over a MessageStore (any object with its facade)."""

    def __init__(
        self,
        store: Any,
        config: MessageStoreConfig,
        *,
        clock: Callable[[], float] = time.time,
        slots_total: int = SLOTS_TOTAL,
    ) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.precision_ms = L.snap_precision(config.timer_precision_ms)
        self.slots_total = slots_total
        self.window_slots = L.roll_window_slots(config.timer_roll_window_slot, slots_total)
        root = config.root
        self.wheel_path = root / "timerwheel"
        self.wheel: TimerWheel | None = None
        self.log = TimerLog(root / "timerlog", config.mapped_file_size_timer_log)
        self.checkpoint = TimerCheckpointFile(config.config_dir / "timercheck")
        self.metrics = TimerMetrics(config.config_dir / "timermetrics", self.now_ms)
        self.curr_read_time_ms = 0
        self.curr_write_time_ms = 0
        self.commit_read_time_ms = 0
        self.curr_queue_offset = 0
        self.commit_queue_offset = 0
        self._last_commit = (0, 0)
        self.congest_num = 0
        self.enqueued = 0
        self.dequeued = 0
        self.enqueue_tps = 0.0
        self.dequeue_tps = 0.0
        self.dequeue_running = False
        self.loaded = False
        self._wake = asyncio.Event()
        self._flush_lock = threading.Lock()
        self._listening = False
        self._tasks: list[asyncio.Task] = []
        self._paused = False
        """Filing stopped while a slave made master counts its wheel (set_master)."""

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def format_time(self, ms: int) -> int:
        return ms // self.precision_ms * self.precision_ms

    # ================================================================== load / recovery

    def load(self) -> None:
        """Open the wheel and the log, read the metrics, recover (blocking: call it from a thread)."""
        fresh = not self.wheel_path.exists()
        self.wheel = TimerWheel(self.wheel_path, self.slots_total, self.precision_ms)
        self.log.load()
        self.metrics.load()
        timer_recovery.recover(self, fresh)
        self.loaded = True

    # ================================================================== checkpoint

    def prepare_checkpoint(self) -> None:
        """Take the values the next checkpoint write records (Apache's prepareTimerCheckPoint)."""
        cp = self.checkpoint.value
        cp.last_timer_log_flush_pos = self.log.flushed_where
        cp.last_read_time_ms = self.commit_read_time_ms
        if self.dequeue_running:
            cp.master_timer_queue_offset = self.commit_queue_offset
            now = (self.commit_read_time_ms, self.commit_queue_offset)
            if now != self._last_commit:
                cp.data_version.next_version(self.now_ms())
                self._last_commit = now
        cp.last_timer_queue_offset = min(self.commit_queue_offset, cp.master_timer_queue_offset)

    def flush_files(self, snapshot: bytes) -> None:
        """TimerLog, wheel, then checkpoint to disk (blocking: a worker thread). One at a time: a flush
        whose task was cancelled at shutdown still runs in its thread, and the files close after it."""
        with self._flush_lock:
            self.log.flush()
            if self.wheel is not None:
                self.wheel.flush()
            self.checkpoint.flush(snapshot)

    async def flush_once(self) -> None:
        self.prepare_checkpoint()
        await asyncio.to_thread(self.flush_files, self.checkpoint.value.encode())
        if self.metrics.dirty:
            await self.metrics.persist_async()

    # ================================================================== enqueue

    def maybe_move_write_time(self) -> None:
        now = self.format_time(self.now_ms())
        self.curr_write_time_ms = max(self.curr_write_time_ms, now)

    async def enqueue_once(self) -> int:
        """File (or deliver) the wheel topic's next messages; how many were taken."""
        if self.config.timer_stop_enqueue or self._paused:
            return 0
        store = self.store
        low = store.get_min_offset_in_queue(L.TIMER_TOPIC, 0)
        if self.curr_queue_offset < low:
            log.warning("timer queue offset %d below the queue's minimum %d", self.curr_queue_offset, low)
            self.curr_queue_offset = low
        offset = self.curr_queue_offset
        # a slave files no further than its master has (Apache's isRunningEnqueue)
        batch = BATCH if self.dequeue_running else min(BATCH, self.checkpoint.value.master_timer_queue_offset - offset)
        taken = 0
        if batch > 0 and store.get_max_offset_in_queue(L.TIMER_TOPIC, 0) > offset:
            result = store.get_message("TIMER_SERVICE", L.TIMER_TOPIC, 0, offset, batch)
            for buf in result.buffers:
                try:
                    # filing it needs the properties and the position, not the body (read again to put it back)
                    msg = decode_stored(buf, read_body=False)
                except CorruptMessageError:
                    log.exception("timer: undecodable message at queue offset %d skipped", offset + taken)
                    msg = None
                if msg is not None:
                    await self._enqueue_message(msg, buf)
                taken += 1
                self.curr_queue_offset = self.commit_queue_offset = offset + taken
        self.commit_queue_offset = self.curr_queue_offset
        self.maybe_move_write_time()
        return taken

    async def _enqueue_message(self, msg: MessageExt, stored: Any) -> None:
        """File `msg` (decoded without its body from `stored`, its entry) in the wheel, or put it back at once
        when its tick has already been read."""
        try:
            delayed = int(msg.properties[L.TIMER_OUT_MS])
        except (KeyError, ValueError):
            log.error("timer message without a valid TIMER_OUT_MS dropped: %s", msg.msg_id)
            return
        self.enqueued += 1
        if not self.dequeue_running and delayed < self.curr_read_time_ms:
            return  # a slave: its master has read that tick, and delivered it
        if self.dequeue_running and delayed < self.curr_write_time_ms:
            msg = decode_stored(stored)
            msg.properties[L.TIMER_ENQUEUE_MS] = L.NEVER_ENQUEUED_TEXT
            await self._put_back(msg, L.NEVER_ENQUEUED, roll=False)
            return
        self.do_enqueue(msg.commit_log_offset, msg.store_size, delayed, msg)

    def do_enqueue(self, offset_py: int, size_py: int, delayed_ms: int, msg: MessageExt) -> int:
        """Append the record and chain it into its slot; the record's position."""
        wheel = self.wheel
        assert wheel is not None
        write_time = self.curr_write_time_ms
        props = msg.properties
        delete = L.TIMER_DEL_UNIQKEY in props
        slot_time, magic = L.plan_enqueue(
            delayed_ms, write_time, self.window_slots, self.precision_ms, delete
        )
        real_topic = props.get(P.REAL_TOPIC)
        slot = wheel.get_slot(slot_time)
        pos = self.log.append(encode_record(
            slot.last_pos,
            magic,
            write_time,
            slot_time - write_time,
            offset_py,
            size_py,
            cached_java_hash(real_topic) if real_topic else 0,
        ))
        delta = -1 if delete else 1
        wheel.put_slot(
            slot_time, pos if slot.first_pos == -1 else slot.first_pos, pos, slot.num + delta, slot.magic
        )
        if slot_time >= self.curr_read_time_ms:  # a slave files ticks its master has read: nothing to deliver
            self.congest_num += delta
        self._add_metric(msg, delta)
        return pos

    def _add_metric(self, msg: MessageExt, value: int) -> None:
        if not self.dequeue_running or msg.properties.get(L.TIMER_ENQUEUE_MS) == L.NEVER_ENQUEUED_TEXT:
            return  # a slave's counts are its master's (follow_master_metrics)
        self.metrics.add(msg.properties.get(P.REAL_TOPIC), value)

    # ================================================================== dequeue

    def move_read_time(self) -> None:
        self.curr_read_time_ms += self.precision_ms
        self.commit_read_time_ms = self.curr_read_time_ms

    async def dequeue_once(self) -> int:
        """Deliver the tick at the read time if it is over: 1 done, 0 empty tick(s) skipped, -1 not yet."""
        if self.config.timer_stop_dequeue or not self.dequeue_running:
            return -1
        wheel = self.wheel
        assert wheel is not None
        self.maybe_move_write_time()
        for _ in range(SKIP_PER_STEP):
            if self.curr_read_time_ms >= self.curr_write_time_ms:
                return -1
            slot = wheel.get_slot(self.curr_read_time_ms)
            if slot.time_ms != -1:
                break
            self.move_read_time()
        else:
            return 0
        for n, (rec, msg) in enumerate(timer_slots.deliverable(self.log, self.store, slot.last_pos), 1):
            self._add_metric(msg, -1)
            await self._put_back(msg, rec.write_time, need_roll(rec.magic))
            if n % PUTS_PER_TURN == 0:  # the read time moves only once the tick is done: a crash reads it again
                await asyncio.sleep(0)
        self.congest_num -= slot.num
        self.move_read_time()
        return 1

    async def _put_back(self, msg: MessageExt, enqueue_time: int, roll: bool) -> bool:
        """Put the message to its topic (or, rolling, into the wheel again); Apache's retry rules."""
        if not roll and L.TIMER_DEL_UNIQKEY in msg.properties:
            return False
        if not roll and (P.REAL_TOPIC not in msg.properties or P.REAL_QID not in msg.properties):
            log.error("timer message without REAL_TOPIC/REAL_QID dropped: %s", msg.msg_id)
            return False
        attempts = 0
        while True:
            try:
                inner = L.written_back(msg, enqueue_time, roll, self.now_ms())
            except ValueError as exc:  # the tick must go on: raising here read the same tick again, without end
                log.error("timer message %s dropped: it cannot be written back (%s)", msg.msg_id, exc)
                return False
            put = self.store.put_message_inline(inner)
            result = put if isinstance(put, PutMessageResult) else await put
            name = result.status.name
            if name == "PUT_OK":
                self.dequeued += 1
                return True
            if name in _NO_RETRY:
                log.warning("timer: message %s refused by the store (%s), skipped", msg.msg_id, name)
                return False
            attempts += 1
            if not self.config.timer_enable_retry_until_success and attempts >= MAX_PUT_ATTEMPTS:
                log.error("timer: message %s not put after %d attempts (%s)", msg.msg_id, attempts, name)
                return False
            await asyncio.sleep(0.5 * self.precision_ms / 1000)

    # ================================================================== figures

    def is_reject(self, deliver_ms: int) -> bool:
        """timerCongestNumEachSlot flow control for the send path. At the default limit (Integer.MAX_VALUE,
        above any slot's int count) no slot is read, and the random draw is made only where it decides."""
        limit = self.config.timer_congest_num_each_slot
        if self.wheel is None or limit >= INT_MAX:
            return False
        num = self.wheel.get_num(deliver_ms)
        return num > limit and L.is_reject(num, limit, random.randrange(1000))

    def enqueue_behind_messages(self) -> int:
        return max(self.store.get_max_offset_in_queue(L.TIMER_TOPIC, 0) - self.curr_queue_offset, 0)

    def dequeue_behind_seconds(self) -> int:
        if not self.loaded:
            return 0
        return (self.now_ms() - self.curr_read_time_ms) // 1000

    def runtime_info(self) -> dict[str, str]:
        """The timer figures Apache's broker adds to GET_BROKER_RUNTIME_INFO."""
        return {
            "timerReadBehind": str(self.dequeue_behind_seconds()),
            "timerOffsetBehind": str(self.enqueue_behind_messages()),
            "timerCongestNum": str(max(self.congest_num, 0)),
            "timerEnqueueTps": str(round(self.enqueue_tps, 2)),
            "timerDequeueTps": str(round(self.dequeue_tps, 2)),
        }

    # ================================================================== a slave following its master

    async def follow_master(self, read_time_ms: int, queue_offset: int, version: DataVersion) -> None:
        """The master's checkpoint: deliver nothing before its read time once made master, file up to its queue
        offset. The ticks the read time passes leave the congestion count, as their delivery does on the master
        (counted again over the whole wheel, in a thread, when it passes many)."""
        cp = self.checkpoint.value
        cp.master_timer_queue_offset = queue_offset
        cp.data_version = version
        read = max(self.format_time(read_time_ms), 0)
        wheel, was = self.wheel, self.curr_read_time_ms
        self.curr_read_time_ms = self.commit_read_time_ms = cp.last_read_time_ms = read
        self._wake.set()  # the master may have filed more
        if not self.loaded or wheel is None or read == was:
            return
        ticks = (read - was) // self.precision_ms
        if not 0 < ticks <= FOLLOW_TICKS_INLINE:
            self.congest_num = await asyncio.to_thread(wheel.get_all_num, read)
            return
        for tick in range(ticks):
            slot = wheel.get_slot(was + tick * self.precision_ms)
            if slot.time_ms != -1:
                self.congest_num -= slot.num

    def follow_master_metrics(self, timing_count: dict[str, tuple[int, int]], version: dict[str, int]) -> None:
        """The master's pending counts per topic replace the slave's (Apache's syncTimerMetrics)."""
        if self.metrics.data_version != version:
            self.metrics.replace({topic: Metric(count, stamp) for topic, (count, stamp) in timing_count.items()},
                                 version)

    async def set_master(self, master: bool) -> None:
        """A role change of a running timer (Apache's checkBrokerRole): made master, it files from the master's
        queue offset at the latest and delivers from the master's read time; made slave, it stops delivering.
        Made master, it first counts what its wheel holds (filing paused), so that its pending counts per topic
        are its own, not its master's of up to 10 s before, which left out or kept what that master filed or
        delivered in its last seconds."""
        if master and not self.dequeue_running:
            cp = self.checkpoint.value
            self.curr_queue_offset = self.commit_queue_offset = min(self.curr_queue_offset,
                                                                    cp.master_timer_queue_offset)
            if cp.last_read_time_ms:
                self.curr_read_time_ms = self.commit_read_time_ms = cp.last_read_time_ms
            self._paused = True
            try:
                total, topics = await asyncio.to_thread(timer_slots.recount, self.wheel, self.log, self.store,
                                                        self.curr_read_time_ms)
            finally:
                self._paused = False
            self.congest_num = total
            now = self.now_ms()
            self.metrics.replace({topic: Metric(count, now) for topic, count in topics.items()})
            self.dequeue_running = True
            self.maybe_move_write_time()
            self._wake.set()
        elif not master:
            self.dequeue_running = False

    @property
    def running(self) -> bool:
        return bool(self._tasks)

    # ================================================================== lifecycle

    async def start(self, dequeue: bool = True) -> None:
        """Load (in a thread) and run enqueue, dequeue (masters), flush and cleaning loops."""
        if not self.loaded:
            await asyncio.to_thread(self.load)
        self.dequeue_running = dequeue
        self.maybe_move_write_time()
        if not self._listening:
            self.store.add_arrival_listener(self._on_arrival, frozenset({(L.TIMER_TOPIC, 0)}))  # rewrite_for_timer's queue
            self._listening = True
        self._tasks = [
            asyncio.create_task(self._enqueue_loop(), name="timer-enqueue"),
            asyncio.create_task(self._dequeue_loop(), name="timer-dequeue"),
            asyncio.create_task(self._flush_loop(), name="timer-flush"),
        ]

    def _on_arrival(self, topic: str, *_args: Any) -> None:
        if topic == L.TIMER_TOPIC:
            self._wake.set()

    async def _enqueue_loop(self) -> None:
        """Take what arrives; idle, wait for the next arrival (or Apache's 100 ms poll)."""
        idle = 0.1 * self.precision_ms / 1000
        while True:
            self._wake.clear()  # an arrival from here on runs the next pass at once
            try:
                taken = await self.enqueue_once()
            except Exception:  # noqa: BLE001 - keep the timer going; the batch is retried
                _failures.failure("enqueue", "timer enqueue failed")
                taken = 0
            if taken:
                await asyncio.sleep(0)
                continue
            await wait_event(self._wake, idle)  # not wait_for: it can swallow a shutdown's cancel

    async def _dequeue_loop(self) -> None:
        """Deliver ticks as they end; between them sleep until the next one ends (100 ms at most)."""
        idle = 0.1 * self.precision_ms / 1000
        while True:
            try:
                done = await self.dequeue_once()
            except Exception:  # noqa: BLE001 - keep the timer going; the tick is read again
                _failures.failure("dequeue", "timer dequeue failed")
                done = -1
            if done != -1:
                await asyncio.sleep(0)
                continue
            if self.curr_read_time_ms < self.curr_write_time_ms:  # stopped, or the tick failed: poll
                await asyncio.sleep(idle)
                continue
            until_due = (self.curr_read_time_ms + self.precision_ms - self.now_ms()) / 1000
            await asyncio.sleep(min(max(until_due, 0.005), idle))

    async def _flush_loop(self) -> None:
        interval = self.config.timer_flush_interval_ms / 1000
        last, last_in, last_out, last_clean = time.monotonic(), 0, 0, 0.0
        while True:
            await asyncio.sleep(interval)
            try:
                await self.flush_once()
                now = time.monotonic()
                span = max(now - last, 1e-3)
                self.enqueue_tps = (self.enqueued - last_in) / span
                self.dequeue_tps = (self.dequeued - last_out) / span
                last, last_in, last_out = now, self.enqueued, self.dequeued
                if now - last_clean >= CLEAN_INTERVAL:
                    last_clean = now
                    self.log.delete_expired(self.store.min_phy_offset)
            except Exception:  # noqa: BLE001 - retried on the next interval
                _failures.failure("flush", "timer flush failed")

    async def shutdown(self) -> None:
        """Stop the loops, then checkpoint and close the files (before the store shuts down)."""
        await cancel_and_wait(*self._tasks)
        self._tasks = []
        if not self.loaded:
            return
        self.prepare_checkpoint()
        await asyncio.to_thread(self.flush_files, self.checkpoint.value.encode())
        self.metrics.persist()
        with self._flush_lock:
            if self.wheel is not None:
                self.wheel.close()
            self.log.close()
        self.log = TimerLog(self.log.queue.dir, self.log.file_size)  # a later start (a new master) reloads
        self.loaded = False
