"""The revive topic's checkpoint and ack bodies, byte for byte as Apache 5.5.0 writes them.

The expected strings are what Apache 5.5.0's own classes (rocketmq-store/rocketmq-remoting 5.5.0 with their
fastjson2) printed for the same values: PopCheckPoint, AckMsg, BatchAckMsg and BatchAckMessageRequestBody.
"""

from __future__ import annotations

import orjson
import pytest

from mqtools.common import properties as P
from mqtools.common.codec import decode_stored, encode_stored
from mqtools.common.message import MessageExt
from mqtools.remoting.pop import BatchAck, BatchAckMessageRequestBody
from mqtools.server.broker.pop.records import (
    ACK_TAG,
    BATCH_ACK_TAG,
    CK_TAG,
    AckMsg,
    BatchAckMsg,
    PopCheckPoint,
    ack_message,
    ck_message,
    parse_record,
    revive_topic,
)

APACHE_CK = (
    '{"bm":0,"bn":"b","c":"G","d":[0,1,3],"it":30000,"n":3,"pt":1700000000000,"q":2,'
    '"reviveTime":1700000030000,"ro":7,"so":10,"sp":false,"t":"T"}'
)
APACHE_CK_REPUT = (
    '{"bm":0,"c":"G","it":0,"n":0,"pt":0,"q":0,"reviveTime":0,"ro":0,"rp":"2","so":0,"sp":false,"t":"T"}'
)
APACHE_ACK = '{"ao":11,"bn":"b","c":"G","pt":1700000000000,"q":2,"so":10,"t":"T"}'
APACHE_BATCH_ACK = '{"ao":-1,"aol":[10,13],"bn":"b","c":"G","pt":1700000000000,"q":2,"so":10,"t":"T"}'
APACHE_BATCH_BODY = (
    '{"acks":[{"b":"CQI=","c":"G","it":30000,"pt":1700000000000,"q":2,"r":"0","rq":1,"so":10,'
    '"t":"T"}],"brokerName":"b"}'
)


def sample_ck() -> PopCheckPoint:
    return PopCheckPoint(
        topic="T",
        cid="G",
        queue_id=2,
        start_offset=10,
        pop_time=1700000000000,
        invisible_time=30000,
        num=3,
        broker_name="b",
        queue_offset_diff=[0, 1, 3],
        revive_offset=7,
    )


def test_a_checkpoint_is_written_as_apache_writes_it_and_read_back() -> None:
    ck = sample_ck()
    assert ck.to_json().decode() == APACHE_CK
    assert PopCheckPoint.from_json(APACHE_CK.encode()) == ck
    reput = PopCheckPoint(
        topic="T", cid="G", queue_id=0, start_offset=0, pop_time=0, invisible_time=0, num=0, re_put_times="2"
    )
    assert reput.to_json().decode() == APACHE_CK_REPUT


def test_checkpoint_offsets_follow_the_diffs_and_old_checkpoints_are_consecutive() -> None:
    ck = sample_ck()
    assert [ck.offset_at(i) for i in range(3)] == [10, 11, 13]
    assert (ck.index_of(13), ck.index_of(12), ck.index_of(9)) == (2, -1, -1)
    assert ck.end_offset == 14 and ck.revive_time == 1700000030000
    old = PopCheckPoint.from_json(b'{"so":5,"n":2,"t":"T","c":"G","pt":1,"it":2,"q":0}')
    assert (old.offset_at(1), old.index_of(6), old.index_of(7), old.end_offset) == (6, 1, -1, 7)


def test_acks_are_written_as_apache_writes_them_and_long_names_are_read() -> None:
    ack = AckMsg(11, 10, "G", "T", 2, 1700000000000, "b")
    assert ack.to_json().decode() == APACHE_ACK
    assert AckMsg.from_json(APACHE_ACK.encode()) == ack
    long = (
        b'{"ackOffset":100,"brokerName":"bn","consumerGroup":"g","popTime":5,"queueId":3,"startOffset":200,'
        b'"topic":"t"}'
    )
    assert AckMsg.from_json(long) == AckMsg(100, 200, "g", "t", 3, 5, "bn")
    batch = BatchAckMsg(-1, 10, "G", "T", 2, 1700000000000, "b", ack_offset_list=[10, 13])
    assert batch.to_json().decode() == APACHE_BATCH_ACK
    assert BatchAckMsg.from_json(APACHE_BATCH_ACK.encode()) == batch
    assert batch.offsets == [10, 13] and ack.offsets == [11]


