"""A pull's walk over its units compiled (store/_creader.pyx) and QueueReader._read_units give the same answer
(issue 46: the drain of a backlog).

One store on tiny files (the commitlog and the consume queues roll), messages of several tags and sizes; the
first files deleted, so some units point below the commitlog's minimum. Both walks read the same units: the
store's own from every offset, and units put together by hypothesis from real ones, blank ones and ones that
point past what is written (a file being removed), under tag filters, byte caps and the in-memory and in-disk
transfer limits.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from unit.store.store_helpers import inner, tiny_config

from mqtools.common.hashing import java_hash
from mqtools.server.store import reader as reader_module
from mqtools.server.store.consume_queue import BLANK_UNIT, UNIT
from mqtools.server.store.message_store import MessageStore
from mqtools.server.store.results import GetMessageResult, GetMessageStatus

compiled = reader_module._compiled
pytestmark = pytest.mark.skipif(compiled is None, reason="the compiled reader is not built here (no C compiler at "
                                "install, or MQ_PURE_PYTHON set): nothing to compare")

TAGS = ["a", "b", "c"]
FILTERS = {"all": None, "a": {java_hash("a")}.__contains__, "b or c": {java_hash("b"), java_hash("c")}.__contains__,
           "none": set().__contains__}


def facts(result: GetMessageResult) -> tuple:
    joined = b"".join(result.buffers)
    assert b"".join(result.spans) == joined and len(result.spans) <= len(result.buffers)
    return (result.status, result.next_begin_offset, [bytes(b) for b in result.buffers], *facts_of_spans(result))


def both(reader, units: bytes | memoryview, offset: int, count: int, tag_filter, cap: int | None) -> tuple:
    """The facts of both walks, which must be equal; the last is the number of spans. Asked for the spans alone
    (a pull), each walk answers the same with no per-message slices."""
    python = facts(reader._read_units(units, offset, count, tag_filter, cap))
    c = facts(compiled.read_units(reader, units, offset, count, tag_filter, cap))
    assert c == python
    spans_only = (python[0], python[1], [], *python[3:])
    for result in (reader._read_units(units, offset, count, tag_filter, cap, per_message=False),
                   compiled.read_units(reader, units, offset, count, tag_filter, cap, False)):
        assert result.buffers == [] and b"".join(result.spans) == b"".join(python[2])
        assert (result.status, result.next_begin_offset, [], *facts_of_spans(result)) == spans_only
    return python


def facts_of_spans(result: GetMessageResult) -> tuple:
    return (result.message_count, result.buffer_total_size, result.suggest_pulling_from_slave,
            [len(b) for b in result.spans], len(result.spans))


async def filled(root) -> MessageStore:
    """Tiny files, 120 messages of three tags over two queues in runs of five (so a queue's messages lie next to
    each other in places), the first two commitlog files deleted."""
    s = MessageStore(tiny_config(root, max_transfer_bytes_on_message_in_memory=700,
                                 max_transfer_count_on_message_in_disk=3, max_transfer_bytes_on_message_in_disk=500),
                     clock=lambda: 1_700_000_000.5)
    await s.start()
    for i in range(120):
        assert (await s.put_message(inner(queue_id=i // 5 % 2, body=bytes([i]) * (50 + i * 7 % 200), TAGS=TAGS[i % 3]))).ok
    s.commitlog.queue.delete_first()
    s.commitlog.queue.delete_first()
    return s


def queue_units(s: MessageStore, queue_id: int) -> list[bytes]:
    """Every unit of a queue, across its files."""
    cq = s.dispatcher.cq("T", queue_id)
    out = []
    for index in range(cq.min_offset, cq.max_offset):
        units = cq.units(index, 1)
        out.append(bytes(units))
    return out


@pytest.mark.parametrize("in_disk", [False, True], ids=["in memory", "in disk"])
async def test_the_store_units_from_every_offset(tmp_path, in_disk):
    s = await filled(tmp_path)
    reader = s.reader
    if in_disk:
        reader._in_disk_bytes = 0  # every message counts as in disk: the smaller limits apply
    found = joined = 0
    assert s.commitlog.min_offset > 0 and queue_units(s, 0)[0] != BLANK_UNIT  # some units point below the minimum
    for queue_id in (0, 1):
        cq = s.dispatcher.cq("T", queue_id)
        for offset in range(cq.min_offset, cq.max_offset):
            units = cq.units(offset, 40)
            for count in (1, 4, 32):
                for tag_filter in FILTERS.values():
                    for cap in (None, 120, 10_000):
                        got = both(reader, units, offset, count, tag_filter, cap)
                        found += got[3]
                        joined += got[3] - got[-1]
    assert found > 0 and joined > 0
    await s.shutdown()


async def test_made_up_units(tmp_path):
    """Real units in any order, with blank ones and ones past the written end, under every filter and limit."""
    s = await filled(tmp_path)
    reader = s.reader
    real = queue_units(s, 0) + queue_units(s, 1)
    end = s.commitlog.max_offset
    odd = [BLANK_UNIT, UNIT.pack(end + 10, 100, java_hash("a")), UNIT.pack(end - 20, 100, java_hash("b")),
           UNIT.pack(0, 100, java_hash("c"))]

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(st.sampled_from(real + odd), max_size=40), st.integers(min_value=0, max_value=50),
           st.integers(min_value=1, max_value=40), st.sampled_from(list(FILTERS.values())),
           st.none() | st.integers(min_value=0, max_value=2000), st.booleans())
    @example([odd[1]], 0, 32, None, None, False)  # past the written end: the status says removing
    def check(units, offset, count, tag_filter, cap, in_disk):
        reader._in_disk_bytes = 0 if in_disk else 1 << 40
        seen.add(both(reader, b"".join(units), offset, count, tag_filter, cap)[0])

    seen: set[GetMessageStatus] = set()
    check()
    assert seen == {GetMessageStatus.FOUND, GetMessageStatus.NO_MATCHED_MESSAGE, GetMessageStatus.MESSAGE_WAS_REMOVING}
    await s.shutdown()
