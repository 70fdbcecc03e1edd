"""The proxy's small pure parts: receipt handles, POP answers turned into receipts, queue choice for message
groups (Guava's consistentHash over Java's String.hashCode), open transactions, the rmq-proxy.json config."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mqtools.common.hashing import java_hash
from mqtools.common.message import MessageExt
from mqtools.common.tls import TlsMode
from mqtools.proxy.config import ProxyConfig, ProxyConfigError, load_file
from mqtools.proxy.errors import Code, ProxyError, status_of
from mqtools.proxy.popping import apply_receipts, tag_matched, tags_of
from mqtools.proxy.receipt import ReceiptHandle, create_handle
from mqtools.proxy.sending import Transactions, consistent_hash
from mqtools.remoting.pop import PopMessageResponseHeader


def test_receipt_handle_decodes_apaches_nine_fields() -> None:
    text = create_handle("5 1790000000000 30000 2 0 broker-a 3 7", 8042)
    handle = ReceiptHandle.decode(text)
    assert (handle.start_offset, handle.retrieve_time, handle.invisible_time, handle.revive_queue_id) == (
        5, 1790000000000, 30000, 2)
    assert (handle.topic_type, handle.broker_name, handle.queue_id, handle.offset, handle.commit_log_offset) == (
        "0", "broker-a", 3, 7, 8042)
    assert handle.text == text
    assert handle.next_visible_time == 1790000030000
    assert handle.expired(1790000030000) and not handle.expired(1790000029999)
    assert handle.real_topic("T", "G") == "T"
    assert ReceiptHandle.decode("5 1 30000 2 1 broker-a 3 7").real_topic("T", "G") == "%RETRY%G_T"
    assert ReceiptHandle.decode("5 1 30000 2 2 broker-a 3 7").real_topic("T", "G") == "%RETRY%G+T"


@pytest.mark.parametrize("text", ["", "1 2 3", "a b c d 0 broker 1 2", "1 2 3 4 9 broker 1 2"])
def test_a_bad_receipt_handle_is_invalid_receipt_handle(text: str) -> None:
    with pytest.raises(ProxyError) as err:
        ReceiptHandle.decode(text)
    assert err.value.code == Code.INVALID_RECEIPT_HANDLE


def test_pop_answer_gives_each_message_its_receipt() -> None:
    msgs = [MessageExt(topic="T", queue_id=1, queue_offset=o, properties={}) for o in (10, 11)]
    msgs.append(MessageExt(topic="%RETRY%G+T", queue_id=0, queue_offset=4, properties={}))
    header = PopMessageResponseHeader(pop_time=1000, invisible_time=30000, revive_qid=2, rest_num=0,
                                      start_offset_info="0 1 10;2 0 4", msg_offset_info="0 1 10,11;2 0 4",
                                      order_count_info=None)
    apply_receipts(msgs, header, "T", "broker-a", order=False)
    assert [m.properties["POP_CK"] for m in msgs] == ["10 1000 30000 2 0 broker-a 1 10",
                                                      "10 1000 30000 2 0 broker-a 1 11",
                                                      "4 1000 30000 2 2 broker-a 0 4"]
    assert all(m.properties["1ST_POP_TIME"] == "1000" and m.topic == "T" for m in msgs)


def test_pop_answer_with_retry_and_normal_messages_of_one_queue_id_gives_each_its_own_offset() -> None:
    """The broker rewrites a POP retry message's topic to the one asked for and puts its POP_CK in: such a message
    must not count among the normal queue's when the receipts' offsets are matched by position."""
    retried = [MessageExt(topic="T", queue_id=0, queue_offset=o,
                          properties={"POP_CK": f"0 1000 30000 0 1 broker-a 0 {o}"}) for o in range(4)]
    normal = [MessageExt(topic="T", queue_id=0, queue_offset=o, properties={}) for o in range(4, 10)]
    header = PopMessageResponseHeader(pop_time=1000, invisible_time=30000, revive_qid=0, rest_num=0,
                                      start_offset_info="1 0 0;0 0 4", msg_offset_info="1 0 0,1,2,3;0 0 4,5,6,7,8,9",
                                      order_count_info=None)
    apply_receipts(retried + normal, header, "T", "broker-a", order=False)
    assert [m.properties["POP_CK"].split(" ")[7] for m in normal] == ["4", "5", "6", "7", "8", "9"]
    assert [m.properties["POP_CK"].split(" ")[0] for m in normal] == ["4"] * 6


def test_pop_answer_of_an_orderly_pop_sets_reconsume_times() -> None:
    msgs = [MessageExt(topic="T", queue_id=1, queue_offset=10, properties={})]
    header = PopMessageResponseHeader(pop_time=1000, invisible_time=30000, revive_qid=999, rest_num=0,
                                      start_offset_info="0 1 10", msg_offset_info="0 1 10",
                                      order_count_info="0 qo1%10 3")
    apply_receipts(msgs, header, "T", "broker-a", order=True)
    assert msgs[0].reconsume_times == 3


def test_tag_filter() -> None:
    assert tags_of("*") == set() and tags_of("") == set()
    assert tags_of("a || b") == {"a", "b"}
    assert tag_matched(set(), None) and tag_matched({"a"}, "a") and not tag_matched({"a"}, "b")
    assert not tag_matched({"a"}, None)


# Guava Hashing.consistentHash(String.hashCode(), n), computed by the same algorithm in Java 17.
GUAVA = [("g1", 8, 6), ("g1", 16, 9), ("g1", 100, 41), ("order-42", 4, 3), ("order-42", 16, 10),
         ("fifo-group-0", 4, 2), ("fifo-group-0", 100, 53), ("中文", 100, 80), ("a", 100, 29),
         ("polygenelubricants", 4, 2), ("polygenelubricants", 100, 58), ("zzzzzzzzzz", 100, 81), ("", 8, 0)]


@pytest.mark.parametrize(("key", "buckets", "bucket"), GUAVA)
def test_message_group_queue_is_guavas_consistent_hash(key: str, buckets: int, bucket: int) -> None:
    assert consistent_hash(java_hash(key), buckets) == bucket


def test_open_transactions_are_found_once_and_expire() -> None:
    now = [1000]
    tx = Transactions(expire_ms=500, clock_ms=lambda: now[0])
    tx.add("Orders", "broker-a", "Orders", 7, 8042, "TID")
    data = tx.poll("Orders", "TID")
    assert data is not None and (data.broker_name, data.tran_state_table_offset, data.commit_log_offset) == (
        "broker-a", 7, 8042)
    assert tx.poll("Orders", "TID") is None
    tx.add("Orders", "broker-a", "Orders", 7, 8042, "TID2")
    now[0] += 500
    assert tx.poll("Orders", "TID2") is None


def test_config_reads_apaches_json_keys(tmp_path: Path) -> None:
    path = tmp_path / "rmq-proxy.json"
    path.write_text(json.dumps({"rocketMQClusterName": "C1", "namesrvAddr": "127.0.0.1:9876", "proxyMode": "cluster",
                                "grpcServerPort": 18081, "remotingListenPort": 18080, "maxMessageSize": "1024",
                                "enableTopicMessageTypeCheck": False, "someApacheOnlyKey": 3}))
    config = ProxyConfig()
    config.apply(load_file(path))
    assert config.rocketmq_cluster_name == "C1" and config.namesrv_list == "127.0.0.1:9876"
    assert config.grpc_server_port == 18081 and config.remoting_listen_port == 18080
    assert config.max_message_size == 1024 and not config.enable_topic_message_type_check
    assert config.extra == {"someApacheOnlyKey": 3}


@pytest.mark.parametrize(("values", "words"), [
    ({"proxyMode": "remote"}, "'cluster' or 'local'"),  # local: `mq proxy start` refuses it (the broker hosts it)
    ({"grpcServerPort": "x"}, "grpcServerPort"),
    ({"grpcServerPort": 70000}, "port"),
    ({"tls.server.mode": "lenient"}, "expected one of disabled, permissive, enforcing"),
    ({"tls.server.mode": "permissive"}, "needs tlsCertPath and tlsKeyPath"),
])
def test_config_refuses_what_it_cannot_use(values: dict, words: str) -> None:
    with pytest.raises(ProxyConfigError, match=words):
        ProxyConfig().apply(values)


@pytest.mark.parametrize(("values", "mode"), [
    ({}, TlsMode.DISABLED),
    ({"tlsCertPath": "c.pem", "tlsKeyPath": "k.pem"}, TlsMode.PERMISSIVE),  # Apache's default with a certificate
    ({"tlsCertPath": "c.pem", "tlsKeyPath": "k.pem", "tls.server.mode": "ENFORCING"}, TlsMode.ENFORCING),
    ({"tlsCertPath": "c.pem", "tlsKeyPath": "k.pem", "tls.server.mode": "disabled"}, TlsMode.DISABLED),
    ({"tls.server.mode": "disabled"}, TlsMode.DISABLED),
])
def test_config_tls_server_mode(values: dict, mode: TlsMode) -> None:
    config = ProxyConfig()
    config.apply(values)
    assert config.tls_mode is mode


def test_config_file_that_is_not_json_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text("{nope")
    with pytest.raises(ProxyConfigError, match="not JSON"):
        load_file(path)


def test_errors_map_to_apaches_codes() -> None:
    from mqtools.client.errors import RequestTimeoutError, broker_error
    from mqtools.remoting.codes import ResponseCode

    assert status_of(broker_error(ResponseCode.SYSTEM_BUSY, "busy")).code == Code.TOO_MANY_REQUESTS
    assert status_of(broker_error(ResponseCode.TOPIC_NOT_EXIST, "no")).code == Code.TOPIC_NOT_FOUND
    assert status_of(broker_error(ResponseCode.SYSTEM_ERROR, "boom")).code == Code.INTERNAL_SERVER_ERROR
    assert status_of(RequestTimeoutError("slow")).code == Code.PROXY_TIMEOUT
    assert status_of(ProxyError(Code.ILLEGAL_TOPIC, "bad")).message == "bad"


class _Broker:
    """An instance whose one broker answers GET_TOPIC_CONFIG with the given topic config."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    async def invoke(self, addr, cmd, timeout=None, *, ok=(0,)):
        from mqtools.remoting.command import RemotingCommand

        resp = RemotingCommand.request(0, body=self.body)
        resp.code = 0
        return resp


