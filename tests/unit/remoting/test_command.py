"""RemotingCommand headers (JSON and ROCKETMQ binary), typed headers, bodies and fastjson input."""

from __future__ import annotations

import struct

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtools.remoting.bodies import BrokerData, ClusterInfo, KVTable, QueueData, TopicRouteData
from mqtools.remoting.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from mqtools.remoting.command import RemotingCommand, decode_json_header, decode_rocketmq_header
from mqtools.remoting.frame import FrameDecoder
from mqtools.remoting.headers import RegisterBrokerRequestHeader, RegisterBrokerResponseHeader


def _roundtrip(cmd: RemotingCommand) -> RemotingCommand:
    (out,) = FrameDecoder().feed(cmd.encode())
    return out


@settings(max_examples=200, deadline=None)
@given(
    code=st.integers(-32768, 32767),
    ext=st.dictionaries(st.text(min_size=1, max_size=12), st.text(max_size=30), max_size=5),
    remark=st.one_of(st.none(), st.text(min_size=1, max_size=40)),
    opaque=st.integers(0, 2**31 - 1),
    serialize_type=st.sampled_from(list(SerializeType)),
)
def test_header_round_trip_both_serializations(
    code: int, ext: dict[str, str], remark: str | None, opaque: int, serialize_type: SerializeType
) -> None:
    cmd = RemotingCommand(code=code, ext_fields=ext, remark=remark, opaque=opaque, flag=2,
                          serialize_type=serialize_type, language=LanguageCode.CPP)
    out = _roundtrip(cmd)
    assert (out.code, out.ext_fields, out.remark, out.opaque, out.flag, out.language, out.serialize_type) == (
        code, ext, remark, opaque, 2, LanguageCode.CPP, serialize_type
    )
    assert out.is_oneway and not out.is_response


def test_json_header_layout_is_what_java_writes() -> None:
    cmd = RemotingCommand(code=105, ext_fields={"topic": "T"}, opaque=7, flag=0, version=407)
    head, body = cmd.encode_parts()
    assert body is None
    length, ori = struct.unpack(">ii", head[:8])
    assert ori >> 24 == 0 and length == len(head) - 4
    obj = orjson.loads(head[8:])
    assert obj == {"code": 105, "language": "PYTHON", "version": 407, "opaque": 7, "flag": 0,
                   "serializeTypeCurrentRPC": "JSON", "extFields": {"topic": "T"}}


def test_rocketmq_binary_header_layout() -> None:
    cmd = RemotingCommand(code=17, ext_fields={"a": "bc"}, remark="r", opaque=9, flag=1, version=407,
                          language=LanguageCode.JAVA, serialize_type=SerializeType.ROCKETMQ)
    header = cmd.encode_header()
    expected = struct.pack(">hbhii", 17, 0, 407, 9, 1) + struct.pack(">i", 1) + b"r"
    expected += struct.pack(">i", 2 + 1 + 4 + 2) + struct.pack(">h", 1) + b"a" + struct.pack(">i", 2) + b"bc"
    assert header == expected
    assert decode_rocketmq_header(header).ext_fields == {"a": "bc"}


def test_json_header_from_other_clients_tolerates_numbers_and_language_names() -> None:
    raw = b'{"code":105,"language":"CPP","version":0,"opaque":3,"flag":0,"extFields":{"n":5,"b":true}}'
    cmd = decode_json_header(raw)
    assert cmd.language == LanguageCode.CPP
    assert cmd.ext_fields == {"n": "5", "b": "true"}


def test_response_uses_the_request_serialize_type() -> None:
    for st_ in SerializeType:
        req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, serialize_type=st_)
        resp = req.response(ResponseCode.TOPIC_NOT_EXIST, "no")
        assert resp.serialize_type == st_ and resp.opaque == req.opaque and resp.is_response
        assert _roundtrip(resp).serialize_type == st_


def test_response_is_the_command_the_keyword_form_builds() -> None:
    """response() passes RemotingCommand's fields positionally (a send's hot path): same command, same bytes."""
    for st_ in SerializeType:
        req = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"b": "T"}, serialize_type=st_)
        resp = req.response(ResponseCode.SUCCESS, "fine", {"msgId": "ID", "queueOffset": "3"}, b"body")
        assert resp == RemotingCommand(code=0, ext_fields={"msgId": "ID", "queueOffset": "3"}, body=b"body",
                                       remark="fine", opaque=req.opaque, flag=1, language=LanguageCode.JAVA,
                                       version=resp.version, serialize_type=st_)
        assert type(resp.code) is int and resp.language == LanguageCode.JAVA and resp.ext_fields is not None
        assert _roundtrip(resp).encode() == resp.encode()


def test_typed_headers_map_camel_case_ext_fields() -> None:
    h = RegisterBrokerRequestHeader(broker_name="b", broker_addr="h:1", cluster_name="c", ha_server_addr="h:2",
                                    broker_id=1, compressed=False)
    ext = h.to_ext()
    assert ext["brokerName"] == "b" and ext["brokerId"] == "1" and ext["compressed"] == "false"
    assert RegisterBrokerRequestHeader.from_ext(ext) == h
    assert RegisterBrokerResponseHeader().to_ext() == {}


def test_route_body_is_standard_json_and_reads_fastjson_numeric_keys() -> None:
    route = TopicRouteData(
        queue_datas=[QueueData("b", 4, 4, 6, 0)],
        broker_datas=[BrokerData("c", "b", {0: "h:1", 1: "h:2"})],
    )
    std = orjson.loads(route.to_json())
    assert std["brokerDatas"][0]["brokerAddrs"] == {"0": "h:1", "1": "h:2"}
    java = b'{"brokerDatas":[{"brokerAddrs":{0:"h:1",1:"h:2"},"brokerName":"b","cluster":"c"}],' \
           b'"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    assert TopicRouteData.from_json(java) == route


def test_cluster_info_and_kv_table_bodies() -> None:
    info = ClusterInfo({"b": BrokerData("c", "b", {0: "h:1"})}, {"c": {"b"}})
    assert ClusterInfo.from_json(info.to_json()) == info
    assert orjson.loads(info.to_json())["clusterAddrTable"] == {"c": ["b"]}
    assert KVTable.from_json(KVTable({"k": "v"}).to_json()).table == {"k": "v"}
