"""Delay levels: SCHEDULE_TOPIC_XXXX, the per-level delivery of due messages, delayOffset.json.

A message with a DELAY property (or a consumer send-back with a delay level) is stored in
SCHEDULE_TOPIC_XXXX, queue level-1, with its real destination in REAL_TOPIC / REAL_QID. Each
level's queue is in store order and every message of a level has the same delay, so the queue is
also in due order: delivery walks it from the level's saved offset and stops at the first message
that is not due yet. A due message is re-put to its real topic and queue; the level's offset moves
past it only once that put succeeded, so a crash re-delivers at most the message in flight.

Like RocketMQ's ScheduleMessageService, the service is the ConfigManager of its progress table
(delayOffset.json, ``{"offsetTable":{"1":0,...}}`` byte for byte as RocketMQ writes it), persisted
every 10 s when it changed and at shutdown. The delay levels themselves are in ``delay_levels``.

`redirect_to_schedule` is pure; the service is a thin asyncio loop around `deliver_level()`,
which tests drive directly with a fake clock.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mqtools.common import properties as P
from mqtools.common.codec import CorruptMessageError, decode_stored
from mqtools.common.javanum import INT_RANGE, LONG_RANGE
from mqtools.common.log_limiter import LimitedLog
from mqtools.common.message import MessageExt, MessageExtBrokerInner, reput_copy
from mqtools.common.topics import SCHEDULE_TOPIC
from mqtools.server.lifecycle import cancel_and_wait
from mqtools.server.store.config_manager import ConfigManager, loads
from mqtools.server.store.delay_levels import DEFAULT_DELAY_LEVELS, DelayLevelTable, delay_level_of

log = logging.getLogger(__name__)
#: Periodic duties that fail the same way until the machine is mended: a line a minute, not one a round.
_failures = LimitedLog(log)

FILE_NAME = "delayOffset.json"
FIRST_DELIVERY_DELAY = 1.0
IDLE_INTERVAL = 0.1
PERSIST_INTERVAL = 10.0
BATCH = 32


def redirect_to_schedule(msg: Any, table: DelayLevelTable) -> bool:
    """Send a message with DELAY > 0 to the schedule topic instead of its real queue.

    The level is clamped to the table's maximum; REAL_TOPIC / REAL_QID keep the destination. The
    consume queue's tag code, the deliver time, is computed by the store from the store time and the
    stored level. Returns False, leaving the message alone, when it has no delay.
    """
    level = delay_level_of(msg.properties)
    if level <= 0:
        return False
    level = min(level, table.max_level)
    msg.properties[P.DELAY] = str(level)
    msg.properties[P.REAL_TOPIC] = msg.topic
    msg.properties[P.REAL_QID] = str(msg.queue_id)
    msg.topic = SCHEDULE_TOPIC
    msg.queue_id = level - 1
    _refresh_properties_string(msg)
    return True


def _refresh_properties_string(msg: Any) -> None:
    if hasattr(msg, "properties_string"):
        msg.properties_string = P.properties_to_string(msg.properties)


def _java_int(level: str) -> int:
    """A delayOffset.json key as RocketMQ's Integer holds it; anything else makes the file a bad one."""
    value = int(level)
    if value not in INT_RANGE:
        raise ValueError(f"delay level {level[:30]!r} is not a Java int")
    return value


def _java_long(offset: object) -> int:
    """A delayOffset.json value as RocketMQ's Long holds it: 1e400 (inf), a fraction, a 20-digit number or a
    string is a ValueError, so the ConfigManager passes over the file for its backup, as over any bad file, and a
    slave neither takes nor writes such a body from its master."""
    if type(offset) is int and offset in LONG_RANGE:
        return offset
    raise ValueError(f"delay offset {str(offset)[:30]} is not a Java long")


