"""Seeded hostile input against a real name server and broker (issue 15).

Thousands of requests of every request code, with nasty field values (`../..`, NUL, huge strings,
negative, huge and non-numeric numbers) and nasty bodies (invalid UTF-8, bad JSON, wrong shapes,
empty and large), in both header serializations, plus garbage and truncated frames on connections
of their own. Afterwards both servers still serve a normal send, pull and route query; nothing
beside the store dirs changed (a sentinel tree next to them is compared before and after); no
traceback was logged; and the logs grew by a bounded number of bytes.

The seed is printed in every failure message; MQ_HOSTILE_SEED=<seed> replays the same requests.

Nothing is excluded by request code. What keeps the final checks meaningful is the name pool:
it never holds the real cluster or broker name, the check topic or the check group, so
WIPE_WRITE_PERM_OF_BROKER, UNREGISTER_BROKER, DELETE_TOPIC_IN_BROKER/NAMESRV and the offset
resets can only touch decoy entries; and no body is a properties text with a real broker or
name server key, so UPDATE_BROKER_CONFIG / UPDATE_NAMESRV_CONFIG cannot turn a server read-only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import random
import struct
import time
import typing
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from support.clientsupport import Cluster, broker_cluster, until
from support.mqproc import MqProcess

from mqtools.remoting import headers as H
from mqtools.remoting.bodies import TopicRouteData
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode, SerializeType
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingConnectionClosed, RemotingError
from mqtools.remoting.headers import PullMessageRequestHeader, SendMessageRequestHeader

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

SEED = int(os.environ.get("MQ_HOSTILE_SEED") or random.SystemRandom().randrange(2**32))
REQUESTS_PER_SERVER = 8000
IN_FLIGHT = 48
#: A pull the broker holds (suspend flag, nothing to read) is not waited for longer than this.
PULL_WAIT = 1.0
GARBAGE_CONNECTIONS = 300
#: What both logs together may grow by: the rate limiter lets ~10 lines of each kind through per minute.
LOG_GROWTH_LIMIT = 48 * 1024
CHECK_TOPIC, CHECK_GROUP = "HostileCheck", "HostileCheckGroup"

HUGE = "h" * 70_000
NAMES = ["../..", "../../sentinel/empty", "..", "/", "a/b", "a\x00b", "\x00", "", " ", "%RETRY%../x", "%DLQ%",
         "x" * 128, "g" * 256, HUGE, "тест", "a\nb", "TBW102", "SCHEDULE_TOPIC_XXXX", "rmq_sys_x",
         "DecoyA", "DecoyB", "%RETRY%DecoyG", "DecoyG", "DecoyG2", "127.0.0.1:1", "DecoyCluster"]
#: Message property strings (name \x01 value \x02 ...), well and badly formed.
PROPERTIES = ["DELAY\x013\x02", "DELAY\x01-5\x02", "DELAY\x0199999999999999999999\x02", "DELAY\x01abc\x02",
              "TAGS\x01\x02KEYS\x01" + "k" * 70_000 + "\x02", "\x01\x01\x02\x02", "UNIQ_KEY\x01../..\x02",
              "TRAN_MSG\x01true\x02", "REAL_TOPIC\x01../..\x02REAL_QID\x01-1\x02DELAY\x011\x02", "\x02\x02",
              "KEYS\x01" + " " * 1000 + "\x02", "CLUSTER\x01../..\x02", "a\x00b\x01c\x02", "TAGS\x01t\x02"]
NUMBERS = ["-1", "0", "1", "3", "-2147483649", "2147483648", "9223372036854775807", "9223372036854775808",
           "-9223372036854775809", "9" * 5000, "abc", "1e5", "", " 1", "0x10", "NaN", "true"]
FLAGS = ["true", "false", "TRUE", "", "yes", "\x00"]
STRING_FIELDS = ["topic", "consumerGroup", "producerGroup", "group", "groupName", "key", "namespace", "value",
                 "brokerName", "brokerAddr", "clusterName", "haServerAddr", "cluster", "defaultTopic",
                 "topicFilterType", "subscription", "expressionType", "clientID", "clientAddr", "statsName",
                 "statsKey", "originMsgId", "originTopic", "a", "b", "c", "i", "n", "properties", "boundaryType"]
NUMBER_FIELDS = ["queueId", "queueOffset", "offset", "maxMsgNums", "sysFlag", "commitOffset", "suspendTimeoutMillis",
                 "subVersion", "brokerId", "timestamp", "readQueueNums", "writeQueueNums", "perm", "topicSysFlag",
                 "defaultTopicQueueNums", "delayLevel", "maxNum", "beginTimestamp", "endTimestamp", "maxMsgBytes",
                 "bornTimestamp", "flag", "reconsumeTimes", "maxReconsumeTimes", "heartbeatTimeoutMillis",
                 "bodyCrc32", "d", "e", "f", "g", "h", "j", "l"]
FLAG_FIELDS = ["isForce", "order", "cleanOffset", "unitMode", "batch", "compressed", "isOrder",
               "setZeroIfNotFound", "acceptStandardJsonOnly", "k", "m", "_UNIQUE_KEY_QUERY"]
BODIES: list[bytes | None] = [
    None, b"", b"\xff\xfe\xfd", b"{", b'{"a":', b"[1,2]", b"null", b"42", b'"s"', b"[" * 3000, b"{}" * 10,
    b'{"clientID": 5, "consumerDataSet": "x", "producerDataSet": [7]}',
    b'{"clientID": "c1", "consumerDataSet": [{"groupName": "../.."}]}',
    b'{"clientID": "c1", "producerDataSet": [{"groupName": "a\\u0000b"}]}',
    b'{"clientID": "c2", "consumerDataSet": [{"groupName": "DecoyG", "subscriptionDataSet": [{"topic": "DecoyA"}]}]}',
    b'{"groupName": "../../sentinel", "retryQueueNums": -5}', b'{"groupName": "DecoyG2", "retryMaxTimes": "x"}',
    b'{"consumerGroup": "DecoyG", "clientId": "c", "mqSet": [{"topic": "../..", "brokerName": "b", "queueId": 1}]}',
    b'{"topicConfigSerializeWrapper": {"topicConfigTable": {"../..": {"topicName": "../.."}}}}',
    b'{"queueDatas": [{"brokerName": "DecoyB", "readQueueNums": -1}], "brokerDatas": 3}',
    b'{"offsetTable": {"{\\"topic\\": 1}": "x"}}', b"\x00" * 64, b"a=b\n=c\n\\u12=\n", b"\xff=\xfe\n",
    bytes(range(256)),
]
#: Large bodies, drawn now and then: plain bytes, and fastjson-style JSON (unquoted numeric keys) over the
#: size a server parses with the slow fallback, which must be refused rather than stall the event loop.
LARGE_BODIES = [b"x" * (1 << 20), b'{"clientID": "c", "x": {' + b",".join(b"%d:0" % i for i in range(200_000)) + b"}}"]


#: Plausible values: a request made of these gets past decoding and into the processor's logic.
PLAUSIBLE_NAMES = ["DecoyA", "DecoyB", "DecoyG", "DecoyG2", "%RETRY%DecoyG", "%DLQ%DecoyG", "DecoyCluster", "TBW102"]
PLAUSIBLE_NUMBERS = ["0", "1", "2", "3", "-1", "7", "1000", "100000", str(2**31 - 1), str(2**62)]

#: The header each request code is decoded with, for requests shaped like the real thing.
SHAPES: dict[int, type] = {
    RequestCode.SEND_MESSAGE: H.SendMessageRequestHeader, RequestCode.SEND_MESSAGE_V2: H.SendMessageRequestHeader,
    RequestCode.SEND_BATCH_MESSAGE: H.SendMessageRequestHeader, RequestCode.PULL_MESSAGE: H.PullMessageRequestHeader,
    RequestCode.QUERY_MESSAGE: H.QueryMessageRequestHeader,
    RequestCode.QUERY_CONSUMER_OFFSET: H.QueryConsumerOffsetRequestHeader,
    RequestCode.UPDATE_CONSUMER_OFFSET: H.UpdateConsumerOffsetRequestHeader,
    RequestCode.UPDATE_AND_CREATE_TOPIC: H.CreateTopicRequestHeader,
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: H.SearchOffsetRequestHeader,
    RequestCode.GET_MAX_OFFSET: H.QueueRequestHeader, RequestCode.GET_MIN_OFFSET: H.QueueRequestHeader,
    RequestCode.GET_EARLIEST_MSG_STORETIME: H.QueueRequestHeader, RequestCode.VIEW_MESSAGE_BY_ID: H.ViewMessageRequestHeader,
    RequestCode.UNREGISTER_CLIENT: H.UnregisterClientRequestHeader,
    RequestCode.CONSUMER_SEND_MSG_BACK: H.ConsumerSendMsgBackRequestHeader,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: H.ConsumerGroupRequestHeader,
    RequestCode.GET_CONSUMER_CONNECTION_LIST: H.ConsumerGroupRequestHeader,
    RequestCode.GET_PRODUCER_CONNECTION_LIST: H.GetProducerConnectionListRequestHeader,
    RequestCode.DELETE_SUBSCRIPTIONGROUP: H.DeleteSubscriptionGroupRequestHeader,
    RequestCode.GET_CONSUME_STATS: H.GetConsumeStatsRequestHeader,
    RequestCode.GET_BROKER_CONSUME_STATS: H.GetConsumeStatsInBrokerHeader,
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: H.ResetOffsetRequestHeader,
    RequestCode.DELETE_TOPIC_IN_BROKER: H.TopicRequestHeader, RequestCode.GET_TOPIC_STATS_INFO: H.TopicRequestHeader,
    RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: H.TopicRequestHeader,
    RequestCode.VIEW_BROKER_STATS_DATA: H.ViewBrokerStatsDataRequestHeader,
    RequestCode.REGISTER_BROKER: H.RegisterBrokerRequestHeader,
    RequestCode.UNREGISTER_BROKER: H.UnRegisterBrokerRequestHeader,
    RequestCode.GET_ROUTEINFO_BY_TOPIC: H.GetRouteInfoRequestHeader, RequestCode.PUT_KV_CONFIG: H.KVConfigRequestHeader,
    RequestCode.GET_KV_CONFIG: H.KVConfigRequestHeader, RequestCode.DELETE_KV_CONFIG: H.KVConfigRequestHeader,
    RequestCode.GET_KVLIST_BY_NAMESPACE: H.GetKVListByNamespaceRequestHeader,
    RequestCode.GET_TOPICS_BY_CLUSTER: H.GetTopicsByClusterRequestHeader,
    RequestCode.DELETE_TOPIC_IN_NAMESRV: H.DeleteTopicFromNamesrvRequestHeader,
    RequestCode.REGISTER_TOPIC_IN_NAMESRV: H.TopicRequestHeader,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER: H.BrokerNameRequestHeader,
    RequestCode.ADD_WRITE_PERM_OF_BROKER: H.BrokerNameRequestHeader,
    RequestCode.QUERY_DATA_VERSION: H.QueryDataVersionRequestHeader,
}


def why(text: str) -> str:
    return f"{text} (MQ_HOSTILE_SEED={SEED})"


def shaped_ext(rng: random.Random, code: int) -> dict[str, str]:
    """Every field of the code's header, each plausible or nasty by a coin toss (strings stand in
    for numbers and flags too: the dataclass does not check, `to_ext` just renders them)."""
    header = SHAPES[code]
    hints = typing.get_type_hints(header)
    values = {}
    for f in dataclasses.fields(header):
        kind = hints[f.name]
        nasty = rng.random() < 0.3
        if f.name == "properties":
            values[f.name] = rng.choice(PROPERTIES)
        elif "int" in str(kind):
            values[f.name] = rng.choice(NUMBERS if nasty else PLAUSIBLE_NUMBERS)
        elif "bool" in str(kind):
            values[f.name] = rng.choice(FLAGS)
        else:
            values[f.name] = rng.choice(NAMES if nasty else PLAUSIBLE_NAMES)
    shaped = header(**values)
    if code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        return shaped.to_v2()
    return shaped.to_ext()


def hostile_request(rng: random.Random, codes: list[int]) -> RemotingCommand:
    code = rng.choice(codes) if rng.random() < 0.5 else rng.choice(list(SHAPES))  # every code; known ones more
    if code in SHAPES and rng.random() < 0.7:
        ext = shaped_ext(rng, code)
    else:
        ext = {}
        for names, pool in ((STRING_FIELDS, NAMES), (NUMBER_FIELDS, NUMBERS), (FLAG_FIELDS, FLAGS)):
            for name in names:
                if rng.random() < 0.5:
                    ext[name] = rng.choice(pool)
    serialize = rng.choice([SerializeType.JSON, SerializeType.ROCKETMQ])
    if not -(2**15) <= code < 2**15:
        serialize = SerializeType.JSON  # the ROCKETMQ layout has 16 bits for the code
    body = rng.choice(LARGE_BODIES) if rng.random() < 0.01 else rng.choice(BODIES)
    return RemotingCommand.request(code, ext, body, oneway=rng.random() < 0.05,
                                   serialize_type=serialize)


def odd_frames() -> bytes:
    """Frames a strict peer would not send but that are still frames: a JSON header with an unknown
    language number, a negative version, a numeric remark and non-string ext values; a heartbeat
    registering a consumer that way, then a query that renders its connection. Both are answered."""
    out = b""
    heartbeat = b'{"clientID": "odd", "consumerDataSet": [{"groupName": "DecoyOdd", "subscriptionDataSet": []}]}'
    for code, ext, body in ((34, {"a": 1, "b": [1, 2], "c": {"x": None}, "d": True}, heartbeat),
                            (203, {"consumerGroup": "DecoyOdd"}, b"")):
        header = orjson.dumps({"code": code, "language": 99999, "version": -5, "opaque": code, "flag": 0,
                               "remark": 5, "extFields": ext})
        out += struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body
    return out


def garbage_frame(rng: random.Random) -> tuple[bytes, bool]:
    """Bytes that are not a valid frame, and whether the server must close on them (a truncated
    frame is only incomplete: the server waits for the rest, and we hang up)."""
    header = orjson.dumps({"code": 105, "opaque": 1, "flag": 0, "version": 1, "extFields": {"topic": "x"}})
    kind = rng.randrange(9)
    if kind == 0:
        return struct.pack(">i", rng.choice([0, 1, 3, -1, -(2**31)])) + b"\x00" * 8, True
    if kind == 1:
        return struct.pack(">i", 2**31 - 1) + b"\x00" * 64, True  # longer than any frame may be
    if kind == 2:
        return struct.pack(">ii", 8, 400) + b"zzzz", True  # header longer than the frame
    if kind == 3:
        return struct.pack(">ii", 4 + len(header), (9 << 24) | len(header)) + header, True  # unknown serializer
    if kind == 4:
        bad = b"\xff\xfe{" + header
        return struct.pack(">ii", 4 + len(bad), len(bad)) + bad, True  # JSON header not UTF-8
    if kind == 5:
        bad = orjson.dumps({"code": 2**40, "opaque": "x", "extFields": [1]})
        return struct.pack(">ii", 4 + len(bad), len(bad)) + bad, True
    if kind == 6:
        raw = struct.pack(">hbhii", 105, 0, 1, 1, 0) + struct.pack(">i", 2) + b"\xff\xff" + struct.pack(">i", 9999)
        return struct.pack(">ii", 4 + len(raw), (1 << 24) | len(raw)) + raw, True  # ROCKETMQ header, bad lengths
    if kind == 7:
        full = struct.pack(">ii", 4 + len(header) + 100, len(header)) + header + b"b" * 100
        return full[: rng.randrange(1, len(full) - 1)], False  # truncated
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))), False  # noise: may look truncated


def snapshot(root: Path, skip: set[str]) -> dict[str, str]:
    """Every path under root (except the top-level names in `skip`) with its kind and content hash."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] in skip:
            continue
        out[str(rel)] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def log_size(*procs: MqProcess) -> int:
    return sum(len(line) + 1 for proc in procs for line in list(proc.lines))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("hostile")
    sentinel = work / "sentinel"
    (sentinel / "empty").mkdir(parents=True)
    (sentinel / "deep" / "er").mkdir(parents=True)
    (sentinel / "deep" / "er" / "file").write_bytes(b"keep me")
    (work / "victim").mkdir()
    yield from broker_cluster(work, ("broker-a",), brokerClusterName="HostileCluster")


