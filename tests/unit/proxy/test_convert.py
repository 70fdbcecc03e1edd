"""Messages between gRPC and remoting: what SendMessage stores (Apache's SendMessageActivity) and what
ReceiveMessage hands back (GrpcConverter.buildMessage), field by field."""

from __future__ import annotations

import hashlib

import pytest

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.common import properties as P
from mqtools.common import sysflag
from mqtools.common.message import MessageExt
from mqtools.proxy.config import ProxyConfig
from mqtools.proxy.convert import delivery_ms, to_grpc, to_remoting
from mqtools.proxy.errors import Code, ProxyError

NOW = 1_790_000_000_000


def grpc_message(**system: object) -> pb.Message:
    msg = pb.Message(body=b"hello", user_properties={"color": "red", "size": "L"})
    msg.topic.name = "Orders"
    msg.system_properties.message_id = "0102FC0000000121470B1D039F00000000"
    msg.system_properties.message_type = pb.NORMAL
    for key, value in system.items():
        setattr(msg.system_properties, key, value)
    return msg


def convert(msg: pb.Message, config: ProxyConfig | None = None, peer: str = "10.0.0.9:5555"):
    return to_remoting(msg, config or ProxyConfig(), producer_group="Orders", peer=peer, now_ms=NOW)


def test_user_and_system_properties_become_remoting_properties() -> None:
    msg = grpc_message(tag="TagA")
    msg.system_properties.keys.extend(["k1", "k2"])
    msg.system_properties.born_host = "192.168.1.7"
    msg.system_properties.born_timestamp.FromMilliseconds(NOW - 5)
    msg.system_properties.trace_context = "00-abc-def-01"
    out = convert(msg)
    props = out.message.properties
    assert out.message.topic == "Orders" and out.message.body == b"hello"
    assert props["color"] == "red" and props["size"] == "L"
    assert props[P.TAGS] == "TagA"
    assert props[P.KEYS] == "k1 k2"
    assert props[P.UNIQ_KEY] == "0102FC0000000121470B1D039F00000000"
    assert props[P.PGROUP] == "Orders"
    assert props[P.RECONSUME_TIME] == "0"
    assert props["__BORNHOST"] == "192.168.1.7"
    assert props["BORN_TIMESTAMP"] == str(NOW - 5) and out.born_ms == NOW - 5
    assert props["TRACE_CONTEXT"] == "00-abc-def-01"
    assert P.SHARDING_KEY not in props and "TIMER_DELIVER_MS" not in props and P.TRAN_MSG not in props
    assert out.sys_flag == 0


def test_born_host_defaults_to_the_peer_and_born_time_to_now() -> None:
    out = convert(grpc_message())
    assert out.message.properties["__BORNHOST"] == "10.0.0.9:5555"
    assert "BORN_TIMESTAMP" not in out.message.properties and out.born_ms == NOW


def test_message_group_is_the_sharding_key() -> None:
    out = convert(grpc_message(message_type=pb.FIFO, message_group="order-42"))
    assert out.message.properties[P.SHARDING_KEY] == "order-42"
    assert out.message_group == "order-42"


def test_delivery_timestamp_is_timer_deliver_ms() -> None:
    msg = grpc_message(message_type=pb.DELAY)
    msg.system_properties.delivery_timestamp.FromMilliseconds(NOW + 3_000)
    assert convert(msg).message.properties["TIMER_DELIVER_MS"] == str(NOW + 3_000)


def test_delivery_timestamp_in_milliseconds_as_seconds_is_read_as_milliseconds() -> None:
    """The 5.1.2 Python client writes the delivery time's milliseconds into Timestamp.seconds."""
    msg = grpc_message(message_type=pb.DELAY)
    msg.system_properties.delivery_timestamp.seconds = NOW + 3_000
    assert convert(msg).message.properties["TIMER_DELIVER_MS"] == str(NOW + 3_000)
    assert delivery_ms(msg.system_properties.delivery_timestamp) == NOW + 3_000