async def test_topic_type_is_its_message_type_attribute() -> None:
    from mqtools.proxy.metadata import Metadata

    fifo = Metadata(_Broker(b'{"topicName":"T","attributes":{"message.type":"FIFO"}}'))  # type: ignore[arg-type]
    assert await fifo.topic_message_type("T", ["10.0.0.1:10911"]) == "FIFO"


async def test_topic_without_a_message_type_is_normal_as_in_apache() -> None:
    from mqtools.proxy.metadata import Metadata

    plain = Metadata(_Broker(b'{"topicName":"T"}'))  # type: ignore[arg-type]
    assert await plain.topic_message_type("T", ["10.0.0.1:10911"]) == "NORMAL"


async def test_auto_renewed_handles_are_renewed_ahead_and_acks_use_the_newest() -> None:
    from mqtools.proxy.renewal import Renewals

    now = [1_000_000]
    renewals = Renewals(clock_ms=lambda: now[0], invisible_ms=60_000)
    first = ReceiptHandle.decode(f"5 {now[0]} 60000 2 0 broker-a 3 7 8042")
    renewals.add("client", "G", "T", "M1", first)
    asked: list[tuple[str, int]] = []

    async def renew(handle: ReceiptHandle, group: str, topic: str, invisible: int) -> str:
        asked.append((handle.text, invisible))
        return f"7 {now[0]} {invisible} 2 0 broker-a 3 7 8042"

    assert renewals.renew_due(renew) == []  # 60 s left: not due yet
    now[0] += 51_000
    assert await asyncio.gather(*renewals.renew_due(renew)) == [True]
    assert asked == [(first.text, 60_000)]
    newest = await renewals.take("client", "G", "M1", first)
    assert newest.text == f"7 {now[0]} 60000 2 0 broker-a 3 7 8042"
    assert await renewals.take("client", "G", "M1", first) is first  # taken once: the client's own afterwards
    assert len(renewals) == 0


