"""Timer recovery at start (Apache's TimerMessageStore.recover / recoverAndRevise / reviseQueueOffset):
rebuilds the wheel's slots and the service's positions from the TimerLog and the checkpoint.

Blocking, run in a thread by ``TimerMessageStore.load``: the TimerLog is scanned from a file before the
checkpoint's flushed position, torn records are cut, each record's slot gets its lastPos back, and
the queue offset resumes at min(the last record's message + 1, the checkpoint's). Reading resumes at
the checkpoint's read time, so ticks between it and now are delivered after a crash: at least once,
never early; what was delivered but not yet checkpointed may come twice, as with Apache.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mqtools.server.store.timer import timer_logic as L
from mqtools.server.store.timer.timer_log import UNIT_SIZE
from mqtools.server.store.timer.timer_wheel import IGNORE

if TYPE_CHECKING:
    from mqtools.server.store.timer.timer_message_store import TimerMessageStore

log = logging.getLogger(__name__)


def recover(timer: TimerMessageStore, fresh_wheel: bool = False) -> None:
    """Apache's recover(): revise the wheel from the log, then pick the queue offset and read time."""
    assert timer.wheel is not None
    cp = timer.checkpoint.value
    begin = cp.last_timer_log_flush_pos
    if timer.log.queue.files:
        begin -= timer.log.file_size
    process_offset = recover_and_revise(timer, max(begin, 0), check=True)
    timer.log.queue.flushed_where = process_offset
    last = revise_queue_offset(timer, process_offset)
    offset = cp.last_timer_queue_offset if last == -1 else last + 1
    offset = min(offset, cp.master_timer_queue_offset)
    low = timer.store.get_min_offset_in_queue(L.TIMER_TOPIC, 0)
    high = timer.store.get_max_offset_in_queue(L.TIMER_TOPIC, 0)
    timer.curr_queue_offset = min(max(offset, low), high)
    now = timer.format_time(timer.now_ms())
    read = cp.last_read_time_ms
    if not timer.checkpoint.existed and not timer.log.queue.files:
        read = now  # nothing was ever filed: no week of empty ticks to walk
    timer.curr_read_time_ms = max(
        read, now - timer.slots_total * timer.precision_ms + L.TIMER_BLANK_SLOTS * timer.precision_ms
    )
    if timer.log.queue.files:
        min_first = timer.wheel.check_phy_pos(timer.curr_read_time_ms, process_offset)
        if min_first < process_offset:
            log.warning(
                "timer: wheel points past the log end %d, re-reading from %d", process_offset, min_first
            )
            recover_and_revise(timer, min_first, check=False)
    timer.commit_read_time_ms = timer.curr_read_time_ms
    timer.commit_queue_offset = timer.curr_queue_offset
    busy = timer.log.queue.files and not fresh_wheel
    timer.congest_num = timer.wheel.get_all_num(timer.curr_read_time_ms) if busy else 0
    log.info(
        "timer recovered: read %d, queue offset %d, log end %d",
        timer.curr_read_time_ms,
        timer.curr_queue_offset,
        process_offset,
    )
    timer.prepare_checkpoint()


def recover_and_revise(timer: TimerMessageStore, begin: int, check: bool) -> int:
    """Give every slot its records back from ``begin`` on; with ``check``, cut torn records. The end."""
    assert timer.wheel is not None
    end, records = timer.log.scan_valid(begin, check)
    for pos, rec in records:
        timer.wheel.revise_slot(rec.delayed_time, IGNORE, pos, True)
    if check and timer.log.queue.files:
        timer.log.truncate_dirty(end)
    return end


def revise_queue_offset(timer: TimerMessageStore, process_offset: int) -> int:
    """The wheel-topic queue offset of the last record's message, checked against the queue; -1."""
    mf = timer.log.queue.find(process_offset - UNIT_SIZE) if process_offset >= UNIT_SIZE else None
    if mf is None or process_offset - mf.start < UNIT_SIZE:
        return -1
    rec = timer.log.read(process_offset - UNIT_SIZE)
    msg = timer.store.look_message_by_offset(rec.offset_py, rec.size_py) if rec is not None else None
    if msg is None or rec is None:
        return -1
    for cq_offset in range(msg.queue_offset, max(msg.queue_offset - 20000, -1), -1):
        if timer.store.get_commit_log_offset_in_queue(L.TIMER_TOPIC, msg.queue_id, cq_offset) == rec.offset_py:
            return cq_offset
    return msg.queue_offset
