"""Server-side load balancing against real `mq namesrv` + two `mq broker`s: QUERY_ASSIGNMENT in PULL and POP
mode, SET_MESSAGE_REQUEST_MODE and GET_ALL_MESSAGE_REQUEST_MODE (messageRequestMode.json), POLLING_INFO.

The "clients" are raw remoting connections that heartbeat a consumer group and stay open, as a 5.x client
with client rebalance off does before it asks for its queues.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator, Iterator

import pytest
from support.adminsupport import json_of, mq_here, one_line_error
from support.clientsupport import Cluster, broker_cluster, call, create_topic, until

from mqtools.client.pop_consumer import PopConsumer, PopStatus
from mqtools.remoting.assignment import (
    MODE_POP,
    MODE_PULL,
    PollingInfoRequestHeader,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from mqtools.remoting.bodies import ConsumerData, HeartbeatData, SubscriptionData
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode, java_short
from mqtools.remoting.command import RemotingCommand

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

DEADLINE = 30.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from broker_cluster(tmp_path_factory.mktemp("assign"), ("broker-a", "broker-b"),
                              brokerClusterName="AssignIT")


@pytest.fixture
async def clients(cluster: Cluster) -> AsyncIterator:
    """Open connections that heartbeat `group` on every broker as client ids c1..cN; closed at the end."""
    opened: list[RemotingClient] = []

    async def make(group: str, topic: str, n: int) -> list[str]:
        cids = [f"127.0.0.1@c{i}" for i in range(1, n + 1)]
        for cid in cids:
            client = RemotingClient()
            opened.append(client)
            data = HeartbeatData(cid, [], [ConsumerData(group, subscription_data_set=[SubscriptionData(topic)])])
            for proc in cluster.brokers.values():
                resp = await client.invoke(proc.addr, RemotingCommand.request(RequestCode.HEART_BEAT, {},
                                                                              data.to_json()), 10)
                assert resp.code == ResponseCode.SUCCESS, resp.remark
        return cids

    yield make
    for client in opened:
        await client.close()


async def query(addr: str, topic: str, group: str, cid: str, strategy: str = "AVG",
                model: str = "CLUSTERING") -> QueryAssignmentResponseBody:
    body = QueryAssignmentRequestBody(topic, group, cid, strategy, model).to_json()
    resp = await call(addr, RequestCode.QUERY_ASSIGNMENT, {}, body)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return QueryAssignmentResponseBody.from_json(resp.body)


def queue_ids(body: QueryAssignmentResponseBody) -> set[tuple[str, int, str]]:
    assert body.message_queue_assignments is not None
    return {(a.message_queue.broker_name, a.message_queue.queue_id, a.mode) for a in body.message_queue_assignments}


async def set_mode(addr: str, topic: str, group: str, mode: str, share: int = 0) -> RemotingCommand:
    body = SetMessageRequestModeRequestBody(topic, group, mode, share).to_json()
    return await call(addr, RequestCode.SET_MESSAGE_REQUEST_MODE, {}, body)


async def test_pull_mode_splits_every_brokers_queues_among_the_group(cluster: Cluster, clients) -> None:
    await create_topic(cluster, "AssignPull", 4)
    cids = await clients("CG_ASSIGN_PULL", "AssignPull", 3)
    addr = cluster.brokers["broker-a"].addr
    got = [queue_ids(await query(addr, "AssignPull", "CG_ASSIGN_PULL", cid)) for cid in cids]
    assert [len(g) for g in got] == [3, 3, 2]  # 8 queues: AVG gives the first consumers one more
    assert set().union(*got) == {(b, q, MODE_PULL) for b in ("broker-a", "broker-b") for q in range(4)}
    assert sum(len(g) for g in got) == 8  # disjoint
    other = cluster.brokers["broker-b"].addr  # any broker gives the same split
    assert queue_ids(await query(other, "AssignPull", "CG_ASSIGN_PULL", cids[0])) == got[0]
    circle = queue_ids(await query(addr, "AssignPull", "CG_ASSIGN_PULL", cids[0], "AVG_BY_CIRCLE"))
    assert circle == {("broker-a", 0, MODE_PULL), ("broker-a", 3, MODE_PULL), ("broker-b", 2, MODE_PULL)}
    broadcast = await query(addr, "AssignPull", "CG_ASSIGN_PULL", cids[0], model="BROADCASTING")
    assert len(queue_ids(broadcast)) == 8


async def test_no_valid_answer_leaves_the_assignments_out(cluster: Cluster, clients) -> None:
    await create_topic(cluster, "AssignNone", 2)
    (cid,) = await clients("CG_ASSIGN_NONE", "AssignNone", 1)
    addr = cluster.brokers["broker-a"].addr
    assert (await query(addr, "AssignNone", "CG_ASSIGN_NONE", cid, "NO_SUCH")).message_queue_assignments is None
    assert (await query(addr, "AssignNone", "CG_NOBODY", cid)).message_queue_assignments is None
    assert (await query(addr, "AssignNoTopic", "CG_ASSIGN_NONE", cid)).message_queue_assignments is None
    stranger = await query(addr, "AssignNone", "CG_ASSIGN_NONE", "127.0.0.1@stranger")
    assert stranger.message_queue_assignments == []  # not in the group: drop everything


async def test_pop_mode_is_persisted_and_gives_queue_minus_one(cluster: Cluster, clients) -> None:
    await create_topic(cluster, "AssignPop", 4)
    cids = await clients("CG_ASSIGN_POP", "AssignPop", 3)
    for name, proc in cluster.brokers.items():
        resp = await set_mode(proc.addr, "AssignPop", "CG_ASSIGN_POP", MODE_POP, 0)
        assert resp.code == ResponseCode.SUCCESS, (name, resp.remark)
    addr = cluster.brokers["broker-a"].addr
    for cid in cids:  # no sharing: everyone reads every broker, the broker picks the queue
        assert queue_ids(await query(addr, "AssignPop", "CG_ASSIGN_POP", cid)) == {
            ("broker-a", -1, MODE_POP), ("broker-b", -1, MODE_POP)}
    await set_mode(addr, "AssignPop", "CG_ASSIGN_POP", MODE_POP, 1)
    shared = queue_ids(await query(addr, "AssignPop", "CG_ASSIGN_POP", cids[0]))
    assert len(shared) == 6 and all(q >= 0 and m == MODE_POP for _b, q, m in shared)  # own 3 and c2's 3
    on_disk = json.loads((cluster.workdir / "broker-a" / "config" / "messageRequestMode.json").read_bytes())
    assert on_disk["messageRequestModeMap"]["AssignPop"]["CG_ASSIGN_POP"] == {
        "topic": "AssignPop", "consumerGroup": "CG_ASSIGN_POP", "mode": "POP", "popShareQueueNum": 1}
    resp = await call(addr, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)
    assert resp.code == ResponseCode.SUCCESS
    assert json.loads(resp.body)["messageRequestModeMap"]["AssignPop"]["CG_ASSIGN_POP"]["popShareQueueNum"] == 1


async def test_set_mode_refusals(cluster: Cluster) -> None:
    await create_topic(cluster, "AssignRefuse", 1)
    addr = cluster.brokers["broker-a"].addr
    assert (await set_mode(addr, "%RETRY%CG_X", "CG_X", MODE_POP)).code == ResponseCode.NO_PERMISSION
    assert (await set_mode(addr, "AssignNoSuchTopic", "CG_X", MODE_POP)).code == ResponseCode.TOPIC_NOT_EXIST
    assert (await call(addr, RequestCode.SET_MESSAGE_REQUEST_MODE, {}, b"not json")).code != ResponseCode.SUCCESS


async def polling_num(addr: str, group: str, topic: str, queue_id: int, code: int = RequestCode.POLLING_INFO
                      ) -> RemotingCommand:
    return await call(addr, code, PollingInfoRequestHeader(group, topic, queue_id).to_ext())


async def test_polling_info_counts_parked_pops(cluster: Cluster) -> None:
    await create_topic(cluster, "AssignPoll", 2)
    addr = cluster.brokers["broker-a"].addr
    resp = await polling_num(addr, "CG_ASSIGN_POLL", "AssignPoll", -1)
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["pollingNum"] == "0"
    consumer = await PopConsumer("CG_ASSIGN_POLL", namesrv=cluster.namesrv.addr).start()
    try:
        parked = asyncio.ensure_future(consumer.pop("AssignPoll", 1, 60_000, 4000, broker_name="broker-a"))

        async def one_parked() -> bool:
            r = await polling_num(addr, "CG_ASSIGN_POLL", "AssignPoll", -1)
            return r.ext_fields.get("pollingNum") == "1"

        await until(one_parked, DEADLINE, "the POP parked")
        short = await polling_num(addr, "CG_ASSIGN_POLL", "AssignPoll", -1, java_short(RequestCode.POLLING_INFO))
        assert short.ext_fields["pollingNum"] == "1"  # the 16-bit form of the binary serializer
        assert (await polling_num(addr, "CG_ASSIGN_POLL", "AssignPoll", 0)).ext_fields["pollingNum"] == "0"
        assert (await parked).status is PopStatus.POLLING_NOT_FOUND
        assert (await polling_num(addr, "CG_ASSIGN_POLL", "AssignPoll", -1)).ext_fields["pollingNum"] == "0"
    finally:
        await consumer.shutdown()
    bad = await polling_num(addr, "CG_ASSIGN_POLL", "AssignPoll", 5)
    assert bad.code == ResponseCode.INVALID_PARAMETER
    assert (await polling_num(addr, "CG_ASSIGN_POLL", "AssignNoSuch", 0)).code == ResponseCode.TOPIC_NOT_EXIST


async def test_consume_mode_commands_set_and_read_back_in_both_dialects(cluster: Cluster) -> None:
    ns, a_addr = cluster.namesrv.addr, cluster.brokers["broker-a"].addr
    for topic in ("ModeCli", "ModeCli2"):
        await create_topic(cluster, topic, 2)
    unset = json_of(mq_here("admin", "group", "consume-mode", "CG_MODE_CLI", "-t", "ModeCli", "-o", "json", namesrv=ns),
                    "ConsumeModes")
    assert [(b["brokerName"], b["mode"], b["origin"]) for b in unset["brokers"]] == [
        ("broker-a", "PULL", "default"), ("broker-b", "PULL", "default")]

    out = mq_here("admin", "setConsumeMode", "-b", a_addr, "-t", "ModeCli", "-g", "CG_MODE_CLI", "-m", "POP", "-q", "2",
             namesrv=ns)
    assert out.returncode == 0, out.stderr
    assert out.stdout == (f"set consume mode to {a_addr} success.\n"
                          "topic[ModeCli] group[CG_MODE_CLI] consume mode[POP] popShareQueueNum[2]")
    one_line_error(mq_here("admin", "setConsumeMode", "-b", a_addr, "-t", "ModeCli", "-g", "CG_MODE_CLI", "-m", "pop",
                      namesrv=ns), 2, "bad mode 'pop'")

    both = json_of(mq_here("admin", "group", "consume-mode", "CG_MODE_CLI", "--set", "pop", "-t", "ModeCli2",
                      "-c", "AssignIT", "-o", "json", namesrv=ns), "ConsumeModes")
    assert [(b["brokerName"], b["topic"], b["mode"], b["popShareQueueNum"], b["origin"]) for b in both["brokers"]] == [
        ("broker-a", "ModeCli2", "POP", 0, "set"), ("broker-b", "ModeCli2", "POP", 0, "set")]
    every = json_of(mq_here("admin", "group", "consume-mode", "CG_MODE_CLI", "-o", "json", namesrv=ns), "ConsumeModes")
    assert [(b["brokerName"], b["topic"], b["popShareQueueNum"]) for b in every["brokers"]] == [
        ("broker-a", "ModeCli", 2), ("broker-a", "ModeCli2", 0), ("broker-b", "ModeCli2", 0)]
    table = mq_here("admin", "group", "consume-mode", "CG_MODE_CLI", "-t", "ModeCli", namesrv=ns)
    assert table.returncode == 0 and "POP" in table.stdout and "default" in table.stdout
    one_line_error(mq_here("admin", "group", "consume-mode", "CG_MODE_CLI", "--set", "POP", "-c", "AssignIT", namesrv=ns),
                   2, "--set needs -t TOPIC")

    b = cluster.brokers["broker-b"]
    b.proc.send_signal(signal.SIGSTOP)  # a hung set (no slave): named, the answer partial
    try:
        hung = json_of(mq_here("admin", "group", "consume-mode", "CG_MODE_CLI", "-t", "ModeCli", "--timeout", "1",
                          "-o", "json", namesrv=ns), "ConsumeModes", exit_code=4)
    finally:
        b.proc.send_signal(signal.SIGCONT)
    assert [x["brokerName"] for x in hung["brokers"]] == ["broker-a"]
    assert [(u["brokerName"], u["reason"]) for u in hung["unreachable"]] == [("broker-b", "timed out")]