async def test_a_renewal_the_broker_refuses_and_a_gone_client_drop_their_handles() -> None:
    from mqtools.client.errors import broker_error
    from mqtools.proxy.renewal import CLEAR_INVISIBLE_MS, Renewals
    from mqtools.remoting.codes import ResponseCode

    now = [1_000_000]
    renewals = Renewals(clock_ms=lambda: now[0])
    renewals.add("a", "G", "T", "M1", ReceiptHandle.decode(f"5 {now[0]} 5000 2 0 broker-a 3 7"))
    renewals.add("b", "G", "T", "M2", ReceiptHandle.decode(f"5 {now[0]} 60000 2 0 broker-a 3 8"))

    async def refused(*_: object) -> str:
        raise broker_error(ResponseCode.NO_MESSAGE, "offset is illegal")

    assert await asyncio.gather(*renewals.renew_due(refused)) == [False]
    assert len(renewals) == 1
    cleared: list[tuple[int, int]] = []

    async def change(handle: ReceiptHandle, group: str, topic: str, invisible: int) -> str:
        cleared.append((handle.offset, invisible))
        return handle.text

    await renewals.clear("b", change)
    assert len(renewals) == 0
    assert cleared == [(8, CLEAR_INVISIBLE_MS)]


def _dead_master():
    """A real ClientInstance whose topic routes to one master that refuses connections (SIGKILLed a moment ago);
    `doubted` records the topics it is asked to re-read."""
    from types import SimpleNamespace

    from mqtools.client.errors import ConnectFailedError
    from mqtools.client.instance import ClientInstance
    from mqtools.remoting.bodies import MessageQueue

    class DeadMaster(ClientInstance):
        doubted: list[str]

        def broker_addr(self, name: str, broker_id: int = 0, *, any_node: bool = True) -> str:
            return "127.0.0.1:10911"

        async def invoke(self, addr, cmd, timeout=None, *, ok=(0,)):
            raise ConnectFailedError(f"connect to {addr} failed: [Errno 111] Connection refused")

        def refresh_soon(self, topic: str) -> None:
            self.doubted.append(topic)

    instance = DeadMaster(["127.0.0.1:9876"])
    instance.doubted = []
    instance.routes["T"] = SimpleNamespace(topic="T", publish=[MessageQueue("T", "broker-a", 0)])  # type: ignore[assignment]
    return instance