def test_the_merge_key_names_a_checkpoint_and_its_acks_alike() -> None:
    ck = sample_ck()
    assert (
        ck.key("own") == AckMsg(13, 10, "G", "T", 2, 1700000000000, "b").key("own") == "TG2101700000000000b"
    )
    no_name = AckMsg(13, 10, "G", "T", 2, 1700000000000)
    assert no_name.key("b") == ck.key("x")  # an ack without a broker name is this broker's


def test_the_batch_ack_body_matches_apache_with_its_bitset() -> None:
    body = BatchAckMessageRequestBody(
        "b", [BatchAck("G", "T", "0", 10, 2, 1, 1700000000000, 30000, [0, 3, 9])]
    )
    assert body.to_json().decode() == APACHE_BATCH_BODY
    back = BatchAckMessageRequestBody.from_json(APACHE_BATCH_BODY.encode())
    assert back.acks[0].indexes == [0, 3, 9] and back.broker_name == "b"


def test_revive_messages_carry_the_tags_and_unique_ids_apache_gives_them() -> None:
    topic = revive_topic("C")
    assert topic == "rmq_sys_REVIVE_LOG_C"
    ck = ck_message(topic, 3, sample_ck(), 5, ("127.0.0.1", 10911))
    assert (ck.topic, ck.queue_id, ck.properties[P.TAGS]) == (topic, 3, CK_TAG)
    assert ck.properties[P.UNIQ_KEY] == "T@2@10@G@1700000000000@b@ck"
    ack = ack_message(topic, 3, AckMsg(11, 10, "G", "T", 2, 1700000000000, "b"), 5, ("127.0.0.1", 1))
    assert (ack.properties[P.TAGS], ack.properties[P.UNIQ_KEY]) == (ACK_TAG, "T@2@11@G@1700000000000@b@ack")
    batch = ack_message(
        topic, 0, BatchAckMsg(-1, 10, "G", "T", 2, 7, "b", ack_offset_list=[10, 13]), 5, ("127.0.0.1", 1)
    )
    assert (batch.properties[P.TAGS], batch.properties[P.UNIQ_KEY]) == (
        BATCH_ACK_TAG,
        "T@2@[10, 13]@G@7@bAck",
    )
    assert P.WAIT not in ck.properties  # a checkpoint waits for the flush like any put
    assert ck.properties["TIMER_DELIVER_MS"] == "5"  # when it reached the revive queue: Apache's revive clock


def test_parse_record_reads_a_stored_revive_message() -> None:
    msg = MessageExt(
        topic="rmq_sys_REVIVE_LOG_C",
        body=APACHE_CK.encode(),
        properties={P.TAGS: CK_TAG},
        born_host=("127.0.0.1", 1),
        store_host=("127.0.0.1", 2),
    )
    stored = decode_stored(encode_stored(msg))
    assert parse_record(stored.tags, stored.body) == sample_ck()
    assert parse_record("other", b"{}") is None
    for bad in (b"[1]", b"{not json", b'{"t":"T"}'):
        with pytest.raises(ValueError):
            parse_record(CK_TAG, bad)
    with pytest.raises(ValueError):
        parse_record(ACK_TAG, b'"text"')


def test_unknown_fields_of_newer_brokers_are_ignored() -> None:
    data = orjson.loads(APACHE_CK)
    data["future"] = 1
    assert PopCheckPoint.from_json(orjson.dumps(data)) == sample_ck()


@pytest.mark.parametrize(("body", "why"), [
    ('{"c":"G","d":[0],"n":2,"t":"T"}', "2 messages with 1 offset diffs"),
    ('{"c":"G","n":500000000,"t":"T"}', "500000000 messages"),
    ('{"c":"G","n":-1,"t":"T"}', "-1 messages"),
])
def test_a_checkpoint_no_pop_could_write_is_refused(body: str, why: str) -> None:
    """At most 32 messages (a bit each of the bitMap), and an offset diff for each when there are diffs."""
    with pytest.raises(ValueError, match=why):
        parse_record(CK_TAG, body.encode())