def test_delivery_too_far_ahead_is_illegal_delivery_time() -> None:
    msg = grpc_message(message_type=pb.DELAY)
    msg.system_properties.delivery_timestamp.FromMilliseconds(NOW + 2 * 24 * 3600 * 1000)
    with pytest.raises(ProxyError) as err:
        convert(msg)
    assert err.value.code == Code.ILLEGAL_DELIVERY_TIME


def test_transactional_message_is_a_half_message() -> None:
    msg = grpc_message(message_type=pb.TRANSACTION)
    msg.system_properties.orphaned_transaction_recovery_duration.FromSeconds(30)
    out = convert(msg)
    assert out.message.properties[P.TRAN_MSG] == "true"
    assert out.message.properties[P.CHECK_IMMUNITY_TIME_IN_SECONDS] == "30"
    assert out.sys_flag == sysflag.TRANSACTION_PREPARED_TYPE


def test_gzip_body_is_sent_compressed() -> None:
    assert convert(grpc_message(body_encoding=pb.GZIP)).sys_flag == sysflag.COMPRESSED_FLAG


@pytest.mark.parametrize(("change", "code"), [
    (lambda m: m.user_properties.update({"TAGS": "x"}), Code.ILLEGAL_MESSAGE_PROPERTY_KEY),
    (lambda m: m.user_properties.update({"bad\x01key": "x"}), Code.ILLEGAL_MESSAGE_PROPERTY_KEY),
    (lambda m: setattr(m, "body", b""), Code.MESSAGE_BODY_EMPTY),
    (lambda m: setattr(m, "body", b"x" * (4 * 1024 * 1024 + 1)), Code.MESSAGE_BODY_TOO_LARGE),
    (lambda m: setattr(m.system_properties, "tag", "a|b"), Code.ILLEGAL_MESSAGE_TAG),
    (lambda m: setattr(m.system_properties, "tag", "  "), Code.ILLEGAL_MESSAGE_TAG),
    (lambda m: m.system_properties.keys.append("k\x07"), Code.ILLEGAL_MESSAGE_KEY),
    (lambda m: setattr(m.system_properties, "message_id", " "), Code.ILLEGAL_MESSAGE_ID),
    (lambda m: setattr(m.system_properties, "message_group", "g" * 64), Code.ILLEGAL_MESSAGE_GROUP),
    (lambda m: m.user_properties.update({f"p{i}": "v" for i in range(129)}), Code.MESSAGE_PROPERTIES_TOO_LARGE),
    (lambda m: m.user_properties.update({"big": "v" * 17000}), Code.MESSAGE_PROPERTIES_TOO_LARGE),
])
def test_bad_messages_are_refused_with_apaches_codes(change, code) -> None:
    msg = grpc_message()
    change(msg)
    with pytest.raises(ProxyError) as err:
        convert(msg)
    assert err.value.code == code


def stored(**props: str) -> MessageExt:
    return MessageExt(topic="Orders", body=b"payload", properties={P.UNIQ_KEY: "UNIQ1", **props}, queue_id=3,
                      queue_offset=17, born_timestamp=NOW - 100, born_host=("10.1.1.1", 4444),
                      store_timestamp=NOW - 50, store_host=("10.2.2.2", 10911), msg_id="OFFSETID",
                      reconsume_times=2)


