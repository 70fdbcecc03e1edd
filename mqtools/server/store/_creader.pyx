# cython: language_level=3, boundscheck=False, wraparound=False
"""A pull's walk over its consume queue units, compiled: QueueReader._read_units (reader.py) in one typed loop.

reader.py's method is the source of truth and what runs without this module (not built, or MQ_PURE_PYTHON
set). A drain of a backlog spent a fifth of the broker's time in that loop (a struct unpack, a dozen
comparisons and attribute reads per unit); here a unit is three big-endian reads. The answer is the same
GetMessageResult, with the same zero-copy slices of the commitlog (per message, and joined where adjacent); tests/unit/store/test_creader.py holds
both to the same results over tag filters, limits, blank units, removed files and file boundaries.
"""

from libc.stdint cimport int32_t, int64_t

from mqtools.common._layout cimport rd32, rd64

from mqtools.server.store.consume_queue import BLANK_UNIT_SIZE, UNIT_SIZE
from mqtools.server.store.results import GetMessageResult, GetMessageStatus

cdef int64_t BLANK = BLANK_UNIT_SIZE
cdef Py_ssize_t UNIT = UNIT_SIZE
cdef object FOUND = GetMessageStatus.FOUND
cdef object NO_MATCHED_MESSAGE = GetMessageStatus.NO_MATCHED_MESSAGE
cdef object MESSAGE_WAS_REMOVING = GetMessageStatus.MESSAGE_WAS_REMOVING
cdef object EMPTY = memoryview(b"")


def read_units(reader, units, int64_t offset, int64_t max_msg_nums, tag_filter, max_total_bytes,
               bint per_message=True):
    """QueueReader._read_units(units, offset, max_msg_nums, tag_filter, max_total_bytes, per_message)
    of `reader`."""
    cdef const unsigned char[::1] unit_bytes = units
    cdef const unsigned char *p
    cfg = reader.config
    cl = reader.commitlog
    cdef int64_t max_phy = cl.max_offset
    cdef int64_t min_phy = cl.min_offset
    cdef int64_t in_disk_bytes = reader._in_disk_bytes
    cdef int64_t mem_bytes = cfg.max_transfer_bytes_on_message_in_memory
    cdef int64_t mem_count = cfg.max_transfer_count_on_message_in_memory
    cdef int64_t disk_bytes = cfg.max_transfer_bytes_on_message_in_disk
    cdef int64_t disk_count = cfg.max_transfer_count_on_message_in_disk
    cdef bint capped = max_total_bytes is not None
    cdef int64_t cap = max_total_bytes if capped else 0
    cdef int64_t total = 0, next_phy_file_start = 0, scanned = 0, file_lo = 0, file_hi = 0
    cdef int64_t phys, limit_bytes, limit_count, count = 0
    cdef int64_t span_lo = 0, span_hi = -1, span_file_lo = 0  # the last span: its commitlog range, its file's start
    cdef int32_t size
    cdef bint in_disk = False
    cdef Py_ssize_t i, n = unit_bytes.shape[0] // UNIT
    status = NO_MATCHED_MESSAGE
    buffers = []
    spans = []
    file_mv = span_mv = EMPTY
    for i in range(n):
        p = &unit_bytes[i * UNIT]
        phys = rd64(p)
        size = rd32(p + 8)
        if size == BLANK or phys < next_phy_file_start or phys < min_phy:
            scanned += 1
            continue
        in_disk = max_phy - phys > in_disk_bytes
        if count:
            if in_disk:
                limit_bytes, limit_count = disk_bytes, disk_count
            else:
                limit_bytes, limit_count = mem_bytes, mem_count
            if (count >= max_msg_nums or count >= limit_count or total + size > limit_bytes
                    or (capped and total + size > cap)):
                break
        scanned += 1
        if tag_filter is not None and not tag_filter(rd64(p + 12)):
            if not count:
                status = NO_MATCHED_MESSAGE
            continue
        if not (file_lo <= phys <= file_hi - size):
            view = cl.file_view(phys)
            if view is None or phys + size > view[0] + view[1]:
                if not count:
                    status = MESSAGE_WAS_REMOVING
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
        status = FOUND
        spans.append(span_mv[span_lo - span_file_lo:span_hi - span_file_lo])
    return GetMessageResult(status, offset + scanned, 0, 0, buffers, count, total, in_disk, spans)