async def test_a_send_to_an_unreachable_master_has_the_route_read_again_soon() -> None:
    from mqtools.client.errors import ConnectFailedError
    from mqtools.common import properties as P
    from mqtools.common.message import Message
    from mqtools.proxy.convert import Outgoing
    from mqtools.proxy.sending import Sender

    instance = _dead_master()
    sender = Sender(instance, Transactions(60_000))
    message = Message("T", b"x", properties={P.UNIQ_KEY: "U1"})
    with pytest.raises(ConnectFailedError):
        await sender.send("T", [Outgoing(message, 0, "", 0)])
    assert instance.doubted == ["T"]  # the name server has dropped the dead master: the next sends skip it


async def test_a_receive_whose_caller_left_makes_what_the_broker_gave_it_visible_soon() -> None:
    """The broker answers a POP the proxy holds for a gRPC call that was cancelled meanwhile: its message is
    changed to NACK_INVISIBLE_MS with the newest handle (the one an auto renewal holds), and no longer renewed."""
    from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
    from mqtools.client.instance import ClientInstance
    from mqtools.common import properties as P
    from mqtools.proxy.call import Call
    from mqtools.proxy.consuming import NACK_INVISIBLE_MS
    from mqtools.proxy.popping import FOUND, PopResult
    from mqtools.proxy.service import MessagingService

    service = MessagingService(ProxyConfig(), ClientInstance(["127.0.0.1:9876"]), port=0)
    answer: asyncio.Future = asyncio.get_running_loop().create_future()
    changed: list[tuple[str, int]] = []
    done = asyncio.Event()

    async def held_by_the_broker(req: spb.ReceiveMessageRequest, call: Call, gone) -> tuple[PopResult, str, str]:
        return await answer

    async def change_invisible(handle: ReceiptHandle, group: str, topic: str, invisible_ms: int) -> str:
        changed.append((handle.text, invisible_ms))
        done.set()
        return handle.text

    service._receive = held_by_the_broker  # type: ignore[method-assign]
    service.popper.change_invisible = change_invisible  # type: ignore[method-assign]
    popped = create_handle("5 1790000000000 60000 2 0 broker-a 3 7", 8042)
    renewed = create_handle("5 1790000050000 60000 2 0 broker-a 3 7", 8042)
    service.renewals.add("client-1", "G", "T", "U1", ReceiptHandle.decode(renewed))
    call = Call("client-1", "PYTHON", "5.1.2", "127.0.0.1:1", None)
    receiving = asyncio.ensure_future(service._receive_held(spb.ReceiveMessageRequest(), call))
    await asyncio.sleep(0)
    receiving.cancel()  # the client left while the broker held the POP
    with pytest.raises(asyncio.CancelledError):
        await receiving
    assert changed == []
    message = MessageExt("T", b"x", properties={"POP_CK": popped, P.UNIQ_KEY: "U1"})
    answer.set_result((PopResult(FOUND, [message]), "T", "G"))
    await asyncio.wait_for(done.wait(), 5)
    assert changed == [(renewed, NACK_INVISIBLE_MS)]
    assert len(service.renewals) == 0


