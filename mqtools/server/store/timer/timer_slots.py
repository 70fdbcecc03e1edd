"""A wheel slot's contents as its tick delivers them (Apache's TimerMessageStore reads them the same way): the
chain of TimerLog records a slot points at, the messages its tick puts back (not the delete markers, nor what
one of them cancels), and what the whole wheel holds from a read time on, counted as delivery counts it.

Blocking reads of the TimerLog and the commitlog; ``recount`` is run in a thread.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from mqtools.common import properties as P
from mqtools.common.message import MessageExt
from mqtools.server.store.timer import timer_logic as L
from mqtools.server.store.timer.timer_log import TimerLog, TimerRecord, need_delete, need_roll
from mqtools.server.store.timer.timer_wheel import TimerWheel

log = logging.getLogger(__name__)


def chain(timer_log: TimerLog, last_pos: int) -> list[TimerRecord]:
    """The slot's records from first to last (the chain is walked from its last record)."""
    out: list[TimerRecord] = []
    pos = last_pos
    while pos != -1:
        rec = timer_log.read(pos)
        if rec is None:
            break
        out.append(rec)
        pos = rec.prev_pos
    out.reverse()
    return out


def deliverable(timer_log: TimerLog, store: Any, last_pos: int) -> Iterator[tuple[TimerRecord, MessageExt]]:
    """A slot's records and messages that its tick puts back: not the delete markers, nor the messages one of
    them cancels. The records are read at once, each message as it is taken (a tick can hold 100,000)."""
    deletes: set[str] = set()
    normal: list[TimerRecord] = []
    for rec in chain(timer_log, last_pos):
        if need_delete(rec.magic) and not need_roll(rec.magic):
            marker = store.look_message_by_offset(rec.offset_py, rec.size_py)
            key = marker.properties.get(L.TIMER_DEL_UNIQKEY) if marker is not None else None
            if key is not None:
                deletes.add(key)
        else:
            normal.append(rec)
    return _messages(store, normal, deletes)


def _messages(store: Any, normal: list[TimerRecord], deletes: set[str]) -> Iterator[tuple[TimerRecord, MessageExt]]:
    for rec in normal:
        msg = store.look_message_by_offset(rec.offset_py, rec.size_py)
        if msg is None:
            log.warning("timer: message at %d (%d bytes) is gone", rec.offset_py, rec.size_py)
            continue
        uniq = msg.properties.get(P.UNIQ_KEY)
        if uniq is not None and deletes and L.delete_key(msg.properties.get(P.REAL_TOPIC), uniq) in deletes:
            continue
        yield rec, msg


def recount(wheel: TimerWheel, timer_log: TimerLog, store: Any, read_time_ms: int) -> tuple[int, dict[str, int]]:
    """What the wheel holds from ``read_time_ms`` on: the records (the wheel count) and the messages to deliver
    per real topic (the pending counts; those put back at once, TIMER_ENQUEUE_MS never, are not counted)."""
    topics: dict[str, int] = {}
    total = 0
    for _first, last, num in wheel.live_slots(read_time_ms):
        total += num
        for _rec, msg in deliverable(timer_log, store, last):
            topic = msg.properties.get(P.REAL_TOPIC)
            if topic is not None and msg.properties.get(L.TIMER_ENQUEUE_MS) != L.NEVER_ENQUEUED_TEXT:
                topics[topic] = topics.get(topic, 0) + 1
    return total, topics
