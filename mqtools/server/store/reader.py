"""Reading a consume queue: RocketMQ's DefaultMessageStore.getMessage and the time lookups.

``get_message`` answers a pull: it walks the queue's units from the requested offset, skips tag
mismatches, and returns zero-copy slices of the commitlog. Limits follow RocketMQ: a message
older than accessMessageInMemoryMaxRatio of RAM behind the commitlog end counts as "in disk" and
uses the smaller maxTransfer*OnMessageInDisk limits (and suggests pulling from a slave).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from mqtools.common import speedups
from mqtools.server.store import recovery
from mqtools.server.store.commitlog import CommitLog
from mqtools.server.store.config import MessageStoreConfig
from mqtools.server.store.consume_queue import BLANK_UNIT_SIZE, UNIT, UNIT_SIZE
from mqtools.server.store.dispatch import DispatchService
from mqtools.server.store.results import GetMessageResult, GetMessageStatus

#: _read_units compiled (_creader.pyx), when it was built and the pure path is not asked for.
_compiled = speedups.compiled("mqtools.server.store._creader")


def _total_memory() -> int:
    """Physical RAM (RocketMQ's TOTAL_PHYSICAL_MEMORY_SIZE); 8 GiB where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


class QueueReader:
    def __init__(self, config: MessageStoreConfig, commitlog: CommitLog, dispatcher: DispatchService) -> None:
        self.config = config
        self.commitlog = commitlog
        self.dispatcher = dispatcher
        self._in_disk_bytes = _total_memory() * config.access_message_in_memory_max_ratio // 100

    # ------------------------------------------------------------------ store times

    def _store_ts_at(self, phys: int) -> int:
        head = self.commitlog.slice(phys, 76)
        if head is None:
            return -1
        sys_flag = int.from_bytes(head[36:40], "big")
        pos = recovery.STORE_TS_V6 if sys_flag & 0x10 else recovery.STORE_TS_V4
        return int.from_bytes(head[pos:pos + 8], "big", signed=True)

    def message_store_timestamp(self, topic: str, queue_id: int, cq_offset: int) -> int:
        cq = self.dispatcher.cq(topic, queue_id)
        unit = cq.unit(cq_offset) if cq is not None else None
        return self._store_ts_at(unit[0]) if unit is not None else -1

    def earliest_message_time(self, topic: str, queue_id: int) -> int:
        cq = self.dispatcher.cq(topic, queue_id)
        if cq is None or cq.max_offset <= cq.min_offset:
            return -1
        return self.message_store_timestamp(topic, queue_id, cq.min_offset)

    def check_in_disk_by_consume_offset(self, topic: str, queue_id: int, cq_offset: int) -> bool:
        """RocketMQ's checkInDiskByConsumeOffset: the message at ``cq_offset`` is further behind the
        commitlog end than accessMessageInMemoryMaxRatio of RAM (False when there is none)."""
        cq = self.dispatcher.cq(topic, queue_id)
        unit = cq.unit(cq_offset) if cq is not None else None
        return unit is not None and self.commitlog.max_offset - unit[0] > self._in_disk_bytes

    def offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """First queue offset whose store time is >= ``timestamp_ms`` (max offset if none)."""
        cq = self.dispatcher.cq(topic, queue_id)
        if cq is None:
            return 0
        lo, hi = cq.min_offset, cq.max_offset
        while lo < hi:
            mid = (lo + hi) // 2
            ts = self.message_store_timestamp(topic, queue_id, mid)
            if 0 <= ts < timestamp_ms:
                lo = mid + 1
            else:
                hi = mid
        return lo

    # ------------------------------------------------------------------ getMessage

    def get_message(self, topic: str, queue_id: int, offset: int, max_msg_nums: int,
                    tag_filter: Callable[[int], bool] | None = None,
                    max_total_bytes: int | None = None, per_message: bool = True) -> GetMessageResult:
        """Up to ``max_msg_nums`` messages of a queue from ``offset``, or the status saying why none.

        ``per_message=False`` leaves ``buffers`` empty (the spans, count and size are the same): a pull
        writes the spans and never looks at a message alone, and 32 slices it would not use cost a
        fifth of its walk."""
        cq = self.dispatcher.cq(topic, queue_id)
        if cq is None:
            return GetMessageResult(GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, self._correct(offset, 0), 0, 0)
        lo, hi = cq.min_offset, cq.max_offset
        if hi == 0:
            return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, self._correct(offset, 0), lo, hi)
        if offset < lo:
            return GetMessageResult(GetMessageStatus.OFFSET_TOO_SMALL, self._correct(offset, lo), lo, hi)
        if offset == hi:
            return GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, offset, lo, hi)
        if offset > hi:
            return GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_BADLY,
                                    self._correct(offset, lo if lo == 0 else hi), lo, hi)
        units = cq.units(offset, max(16000 // UNIT_SIZE, max_msg_nums))
        if units is None:
            per_file = cq.file_size // UNIT_SIZE
            return GetMessageResult(GetMessageStatus.OFFSET_FOUND_NULL,
                                    self._correct(offset, offset + per_file - offset % per_file), lo, hi)
        if _compiled is not None:
            result = _compiled.read_units(self, units, offset, max_msg_nums, tag_filter, max_total_bytes,
                                          per_message)
        else:
            result = self._read_units(units, offset, max_msg_nums, tag_filter, max_total_bytes, per_message)
        result.min_offset, result.max_offset = lo, hi
        return result

    def _correct(self, old: int, new: int) -> int:
        """Offset corrections are not applied on a slave unless offsetCheckInSlave."""
        if self.config.is_slave and not self.config.offset_check_in_slave:
            return old
        return new

    def _read_units(self, units: memoryview, offset: int, max_msg_nums: int,
                    tag_filter: Callable[[int], bool] | None,
                    max_total_bytes: int | None, per_message: bool = True) -> GetMessageResult:
        cfg = self.config
        cl = self.commitlog
        max_phy = cl.max_offset
        min_phy = cl.min_offset
        status = GetMessageStatus.NO_MATCHED_MESSAGE
        buffers: list[memoryview] = []
        spans: list[memoryview] = []
        span_lo, span_hi, span_file_lo = 0, -1, 0  # the last span: its commitlog range, its file's start
        total = count = 0
        next_phy_file_start = 0
        in_disk = False
        scanned = 0
        mem_bytes = cfg.max_transfer_bytes_on_message_in_memory
        mem_count = cfg.max_transfer_count_on_message_in_memory
        file_lo = file_hi = 0  # the commitlog file read last: [file_lo, file_hi) written, mapped at file_mv
        file_mv = span_mv = memoryview(b"")
        for phys, size, tags in UNIT.iter_unpack(units):
            if size == BLANK_UNIT_SIZE or phys < next_phy_file_start or phys < min_phy:
                scanned += 1
                continue
            in_disk = max_phy - phys > self._in_disk_bytes
            if count:
                limit_bytes, limit_count = ((cfg.max_transfer_bytes_on_message_in_disk,
                                             cfg.max_transfer_count_on_message_in_disk) if in_disk
                                            else (mem_bytes, mem_count))
                if (count >= max_msg_nums or count >= limit_count or total + size > limit_bytes
                        or (max_total_bytes is not None and total + size > max_total_bytes)):
                    break
            scanned += 1
            if tag_filter is not None and not tag_filter(tags):
                if not count:
                    status = GetMessageStatus.NO_MATCHED_MESSAGE
                continue
            if not file_lo <= phys <= file_hi - size:
                view = cl.file_view(phys)
                if view is None or phys + size > view[0] + view[1]:
                    if not count:
                        status = GetMessageStatus.MESSAGE_WAS_REMOVING
                    next_phy_file_start = cl.next_file_start(phys)
                    continue
                file_lo, written, file_mv = view
                file_hi = file_lo + written
            if per_message:
                buffers.append(file_mv[phys - file_lo:phys - file_lo + size])
            if phys != span_hi or span_mv is not file_mv:  # not right after the last message in the same file
                if count:
                    spans.append(span_mv[span_lo - span_file_lo:span_hi - span_file_lo])
                span_mv, span_file_lo, span_lo = file_mv, file_lo, phys
            span_hi = phys + size
            count += 1
            total += size
        if count:
            status = GetMessageStatus.FOUND
            spans.append(span_mv[span_lo - span_file_lo:span_hi - span_file_lo])
        return GetMessageResult(status, offset + scanned, 0, 0, buffers, count, total, in_disk, spans)
