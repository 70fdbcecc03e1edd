"""The FIFO table (pop/order.py): holds, delivery counts, and its file in Apache's consumerOrderInfo.json format."""

from __future__ import annotations

import json
from pathlib import Path

from mqtools.server.broker.pop.order import (
    CLEAN_SPAN_MS,
    FILE_NAME,
    NOT_IN_BATCH,
    STALE_POP,
    ConsumerOrderInfoManager,
)

POP = 1_000_000
NOW = 1_700_000_000_000

#: As Apache 5.5.0's broker writes one (fastjson: fields sorted, integer map keys unquoted): queue 0's batch is
#: offsets 5, 6 and 7, 5 acknowledged, 6 and 7 delivered once before, 6's invisible time changed to 90 s.
APACHE_FILE = (
    '{"table":{"T@G":{0:{"cm":1,"i":30000,"l":1700000000123,"o":[5,1,2],"oc":{6:1,7:1},'
    '"ot":{6:1700000090000},"popTime":1700000000000}},"Gone@G":{}}}'
)


def table(tmp_path: Path) -> ConsumerOrderInfoManager:
    return ConsumerOrderInfoManager(tmp_path)


def test_fifo_holds_the_queue_until_the_batch_is_acked_or_expires(tmp_path: Path) -> None:
    table = ConsumerOrderInfoManager(tmp_path)
    key = ("T", "G", 0)
    assert table.on_pop(key, POP, 1000, [5, 6], 7) == {5: 0, 6: 0}
    assert table.blocked(key, POP + 999) and not table.blocked(key, POP + 1000)
    assert table.on_pop(key, POP + 1000, 1000, [5, 6], 7) == {5: 1, 6: 1}  # delivered again
    assert table.ack(key, 5, POP) == STALE_POP
    assert table.ack(key, 9, POP + 1000) == NOT_IN_BATCH
    assert table.ack(key, 6, POP + 1000) == 5  # 5 still unacknowledged: the offset stays there
    assert table.blocked(key, POP + 1500)
    assert table.ack(key, 5, POP + 1000) == 7
    assert not table.blocked(key, POP + 1500)
    assert table.on_pop(key, POP + 2000, 1000, [7], 8) == {7: 0}


def test_fifo_change_of_invisible_time_moves_the_end(tmp_path: Path) -> None:
    table = ConsumerOrderInfoManager(tmp_path)
    key = ("T", "G", 0)
    table.on_pop(key, POP, 1000, [5], 6)
    assert table.change_invisible(key, 5, POP, POP + 5000) == POP + 5000
    assert table.blocked(key, POP + 4000)
    assert table.change_invisible(key, 5, POP + 1, POP + 9000) is None


def test_the_table_comes_back_from_its_file_holding_and_counting_on(tmp_path: Path) -> None:
    first = table(tmp_path)
    key = ("T", "G", 3)
    first.on_pop(key, NOW, 60_000, [10, 11, 12], 20)
    first.on_pop(key, NOW + 60_000, 60_000, [10, 11, 12], 20)  # the batch came again
    assert first.ack(key, 11, NOW + 60_000) == 10
    assert first.dirty
    first.persist()
    assert not first.dirty
    doc = json.loads((tmp_path / FILE_NAME).read_bytes())
    assert doc == {"table": {"T@G": {"3": {"popTime": NOW + 60_000, "i": 60_000, "o": [10, 1, 2], "l": NOW + 60_000,
                                           "cm": 2, "oc": {"10": 1, "11": 1, "12": 1}}}}}

    again = table(tmp_path)
    assert again.load()
    assert again.blocked(key, NOW + 119_999) and not again.blocked(key, NOW + 120_000)
    assert again.ack(key, 10, NOW) == STALE_POP  # the first delivery's receipt
    assert again.ack(key, 10, NOW + 60_000) == 12
    assert again.on_pop(key, NOW + 130_000, 60_000, [12, 13], 14) == {12: 2, 13: 0}