async def test_a_receive_whose_caller_left_before_its_pop_was_sent_sends_none() -> None:
    """The client left while the proxy was still looking up the topic's route: no POP is sent for nobody (it
    would take messages away for a second and count a delivery attempt against each)."""
    from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
    from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
    from mqtools.client.instance import ClientInstance
    from mqtools.proxy.call import Call
    from mqtools.proxy.service import MessagingService
    from mqtools.proxy.settings import GroupPolicy
    from mqtools.remoting.bodies import BrokerData, QueueData, TopicRouteData

    service = MessagingService(ProxyConfig(), ClientInstance(["127.0.0.1:9876"]), port=0)
    route_found: asyncio.Future = asyncio.get_running_loop().create_future()
    popped: list[str] = []

    async def slow_route(topic: str):
        return await route_found

    async def pop(**kw):
        popped.append(kw["topic"])

    async def group_policy(group: str, addrs: list[str]) -> GroupPolicy:
        return GroupPolicy()

    service._route = slow_route  # type: ignore[method-assign]
    service.popper.pop = pop  # type: ignore[method-assign]
    service.metadata.group_policy = group_policy  # type: ignore[method-assign]
    req = spb.ReceiveMessageRequest(group=pb.Resource(name="G"), batch_size=8,
                                    message_queue=pb.MessageQueue(topic=pb.Resource(name="T")))
    req.invisible_duration.FromSeconds(30)
    req.long_polling_timeout.FromSeconds(5)
    receiving = asyncio.ensure_future(service._receive_held(req, Call("c1", "PYTHON", "5.1.2", "p", 30.0)))
    await asyncio.sleep(0)
    receiving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await receiving
    route_found.set_result(TopicRouteData([QueueData("broker-a", 4, 4, 6)], [BrokerData("C", "broker-a", {0: "a:1"})]))
    for _ in range(5):
        await asyncio.sleep(0)
    assert popped == [] and service._receiving == 0