async def answer(client: RemotingClient, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand | None:
    """The server's answer; None for a oneway request, a pull the broker may hold (long polling), or a
    registration whose connection the name server closed: a fake broker registered with a short
    heartbeat timeout expires, and RocketMQ's name server closes an expired broker's channel."""
    if cmd.is_oneway:
        await client.invoke_oneway(addr, cmd)
        return None
    if cmd.code == RequestCode.PULL_MESSAGE:
        timeout = PULL_WAIT
    try:
        return await client.invoke(addr, cmd, timeout)
    except RemotingError as exc:
        if cmd.code == RequestCode.PULL_MESSAGE:
            return None
        if cmd.code == RequestCode.REGISTER_BROKER and isinstance(exc, RemotingConnectionClosed):
            return None
        raise


async def flood(addr: str, rng: random.Random, codes: list[int]) -> dict[int, int]:
    """REQUESTS_PER_SERVER hostile requests, IN_FLIGHT at a time; answer codes counted."""
    client = RemotingClient()
    registrar = RemotingClient()  # registrations on a connection of their own: it may be closed (see `answer`)
    seen: dict[int, int] = {}
    gate = asyncio.Semaphore(IN_FLIGHT)
    cmds = [hostile_request(rng, codes) for _ in range(REQUESTS_PER_SERVER)]

    async def one(cmd: RemotingCommand) -> None:
        async with gate:
            try:
                resp = await answer(registrar if cmd.code == RequestCode.REGISTER_BROKER else client, addr, cmd, 20.0)
            except RemotingError as exc:
                raise AssertionError(why(f"{addr} did not answer code {cmd.code} {cmd.ext_fields!r:.300}: {exc}"))
            if resp is not None:
                seen[resp.code] = seen.get(resp.code, 0) + 1

    try:
        await asyncio.gather(*(one(cmd) for cmd in cmds))
    finally:
        await client.close()
        await registrar.close()
    return seen


async def odd_but_answered(addr: str) -> None:
    host, port = addr.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(odd_frames())
    await writer.drain()
    for _ in range(2):
        (length,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 10))
        await reader.readexactly(length)
    writer.close()
    await writer.wait_closed()