def test_a_file_written_by_apache_is_read_as_apache_reads_it(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_text(APACHE_FILE)
    t = table(tmp_path)
    assert t.load()
    key = ("T", "G", 0)
    assert list(t.batches) == [key]  # the empty entry holds nothing
    # held until the latest end of a message not acknowledged: 6's changed one, not popTime + i
    assert t.blocked(key, 1_700_000_089_999) and not t.blocked(key, 1_700_000_090_000)
    assert t.ack(key, 5, 1_700_000_000_000) == 6  # acknowledged already: still the first one not
    assert t.ack(key, 6, 1_700_000_000_000) == 7
    assert t.on_pop(key, NOW + 100_000, 1000, [7, 8], 9) == {7: 2, 8: 0}


def test_batches_the_committed_offset_passed_are_dropped(tmp_path: Path) -> None:
    t = table(tmp_path)
    t.on_pop(("T", "G", 0), NOW, 60_000, [5, 6], 7)
    t.on_pop(("T", "G", 1), NOW, 60_000, [5, 6], 7)
    t.on_pop(("T", "H", 0), NOW, 60_000, [5, 6], 7)
    committed = {("T", "G", 0): 7, ("T", "G", 1): 6}
    assert t.drop_settled(lambda topic, group, queue_id: committed.get((topic, group, queue_id), -1)) == 1
    assert set(t.batches) == {("T", "G", 1), ("T", "H", 0)}


def test_writing_drops_what_no_longer_exists_and_what_was_not_popped_for_a_day(tmp_path: Path) -> None:
    t = table(tmp_path)
    t.now_ms = lambda: NOW + CLEAN_SPAN_MS + 1
    t.exists = lambda topic, group, queue_id: topic == "T" and queue_id < 4
    t.on_pop(("T", "G", 0), NOW + 1, 60_000, [5], 6)
    t.on_pop(("T", "G", 1), NOW, 60_000, [5], 6)  # popped more than a day before
    t.on_pop(("T", "G", 4), NOW + 1, 60_000, [5], 6)  # the topic has 4 queues now
    t.on_pop(("Deleted", "G", 0), NOW + 1, 60_000, [5], 6)
    t.persist()
    assert json.loads((tmp_path / FILE_NAME).read_bytes())["table"] == {
        "T@G": {"0": {"popTime": NOW + 1, "i": 60_000, "o": [5], "l": NOW + 1, "cm": 0}}}


def test_a_malformed_file_falls_back_to_its_backup(tmp_path: Path) -> None:
    t = table(tmp_path)
    t.on_pop(("T", "G", 0), NOW, 60_000, [5], 6)
    t.persist()
    t.on_pop(("T", "G", 0), NOW + 1, 60_000, [5], 6)
    t.persist()  # the first version is the backup now
    (tmp_path / FILE_NAME).write_text('{"table":{"T@G":{0:{"o":[5]')
    again = table(tmp_path)
    assert again.load()
    assert again.batches[("T", "G", 0)].pop_time == NOW


def test_the_same_attempt_tried_again_gets_its_batch_at_once_with_the_same_counts(tmp_path: Path) -> None:
    t = table(tmp_path)
    key = ("T", "G", 0)
    t.on_pop(key, NOW, 60_000, [5, 6], 7, "attempt-1")
    assert t.blocked(key, NOW + 1) and t.blocked(key, NOW + 1, "attempt-2")
    assert not t.blocked(key, NOW + 1, "attempt-1")  # its answer was lost: the receive is tried again
    assert t.on_pop(key, NOW + 1, 60_000, [5, 6], 7, "attempt-1") == {5: 0, 6: 0}
    assert t.on_pop(key, NOW + 60_001, 60_000, [5, 6], 7, "attempt-2") == {5: 1, 6: 1}
    t.persist()
    again = table(tmp_path)
    again.load()
    assert again.batches[key].attempt_id == "attempt-2" and not again.blocked(key, NOW + 60_002, "attempt-2")