class ScheduleMessageService(ConfigManager):
    """Delivers due delayed messages; the store is any object with the MessageStore facade."""

    def __init__(
        self,
        store: Any,
        config_dir: Path,
        delay_levels: str = DEFAULT_DELAY_LEVELS,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(Path(config_dir) / FILE_NAME)
        self.store = store
        self.table = DelayLevelTable(delay_levels)
        self.clock = clock
        self.offset_table: dict[int, int] = {}
        self._tasks: list[asyncio.Task] = []

    # ------------------------------------------------------------------ send-side API

    def redirect(self, msg: Any) -> bool:
        """Used by SEND_MESSAGE and send-back before the put: DELAY > 0 -> schedule topic."""
        return redirect_to_schedule(msg, self.table)

    # ------------------------------------------------------------------ persistence

    def encode(self) -> bytes:
        table = {str(level): offset for level, offset in sorted(self.offset_table.items())}
        return json.dumps({"offsetTable": table}, separators=(",", ":")).encode()

    def decode(self, data: bytes) -> None:
        raw = loads(data)
        if not isinstance(raw, dict):
            raise TypeError("delayOffset.json is not a JSON object")
        table = raw.get("offsetTable") or {}
        self.offset_table = {_java_int(k): _java_long(v) for k, v in table.items() if v is not None}

    def correct_offsets(self) -> None:
        """Clamp saved offsets into each level queue's [min, max] (files may have been cleaned)."""
        for level, offset in list(self.offset_table.items()):
            low = self.store.get_min_offset_in_queue(SCHEDULE_TOPIC, level - 1)
            high = self.store.get_max_offset_in_queue(SCHEDULE_TOPIC, level - 1)
            clamped = min(max(offset, low), high)
            if clamped != offset:
                log.warning("delay level %d offset %d outside [%d, %d], using %d", level, offset, low, high,
                            clamped)
                self.offset_table[level] = clamped

    # ------------------------------------------------------------------ delivery

    async def deliver_level(self, level: int) -> int:
        """Deliver every due message of one level; return how many were delivered.

        Stops at the first message not yet due or whose put failed (retried on the next pass).
        """
        queue_id = level - 1
        delivered = 0
        while True:
            offset = self.offset_table.get(level, 0)
            if self.store.get_max_offset_in_queue(SCHEDULE_TOPIC, queue_id) == offset:
                return delivered  # nothing new: skip the read (and the store's get statistics)
            result = self.store.get_message("SCHEDULE_SERVICE", SCHEDULE_TOPIC, queue_id, offset, BATCH)
            if not result.buffers:
                self._correct_from_result(level, offset, result)
                return delivered
            for buf in result.buffers:
                outcome, next_offset = await self._deliver_one(level, buf, offset)
                if outcome is None:
                    return delivered
                offset = next_offset
                self.offset_table[level] = offset
                self.dirty = True
                delivered += outcome

    def _correct_from_result(self, level: int, offset: int, result: Any) -> None:
        """An offset below the queue's min (files cleaned) jumps to where messages start."""
        name = getattr(result.status, "name", "")
        if name in ("OFFSET_TOO_SMALL", "OFFSET_OVERFLOW_BADLY") and result.next_begin_offset != offset:
            log.warning("delay level %d offset %d corrected to %d (%s)", level, offset, result.next_begin_offset,
                        name)
            self.offset_table[level] = result.next_begin_offset
            self.dirty = True

    async def _deliver_one(self, level: int, buf: Any, offset: int) -> tuple[int | None, int]:
        """(1, next) when delivered, (0, next) when skipped, (None, offset) when not due or the put failed."""
        try:
            msg = decode_stored(buf)
        except CorruptMessageError:  # a corrupt unit must not stall its level forever
            log.exception("skipping undecodable message in delay level %d", level)
            return 0, offset + 1
        next_offset = msg.queue_offset + 1
        now_ms = int(self.clock() * 1000)
        deliver_at = self.table.deliver_timestamp(level, msg.store_timestamp)
        if deliver_at > now_ms + self.table.delay_ms(level):
            deliver_at = now_ms  # the clock moved back: do not hold the message for longer than its delay
        if deliver_at > now_ms:
            return None, offset
        inner = self._rebuild(msg)
        if inner is None:
            return 0, next_offset
        result = await self.store.put_message(inner)
        if not result.ok:
            log.warning("re-delivering delayed message %s failed: %s", msg.msg_id, result.status)
            return None, offset
        return 1, next_offset

    def _rebuild(self, msg: MessageExt) -> MessageExtBrokerInner | None:
        """The message for its real topic and queue: same body, flags, hosts, times and properties."""
        props = dict(msg.properties)
        real_topic = props.get(P.REAL_TOPIC)
        try:
            real_qid = int(props.get(P.REAL_QID, ""))
        except ValueError:
            real_qid = -1
        if not real_topic or real_qid < 0:
            log.error("delayed message without REAL_TOPIC/REAL_QID, dropped: %s", props)
            return None
        return reput_copy(msg, real_topic, real_qid, props, reconsume_times=msg.reconsume_times)

    async def deliver_due(self) -> int:
        """One pass over every level; a failing level is logged and retried on a later pass."""
        delivered = 0
        for level in range(1, self.table.max_level + 1):
            try:
                delivered += await self.deliver_level(level)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - keep the other levels going
                _failures.failure("deliver", "delay level %d delivery failed", level)
        return delivered

    async def start(self) -> None:
        """Load progress and run the delivery loop (masters only: the caller decides)."""
        self.load()
        self.correct_offsets()
        self._tasks = [
            asyncio.create_task(self._deliver_loop(), name="delay-delivery"),
            asyncio.create_task(self.persist_loop(PERSIST_INTERVAL), name="delay-offset-flush"),
        ]

    async def shutdown(self) -> None:
        await cancel_and_wait(*self._tasks)
        self._tasks = []
        self.persist()

    async def _deliver_loop(self) -> None:
        await asyncio.sleep(FIRST_DELIVERY_DELAY)
        while True:
            if not await self.deliver_due():
                await asyncio.sleep(IDLE_INTERVAL)