async def garbage(addr: str, rng: random.Random) -> None:
    await odd_but_answered(addr)
    host, port = addr.rsplit(":", 1)
    for _ in range(GARBAGE_CONNECTIONS):
        data, must_close = garbage_frame(rng)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(data)
        await writer.drain()
        if must_close:
            try:
                rest = await asyncio.wait_for(reader.read(), 10)
            except ConnectionResetError:
                rest = b""
            assert rest == b"", why(f"{addr} answered a malformed frame {data[:40]!r} instead of closing")
        writer.close()
        try:
            await writer.wait_closed()
        except ConnectionResetError:
            pass


def send_cmd(topic: str, body: bytes) -> RemotingCommand:
    h = SendMessageRequestHeader(producer_group="HostilePG", topic=topic, default_topic="TBW102",
                                 default_topic_queue_nums=1, queue_id=0, sys_flag=0,
                                 born_timestamp=int(time.time() * 1000), flag=0)
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h.to_v2(), body)


def pull_cmd(topic: str, offset: int) -> RemotingCommand:
    h = PullMessageRequestHeader(consumer_group=CHECK_GROUP, topic=topic, queue_id=0, queue_offset=offset,
                                 max_msg_nums=32, sys_flag=4, commit_offset=0, suspend_timeout_millis=0, sub_version=0,
                                 subscription="*", expression_type="TAG")
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, h.to_ext())


