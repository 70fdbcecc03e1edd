"""Start-up recovery of the commitlog, consume queues and index (RocketMQ's
CommitLog.recoverNormally / recoverAbnormally).

Runs in a worker thread before the store serves anything. Normal recovery (clean shutdown)
scans the last three commitlog files with CRC checks to find the end. Abnormal recovery (the
``abort`` marker survived) starts at the newest file whose first message is older than the
checkpoint, re-dispatches every valid entry (consume queues and index ignore what they already
have) and stops at the first invalid entry; everything after it is truncated, in the commitlog
and in the consume queues and index that point beyond it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from mqtools.common.codec import INT2, MAGIC_V1, MAGIC_V2
from mqtools.common.entry_check import EntryInfo
from mqtools.server.store.checkpoint import StoreCheckpoint
from mqtools.server.store.commitlog import CommitLog
from mqtools.server.store.config import MessageStoreConfig
from mqtools.server.store.dispatch import DispatchService
from mqtools.server.store.index import IndexService

log = logging.getLogger(__name__)

#: Offset of STORETIMESTAMP with an IPv4 born host (56) and IPv6 (68).
STORE_TS_V4, STORE_TS_V6 = 56, 68


def first_message_store_ts(cl: CommitLog, index: int) -> int:
    """Store timestamp of the first entry of file ``index``; 0 if it does not look like a message."""
    mf = cl.queue.files[index]
    _, magic = INT2.unpack_from(mf.mm, 0)
    if magic not in (MAGIC_V1, MAGIC_V2):
        return 0
    sys_flag = int.from_bytes(mf.mm[36:40], "big", signed=True)
    pos = STORE_TS_V6 if sys_flag & 0x10 else STORE_TS_V4
    return int.from_bytes(mf.mm[pos:pos + 8], "big", signed=True)


def scan(cl: CommitLog, start: int, check_crc: bool, dispatch: Callable[[EntryInfo], None] | None) -> int:
    """Walk entries from ``start``; returns the offset of the first invalid entry (the new end)."""
    offset = start
    files = cl.queue.files
    while True:
        if dispatch is None:
            offset, result, mf = cl.walk_sizes(offset, check_crc)
            if mf is not None and offset - mf.start >= mf.size:  # the file ends with a whole entry
                if mf is files[-1]:
                    return offset
                continue
        else:
            result, mf = cl.scan(offset, check_crc)
        if isinstance(result, EntryInfo):
            if result.phys_offset != offset:
                log.warning("entry at %d records physical offset %d: treated as the end", offset,
                            result.phys_offset)
                return offset
            if dispatch is not None:
                dispatch(result)
            offset += result.size
            if offset - mf.start >= mf.size and mf is files[-1]:
                return offset
            continue
        if result == 0 and mf is not None and mf is not files[-1]:
            offset = cl.next_file_start(offset)
            continue
        return offset


def recover_normally(cl: CommitLog, check_crc: bool) -> int:
    files = cl.queue.files
    if not files:
        return 0
    start = files[max(0, len(files) - 3)].start
    return _finish(cl, scan(cl, start, check_crc, None))


def recover_abnormally(cl: CommitLog, check_crc: bool, min_ts: int,
                       dispatch: Callable[[EntryInfo], None]) -> int:
    files = cl.queue.files
    if not files:
        return 0
    start_index = 0
    for i in range(len(files) - 1, -1, -1):
        ts = first_message_store_ts(cl, i)
        if ts and ts <= min_ts:
            start_index = i
            break
    log.info("abnormal recovery from commitlog file %s", files[start_index].path.name)
    return _finish(cl, scan(cl, files[start_index].start, check_crc, dispatch))


def _finish(cl: CommitLog, end: int) -> int:
    """Make ``end`` the commitlog end and mark everything before it flushed."""
    cl.queue.truncate_to(end)
    for mf in cl.queue.files:
        mf.flushed = mf.wrote
    cl.queue.flushed_where = end
    return end


def load_and_recover(cfg: MessageStoreConfig, cl: CommitLog, d: DispatchService, index: IndexService,
                     cp: StoreCheckpoint, abnormal: bool) -> None:
    """Open every file, find the commitlog's valid end, and bring the consume queues and index in
    line with it: cut what points beyond it, dispatch what they lack (RocketMQ's
    DefaultMessageStore load + recover)."""
    cl.load()
    d.load_consume_queues()
    index_dropped_from = index.load(abnormal, cp.index_msg_timestamp)
    for cq in d.all_cqs():
        cq.recover()
    if abnormal:
        min_ts = cp.min_timestamp_index if cfg.message_index_enable else cp.min_timestamp
        if index_dropped_from is not None and cfg.message_index_enable:
            min_ts = min(min_ts, index_dropped_from)
        end = recover_abnormally(cl, cfg.check_crc_on_recover, min_ts, d.dispatch_entry)
    else:
        end = recover_normally(cl, cfg.check_crc_on_recover)
    if not cl.queue.files:
        for cq in d.all_cqs():
            cq.destroy()
        d.consume_queues.clear()
    for cq in d.all_cqs():
        if cq.max_physic_offset > end:
            cq.truncate_dirty(end)
    index.truncate_beyond(end)
    max_cq_phy = max((cq.max_physic_offset for cq in d.all_cqs()), default=0)
    d.reput_offset = max(min(max_cq_phy, end), cl.min_offset)
    d.reput(strict=True)
    d.rebuild_offset_table()
    min_phy = cl.min_offset
    for cq in d.all_cqs():
        cq.correct_min_offset(min_phy)


def truncate(cl: CommitLog, d: DispatchService, index: IndexService, offset: int) -> int:
    """Cut the log at entry boundary `offset`, queues and index with it; the bytes dropped (controller mode's
    truncation to the master's log, a torn tail). The commitlog goes first: after a crash in between,
    recovery cuts what points past its end."""
    end = cl.max_offset
    if offset >= end:
        return 0
    cl.queue.truncate_to(offset)
    for cq in d.all_cqs():
        if cq.max_physic_offset > offset:
            cq.truncate_dirty(offset)
    index.truncate_beyond(offset)
    max_cq_phy = max((cq.max_physic_offset for cq in d.all_cqs()), default=0)
    d.reput_offset = max(min(max_cq_phy, offset, d.reput_offset), cl.min_offset)
    d.rebuild_offset_table()
    d.reput(strict=True)
    d.rebuild_offset_table()
    log.warning("commitlog truncated from %d to %d (%d bytes)", end, offset, end - offset)
    return end - offset