def test_stored_message_becomes_a_grpc_message() -> None:
    msg = to_grpc(stored(**{P.TAGS: "TagA", P.KEYS: "k1 k2", "color": "red", "POP_CK": "handle 1",
                            P.SHARDING_KEY: "g1", "TRACE_CONTEXT": "tc"}))
    sp = msg.system_properties
    assert msg.topic.name == "Orders" and msg.body == b"payload"
    assert sp.tag == "TagA" and list(sp.keys) == ["k1", "k2"]
    assert sp.message_id == "UNIQ1"
    assert sp.body_digest.type == pb.MD5 and sp.body_digest.checksum == hashlib.md5(b"payload").hexdigest().upper()
    assert sp.body_encoding == pb.IDENTITY
    assert sp.message_type == pb.FIFO and sp.message_group == "g1"
    assert sp.born_timestamp.ToMilliseconds() == NOW - 100 and sp.born_host == "10.1.1.1:4444"
    assert sp.store_timestamp.ToMilliseconds() == NOW - 50 and sp.store_host == "10.2.2.2:10911"
    assert sp.receipt_handle == "handle 1"
    assert sp.queue_id == 3 and sp.queue_offset == 17
    assert sp.delivery_attempt == 3
    assert sp.trace_context == "tc"
    assert msg.user_properties["color"] == "red"
    assert "TAGS" not in msg.user_properties and "UNIQ_KEY" not in msg.user_properties
    assert "POP_CK" not in msg.user_properties


@pytest.mark.parametrize(("props", "kind"), [
    ({P.TRAN_MSG: "true"}, pb.TRANSACTION),
    ({"TIMER_DELIVER_MS": str(NOW)}, pb.DELAY),
    ({P.DELAY: "3"}, pb.DELAY),
    ({P.SHARDING_KEY: "g"}, pb.FIFO),
    ({}, pb.NORMAL),
])
def test_message_type_follows_the_properties(props: dict[str, str], kind: int) -> None:
    assert to_grpc(stored(**props)).system_properties.message_type == kind


def test_delivery_timestamp_born_host_property_and_dead_letter_origin() -> None:
    msg = to_grpc(stored(TIMER_DELIVER_MS=str(NOW + 9), __BORNHOST="172.16.0.1", DLQ_ORIGIN_TOPIC="Orders",
                         DLQ_ORIGIN_MESSAGE_ID="M1"), topic="Asked")
    sp = msg.system_properties
    assert sp.delivery_timestamp.ToMilliseconds() == NOW + 9
    assert sp.born_host == "172.16.0.1"
    assert sp.dead_letter_queue.topic == "Orders" and sp.dead_letter_queue.message_id == "M1"
    assert msg.topic.name == "Asked"


def test_message_id_falls_back_to_the_offset_id() -> None:
    msg = stored()
    del msg.properties[P.UNIQ_KEY]
    assert to_grpc(msg).system_properties.message_id == "OFFSETID"


def test_round_trip_keeps_what_the_client_set() -> None:
    msg = grpc_message(tag="T", message_type=pb.FIFO, message_group="grp")
    msg.system_properties.keys.append("key-1")
    out = convert(msg)
    back = to_grpc(MessageExt(topic=out.message.topic, body=out.message.body, properties=out.message.properties,
                              born_timestamp=out.born_ms))
    assert back.system_properties.tag == "T" and list(back.system_properties.keys) == ["key-1"]
    assert back.system_properties.message_group == "grp" and back.system_properties.message_type == pb.FIFO
    assert back.system_properties.message_id == msg.system_properties.message_id
    assert back.user_properties["color"] == "red" and back.body == b"hello"


@pytest.mark.parametrize("name", ["ORIGIN_GROUP", "_SYS_MSG_PRIORITY_", "__LITE_TOPIC"])
def test_apache_5_5_system_properties_are_neither_handed_out_nor_taken(name: str) -> None:
    """5.5.0's MessageConst.STRING_HASH_SET: Apache 5's revive stamps ORIGIN_GROUP on a message it puts back."""
    assert name not in to_grpc(stored(**{name: "x", "color": "red"})).user_properties
    msg = grpc_message()
    msg.user_properties[name] = "x"
    with pytest.raises(ProxyError) as exc:
        convert(msg)
    assert exc.value.code == Code.ILLEGAL_MESSAGE_PROPERTY_KEY