async def healthy(cluster: Cluster, payload: bytes) -> None:
    """A normal send, a pull that returns it and a route query, each answered as usual."""
    client = RemotingClient()
    try:
        sent = await client.invoke(cluster.broker.addr, send_cmd(CHECK_TOPIC, payload), 10)
        assert sent.code == ResponseCode.SUCCESS, why(f"send after the flood: {sent.code} {sent.remark}")
        offset = int(sent.ext_fields["queueOffset"])
        pulled = await client.invoke(cluster.broker.addr, pull_cmd(CHECK_TOPIC, offset), 10)
        assert pulled.code == ResponseCode.SUCCESS and payload in bytes(pulled.body or b""), why("pull after the flood")

        async def routed() -> TopicRouteData | None:
            cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": CHECK_TOPIC})
            resp = await client.invoke(cluster.namesrv.addr, cmd, 10)
            return TopicRouteData.from_json(resp.body) if resp.code == ResponseCode.SUCCESS else None

        route = await until(routed, 20, why("a route for the check topic"))
        assert [b.broker_addrs.get(0) for b in route.broker_datas] == [cluster.broker.addr], why("route")
    finally:
        await client.close()


async def test_hostile_input_leaves_both_servers_healthy(cluster: Cluster) -> None:
    print(f"MQ_HOSTILE_SEED={SEED}")
    rng = random.Random(SEED)
    await healthy(cluster, b"before")  # also auto-creates the check topic and its route
    # UPDATE_BROKER_CONFIG rewrites the properties file (keeping a .bak), as RocketMQ does
    store_dirs = {"broker-a", "namesrv", "broker-a.properties", "broker-a.properties.bak"}
    before = snapshot(cluster.workdir, store_dirs)
    logs_before = log_size(cluster.namesrv, cluster.broker)
    codes = sorted({int(c) for c in RequestCode} | {0, -1, 999, 32767, 40099})
    broker_seen = await flood(cluster.broker.addr, rng, codes)
    namesrv_seen = await flood(cluster.namesrv.addr, rng, codes)
    await garbage(cluster.broker.addr, rng)
    await garbage(cluster.namesrv.addr, rng)
    print(f"broker answers by code {broker_seen}; name server answers by code {namesrv_seen}")
    assert cluster.broker.proc.poll() is None and cluster.namesrv.proc.poll() is None, why("a server died")
    await healthy(cluster, b"after")
    assert snapshot(cluster.workdir, store_dirs) == before, why("something beside the store dirs changed")
    for proc in (cluster.namesrv, cluster.broker):
        out = proc.output()
        first = out.find("Traceback")
        assert first < 0, why(f"traceback in the {proc.role} log:\n{out[max(0, first - 300):first + 3000]}")
    grown = log_size(cluster.namesrv, cluster.broker) - logs_before
    print(f"logs grew by {grown} bytes")
    assert grown <= LOG_GROWTH_LIMIT, why(f"logs grew by {grown} bytes:\n{cluster.broker.output()[-3000:]}")
