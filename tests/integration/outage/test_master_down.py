"""The toolkit's reads in an outage, against known ground truth (issue: the toolkit tells the truth while the
cluster is broken).

One 2m-2s-sync preset (every acknowledged message is on the slave too), a topic with 4 queues on each master
and a known number of messages sent; then faults applied in place, each test building on the one before:
broker-b's master hung (SIGSTOP) and resumed, broker-a's master SIGKILLed (its slave alive), then broker-a's
slave hung too (registered, not answering: a set whose replicas are all SIGKILLed leaves the name servers'
tables, and with it every trace a one-shot read could find; `mq top` remembers the sets it has seen), then
broker-b's master SIGKILLed as well (no set with a master) and started again, and last broker-b's slave
SIGKILLed. One of the two name servers is SIGKILLed first and stays down throughout. Each
read must equal the ground truth, reading a master-less set from its slave, or say
it is partial and name exactly what it missed (exit 4), within one timeout per broker set.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from support import promsupport
from support.adminsupport import mq, mq_here
from support.outagesweep import HUNG_TIMEOUT, MCP_READS, NO_REPLICA_OF_A, mcp_sweep, sweep
from support.presetcluster import PresetCluster, preset_cluster, wait_for

from mqtools.client.admin import SyncMQAdmin
from mqtools.client.admin.models.groups import ResetTarget
from mqtools.client.sync import SyncProducer
from mqtools.common import properties as P
from mqtools.common.exitcodes import EXIT_OK, EXIT_PARTIAL, EXIT_REFUSED, EXIT_UNREACHABLE
from mqtools.common.message import Message
from mqtools.remoting.bodies import ConsumeStats, MessageQueue, SubscriptionGroupConfig, TopicConfig
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import GetConsumeStatsRequestHeader, TopicRequestHeader

pytestmark = [pytest.mark.integration, pytest.mark.faults, pytest.mark.timeout(300)]
TOPIC = "OutageTopic"
PER_QUEUE = 25
BROKERS = ("broker-a", "broker-b")
SENT = PER_QUEUE * 4 * len(BROKERS)
GROUP = "OutageGroup"
COMMITTED = 10
LAG = (PER_QUEUE - COMMITTED) * 4 * len(BROKERS)
TIMEOUT = "2"
ANY_CODE = tuple(ResponseCode)
FIRST_ON_A: dict[str, str] = {}
"""broker-a's queue 0, offset 0 (key0, body m0): its offsetMsgId and msgId, filled by the fixture."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PresetCluster]:
    # a hung broker stays registered for the whole module (the name servers expire a silent one after 120 s,
    # and a sweep of every read against a hung set takes about a minute): the state stays the one under test
    with preset_cluster(tmp_path_factory.mktemp("outage"), "2m-2s-sync", namesrvs=2,
                        namesrv_props=("brokerChannelExpiredTime=600000",), proxies=1) as running:
        with SyncMQAdmin(running.namesrv) as admin:
            for broker in BROKERS:
                admin.topics.create_topic(TopicConfig(TOPIC, 4, 4), broker_addr=running.addr(broker))
                admin.groups.create_subscription_group(SubscriptionGroupConfig(GROUP), broker_addr=running.addr(broker))
        with SyncProducer("outage-producer", namesrv=running.namesrv) as producer:
            for i in range(SENT):
                broker = BROKERS[i % 2]
                sent = producer.send(Message(TOPIC, f"m{i}".encode(), properties={P.KEYS: f"key{i}"}),
                                     queue=MessageQueue(TOPIC, broker, (i // 2) % 4))
                if i == 0:  # broker-a's first: read in the tests as it would be after the master is gone
                    FIRST_ON_A.update(offsetMsgId=sent.offset_msg_id, msgId=sent.msg_id)
        with SyncMQAdmin(running.namesrv) as admin:
            admin.offsets.reset_offsets(GROUP, TOPIC, ResetTarget("offset", COMMITTED))
            # slaves learn topic configs, groups and offsets from their masters every 10 s
            for slave in ("broker-a-s", "broker-b-s"):
                wait_for(lambda s=slave: slave_knows(admin, running.addr(s)), 40, f"{slave} to know {TOPIC}, {GROUP}")
        yield running


def slave_knows(admin: SyncMQAdmin, addr: str) -> bool:
    stats = admin.call(addr, RequestCode.GET_TOPIC_STATS_INFO, TopicRequestHeader(TOPIC).to_ext(), ok=ANY_CODE)
    consume = admin.call(addr, RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(GROUP, TOPIC).to_ext(),
                         ok=ANY_CODE)
    if stats.code != ResponseCode.SUCCESS or consume.code != ResponseCode.SUCCESS or not consume.body:
        return False
    offsets = ConsumeStats.from_json(consume.body).offset_table.values()
    return len(offsets) == 4 and all(w.consumer_offset == COMMITTED for w in offsets)


def sweep_values(cluster: PresetCluster) -> dict[str, str]:
    return {"topic": TOPIC, "group": GROUP, "addr": cluster.addr("broker-b"), "msg": FIRST_ON_A["offsetMsgId"],
            "uniq": FIRST_ON_A["msgId"], "key": "key0", "proxy": f"127.0.0.1:{cluster.rows['proxy-0']['remotingPort']}"}


def group_progress(cluster: PresetCluster) -> tuple[int, dict]:
    result = mq_here("admin", "group", "progress", GROUP, "-o", "json", "--timeout", TIMEOUT, namesrv=cluster.namesrv)
    assert result.returncode in (EXIT_OK, EXIT_PARTIAL), result.stderr
    return result.returncode, json.loads(result.stdout)


async def mcp_call(namesrv: str, name: str, args: dict) -> Any:
    params = StdioServerParameters(command=sys.executable, args=["-m", "mqtools.cli.main", "mcp", "-n", namesrv, "--timeout", TIMEOUT])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await session.call_tool(name, args, read_timeout_seconds=60)


def exported(cluster: PresetCluster) -> dict[str, dict[str, float]]:
    return promsupport.exported(cluster.namesrv, TOPIC, GROUP, TIMEOUT)


def topic_status(cluster: PresetCluster) -> tuple[int, dict, float]:
    began = time.monotonic()
    result = mq_here("admin", "topic", "status", TOPIC, "-o", "json", "--timeout", TIMEOUT, namesrv=cluster.namesrv)
    assert result.returncode in (EXIT_OK, EXIT_PARTIAL), result.stderr
    return result.returncode, json.loads(result.stdout), time.monotonic() - began


def sources(doc: dict) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for q in doc["queues"]:
        found.setdefault(q["brokerName"], set()).add(q["source"])
    return found


def test_healthy_every_queue_from_its_master(cluster: PresetCluster) -> None:
    code, doc, _ = topic_status(cluster)
    assert (code, doc["partial"], doc["unreachable"]) == (EXIT_OK, False, [])
    assert doc["messages"] == SENT and len(doc["queues"]) == 8
    assert sources(doc) == {"broker-a": {"master"}, "broker-b": {"master"}}
    code, progress = group_progress(cluster)
    assert (code, progress["partial"], progress["diffTotal"]) == (EXIT_OK, False, LAG)


def test_one_name_server_hung_every_read_is_whole_within_one_timeout(cluster: PresetCluster) -> None:
    """SIGSTOPped, the name server's port still accepts: a client that chose it (each command starts at one at
    random) waits one timeout and asks the other. Before, it stayed with the hung one: every read failed."""
    hung = cluster.addr("namesrv-1")
    cluster.pause("namesrv-1")
    for _ in range(3):  # each command starts at a name server chosen at random: three meet the hung one first with
        code, doc, took = topic_status(cluster)  # a chance of 7 in 8 (test_transport covers it deterministically)
        assert (code, doc["partial"], doc["messages"], len(doc["queues"])) == (EXIT_OK, False, SENT, 8)
        assert took < 2 * float(TIMEOUT) + 8, took
    code, progress = group_progress(cluster)
    assert (code, progress["partial"], progress["diffTotal"]) == (EXIT_OK, False, LAG)
    # a topic's creation waits for the name servers that answer, not for the hung one's registration timeout
    created = mq_here("admin", "topic", "create", "HungNamesrvTopic", "-c", "DefaultCluster", "--timeout", TIMEOUT,
                      namesrv=cluster.namesrv)
    assert created.returncode == EXIT_OK, created.stderr
    diagnosis = mq_here("admin", "diagnose", "cluster", "-o", "json", "--timeout", TIMEOUT, namesrv=cluster.namesrv)
    assert diagnosis.returncode == EXIT_REFUSED, diagnosis.stderr  # a verdict needs action
    judged = {i["name"]: i["verdict"] for i in json.loads(diagnosis.stdout)["items"] if i["kind"] == "namesrv"}
    assert judged == {cluster.addr("namesrv-0"): "healthy", hung: "not answering"}
    # every MCP read tool (a session each, starting at either name server) whole
    assert mcp_sweep(cluster.namesrv, sweep_values(cluster), TIMEOUT) == dict.fromkeys(MCP_READS, "whole")


def test_one_name_server_down_every_read_is_whole_and_top_names_it(cluster: PresetCluster) -> None:
    dead = cluster.addr("namesrv-1")
    cluster.kill("namesrv-1")  # F4 (hung until now); the name server stays down for the faults after this one
    code, doc, _ = topic_status(cluster)
    assert (code, doc["partial"], doc["messages"], len(doc["queues"])) == (EXIT_OK, False, SENT, 8)
    code, progress = group_progress(cluster)
    assert (code, progress["partial"], progress["diffTotal"]) == (EXIT_OK, False, LAG)
    top = mq_here("top", "--once", "-o", "json", namesrv=cluster.namesrv)
    assert top.returncode == EXIT_OK, top.stderr
    views = json.loads(top.stdout)["views"]
    reachable = {r["addr"]: r["reachable"] for r in views["namesrv"]["rows"]}
    assert reachable == {cluster.addr("namesrv-0"): True, dead: False}
    assert {r["brokerName"] for r in views["brokers"]["rows"] if r["status"] == "ok"} == set(BROKERS)
    # MCP and the exporter read whole through the other name server
    assert mcp_sweep(cluster.namesrv, sweep_values(cluster)) == dict.fromkeys(MCP_READS, "whole")
    figures = exported(cluster)
    assert figures["mq_broker_set_master_up"] == {"broker-a": 1.0, "broker-b": 1.0}
    assert figures["rocketmq_group_diff"] == {TOPIC: LAG}


def test_a_hung_master_is_read_from_its_slave_within_one_timeout(cluster: PresetCluster) -> None:
    cluster.pause("broker-b")
    try:
        code, doc, took = topic_status(cluster)
        progress_code, progress = group_progress(cluster)
        began = time.monotonic()
        hung = mq_here("admin", "broker", "status", cluster.addr("broker-b"), "--timeout", TIMEOUT, namesrv=cluster.namesrv)
        hung_took = time.monotonic() - began
        every = mq_here("admin", "brokerStatus", "-c", "DefaultCluster", namesrv=cluster.namesrv,
                        env={"MQ_TIMEOUT": TIMEOUT})
        figures = exported(cluster)
        judged = mq("admin", "diagnose", "broker", cluster.addr("broker-b"), "--window", "1", "--timeout", TIMEOUT,
                    "-o", "json", namesrv=cluster.namesrv, timeout=60)
    finally:
        cluster.resume("broker-b")
    # diagnose broker on the hung master: not answering, never healthy
    assert judged.returncode == EXIT_UNREACHABLE and "Traceback" not in judged.stderr, judged.stdout + judged.stderr
    # the hung broker itself: unreachable (exit 3) in one line, after one timeout, not a hang or a traceback
    assert hung.returncode == EXIT_UNREACHABLE and hung.stderr.startswith("mq: error:"), hung.stderr
    assert hung.stderr.count("\n") == 1 and hung_took < 2 * float(TIMEOUT) + 10
    # mqadmin's brokerStatus -c: the others still shown, the hung one a line on stderr and a partial exit (mqadmin
    # stops at it)
    assert every.returncode == EXIT_PARTIAL, every.stderr
    assert {line[:24].rstrip() for line in every.stdout.splitlines()} == {
        cluster.addr(b) for b in ("broker-a", "broker-a-s", "broker-b-s")}
    assert every.stderr.count("\n") == 1 and cluster.addr("broker-b") in every.stderr
    assert (progress_code, progress["partial"], progress["diffTotal"]) == (EXIT_OK, False, LAG)
    assert sources(progress) == {"broker-a": {"master"}, "broker-b": {"slave"}}
    assert (code, doc["partial"]) == (EXIT_OK, False)
    assert doc["messages"] == SENT and len(doc["queues"]) == 8
    assert sources(doc) == {"broker-a": {"master"}, "broker-b": {"slave"}}
    # one timeout for the set (not one per queue), plus the command's own start-up
    assert took < 2 * float(TIMEOUT) + 10
    # the exporter: the hung master is down, its set's figures come from its slave
    assert figures["mq_broker_set_master_up"] == {"broker-a": 1.0, "broker-b": 0.0}
    assert figures["mq_broker_up"] == {"broker-a/master": 1.0, "broker-a/slave": 1.0, "broker-b/master": 0.0,
                                       "broker-b/slave": 1.0}
    assert figures["rocketmq_producer_offset"] == {"broker-a": SENT / 2, "broker-b": SENT / 2}
    assert figures["rocketmq_group_diff"] == {TOPIC: LAG}


def test_a_killed_master_is_read_from_its_slave(cluster: PresetCluster) -> None:
    cluster.kill("broker-a")
    code, doc, _ = topic_status(cluster)
    assert (code, doc["partial"], doc["unreachable"]) == (EXIT_OK, False, [])
    assert doc["messages"] == SENT and len(doc["queues"]) == 8
    assert sources(doc) == {"broker-a": {"slave"}, "broker-b": {"master"}}
    code, progress = group_progress(cluster)
    assert (code, progress["partial"], progress["diffTotal"]) == (EXIT_OK, False, LAG)
    assert sources(progress) == {"broker-a": {"slave"}, "broker-b": {"master"}}
    table = mq_here("admin", "topic", "status", TOPIC, "--timeout", TIMEOUT, namesrv=cluster.namesrv)
    assert table.returncode == EXIT_OK and "* read from a slave (no master answering): broker-a" in table.stdout
    ha = mq_here("admin", "ha", "status", "-o", "json", "--timeout", TIMEOUT, namesrv=cluster.namesrv)
    assert ha.returncode == EXIT_OK, ha.stderr
    (lost,) = [g for g in json.loads(ha.stdout)["groups"] if g["brokerName"] == "broker-a"]
    assert (lost["masterAddr"], lost["error"]) == (None, "no master registered")
    (slave,) = lost["slaves"]
    assert slave["brokerAddr"] == cluster.addr("broker-a-s") and slave["slaveReport"]["maxOffset"] > 0
    ready = mq_here("admin", "ha", "ready", "broker-a", "--timeout", TIMEOUT, namesrv=cluster.namesrv)
    assert ready.returncode == EXIT_UNREACHABLE and "no master of broker-a is registered" in ready.stdout
    # messages of the master-less set, read from its slave: by offset msgId, key, unique key and queue offset
    for args in (["msg", "get", FIRST_ON_A["offsetMsgId"]], ["msg", "key", TOPIC, "key0"],
                 ["msg", "unique", TOPIC, FIRST_ON_A["msgId"]], ["msg", "at", TOPIC, "broker-a", "0", "0"]):
        read = mq_here("admin", *args, "-o", "json", "--timeout", TIMEOUT, namesrv=cluster.namesrv)
        assert read.returncode == EXIT_OK, (args, read.stdout, read.stderr)
        doc = json.loads(read.stdout)
        found = doc["messages"] if "messages" in doc else [doc["message"]]
        stored = [(m["body"], m["queueId"], m["storeHost"]) for m in found]
        assert doc["partial"] is False and stored == [("m0", 0, cluster.addr("broker-a"))], doc
    # mqadmin's brokerStatus -c shows the master-less set's slave (it was left out); statsAll's sums leave out the
    # set's counters (its dead master's): n/a in mqadmin's row, "at least" in `broker stats` (they passed as totals)
    every = mq_here("admin", "brokerStatus", "-c", "DefaultCluster", namesrv=cluster.namesrv, env={"MQ_TIMEOUT": TIMEOUT})
    assert (every.returncode, every.stderr) == (EXIT_OK, "")
    assert {line[:24].rstrip() for line in every.stdout.splitlines()} == {
        cluster.addr(b) for b in ("broker-a-s", "broker-b", "broker-b-s")}
    # getBrokerConfig -c shows the master-less set's slave and says why its master is missing (mqadmin fails on a
    # `null` master); haStatus -c shows its slave's HA client (mqadmin leaves the set out); updateBrokerConfig -c
    # refuses before writing anything (mqadmin skips the set, whose master comes back with the old value)
    configs = mq_here("admin", "getBrokerConfig", "-c", "DefaultCluster", namesrv=cluster.namesrv,
                      env={"MQ_TIMEOUT": TIMEOUT})
    assert (configs.returncode, configs.stderr) == (EXIT_OK, "broker-a: no master registered; its slaves are shown\n")
    assert [line for line in configs.stdout.splitlines() if line.startswith("====")] == [
        f"============My Master: null=====Slave: {cluster.addr('broker-a-s')}============",
        f"============Master: {cluster.addr('broker-b')}============",
        f"============My Master: {cluster.addr('broker-b')}=====Slave: {cluster.addr('broker-b-s')}============"]
    ha_status = mq_here("admin", "haStatus", "-c", "DefaultCluster", namesrv=cluster.namesrv, env={"MQ_TIMEOUT": TIMEOUT})
    assert ha_status.returncode == EXIT_OK and "broker-a: no master registered" in ha_status.stderr, ha_status.stderr
    assert ha_status.stdout.count("#MasterAddr") == 2 and "#CommitLogMaxOffset" in ha_status.stdout
    refused = mq_here("admin", "updateBrokerConfig", "-c", "DefaultCluster", "-k", "maxMessageSize", "-v", "4194305",
                      namesrv=cluster.namesrv, env={"MQ_TIMEOUT": TIMEOUT})
    assert (refused.returncode, refused.stdout) == (EXIT_REFUSED, ""), refused.stderr
    assert "broker set broker-a has no master registered" in refused.stderr
    left = mq_here("admin", "getBrokerConfig", "-b", cluster.addr("broker-b"), namesrv=cluster.namesrv)
    assert f"{'maxMessageSize':<50}=  4194304" in left.stdout.splitlines()
    stats = mq_here("admin", "statsAll", "-t", TOPIC, namesrv=cluster.namesrv, env={"MQ_TIMEOUT": TIMEOUT})
    assert stats.returncode == EXIT_OK
    assert stats.stdout.splitlines()[1].split() == [TOPIC, GROUP, str(LAG), "n/a", "n/a", "n/a", "n/a"], stats.stdout
    native = mq_here("admin", "broker", "stats", "-t", TOPIC, "--timeout", TIMEOUT, namesrv=cluster.namesrv)
    assert native.returncode == EXIT_PARTIAL and f"at least {SENT // 2}" in native.stdout.splitlines()[1], native.stdout
    codes = sweep(cluster.namesrv, sweep_values(cluster))
    # every other read whole; the name server killed first makes theirs partial (mqadmin's fails, as Apache's);
    # statsAll's put and get counters of the master-less set are its master's, and so is the check service of
    # its open transactions: both partial, as the producers of the set (they connect to masters); the writes' dry runs
    # refuse the master-less set; mqadmin's queryMsgById, like Apache's, finds the offset msgId's broker gone
    # and tries it as a unique key
    assert {name: code for name, code in codes.items() if code != EXIT_OK} == {
        "ha ready": EXIT_UNREACHABLE, "namesrv config get": EXIT_PARTIAL, "getNamesrvConfig": EXIT_UNREACHABLE,
        "broker stats": EXIT_PARTIAL, "txn list": EXIT_PARTIAL, "producer list": EXIT_PARTIAL,
        "offset reset --dry-run": EXIT_REFUSED, "offset skip --dry-run": EXIT_REFUSED, "queryMsgById": EXIT_REFUSED}
    assert mcp_sweep(cluster.namesrv, sweep_values(cluster)) == dict.fromkeys(MCP_READS, "whole")
    figures = exported(cluster)
    assert figures["mq_broker_set_master_up"] == {"broker-a": 0.0, "broker-b": 1.0}
    assert figures["rocketmq_producer_offset"] == {"broker-a": SENT / 2, "broker-b": SENT / 2}
    assert figures["rocketmq_group_diff"] == {TOPIC: LAG}
    assert figures["rocketmq_consumer_offset"] == {"broker-a": COMMITTED * 4, "broker-b": COMMITTED * 4}
    judged = mq("admin", "diagnose", "group", GROUP, "-o", "json", namesrv=cluster.namesrv, timeout=90)
    verdict = json.loads(judged.stdout)
    assert verdict["lag"] == LAG, verdict  # broker-a's queues counted, from its slave
    assert (verdict["verdict"], verdict["also"][:1]) == ("offline", ["no master"]), verdict


def test_writes_to_a_set_without_master_refuse_and_write_nowhere(cluster: PresetCluster) -> None:
    with SyncMQAdmin(cluster.namesrv) as admin:
        (name,) = admin.cluster_info().cluster_addr_table
        before = admin.topics.topic_configs(cluster.addr("broker-b"))[TOPIC]
        for args in (["topic", "update", TOPIC, "-w", "2"], ["topic", "create", "OutageNew", "-c", name],
                     ["group", "create", "OutageNewGroup", "-c", name],
                     ["offset", "reset", GROUP, TOPIC, "--earliest", "--yes"],
                     ["offset", "reset", GROUP, TOPIC, "--earliest", "--dry-run"]):
            result = mq_here("admin", *args, namesrv=cluster.namesrv)
            assert result.returncode == EXIT_REFUSED, (args, result.stdout, result.stderr)
            assert result.stderr.startswith("mq: error: broker set broker-a has no master registered"), result.stderr
        b = cluster.addr("broker-b")
        assert admin.topics.topic_configs(b)[TOPIC].write_queue_nums == before.write_queue_nums == 4
        assert "OutageNew" not in admin.topics.topic_configs(b) and "OutageNewGroup" not in admin.groups.subscription_groups(b)
        committed = admin.offsets.committed_offsets(GROUP, TOPIC)
        assert [v for q, v in committed.items() if q.broker_name == "broker-b"] == [COMMITTED] * 4
    listing = mq_here("admin", "cluster", "list", "-o", "json", namesrv=cluster.namesrv)
    assert listing.returncode == EXIT_OK
    assert [s["brokerName"] for s in json.loads(listing.stdout)["brokerSetsWithoutMaster"]] == ["broker-a"]
    table = mq_here("admin", "cluster", "list", namesrv=cluster.namesrv).stdout
    assert "broker set broker-a has no master registered" in table
    assert any(line.split()[1:4] == ["broker-a", "0", "no"] for line in table.splitlines()[1:] if line.strip())
    top = mq_here("top", "--once", "-o", "json", namesrv=cluster.namesrv)
    assert top.returncode == EXIT_OK, top.stderr
    brokers = json.loads(top.stdout)["views"]["brokers"]
    missing = [r for r in brokers["rows"] if r["status"] == "no master"]
    assert [(r["brokerName"], r["brokerId"]) for r in missing] == [("broker-a", 0)]
    assert any(n.startswith("broker-a: no master registered") for n in brokers["notes"])
    verdicts = mq("admin", "diagnose", "cluster", "-o", "json", namesrv=cluster.namesrv, timeout=90)
    assert verdicts.returncode == EXIT_REFUSED, verdicts.stderr  # something needs action
    first = json.loads(verdicts.stdout)["items"][0]
    assert (first["kind"], first["name"], first["verdict"], first["severity"]) == ("set", "broker-a", "no master",
                                                                                     "action")
    # mqadmin's topicStatus reads the master-less set from its slave too, as Apache's does
    classic = mq_here("admin", "topicStatus", "-t", TOPIC, namesrv=cluster.namesrv)
    assert classic.returncode == EXIT_OK and classic.stdout.count("broker-a") == 4, classic.stdout


def test_a_set_with_no_replica_answering_makes_the_answer_partial(cluster: PresetCluster) -> None:
    slave = cluster.addr("broker-a-s")
    cluster.pause("broker-a-s")
    try:
        code, doc, _ = topic_status(cluster)
        table = mq_here("admin", "topic", "status", TOPIC, "--timeout", TIMEOUT, namesrv=cluster.namesrv)
        progress_code, progress = group_progress(cluster)
        tool = asyncio.run(mcp_call(cluster.namesrv, "topic_status", {"topic": TOPIC}))
        by_key = mq_here("admin", "msg", "key", TOPIC, "key0", "-o", "json", "--timeout", TIMEOUT, namesrv=cluster.namesrv)
        codes = sweep(cluster.namesrv, sweep_values(cluster), HUNG_TIMEOUT)
        tools = mcp_sweep(cluster.namesrv, sweep_values(cluster), HUNG_TIMEOUT)
        figures = exported(cluster)
    finally:
        cluster.resume("broker-a-s")
    # MCP: what needs broker-a is a partial document, or an error of one line when only broker-a has it
    assert {name: outcome for name, outcome in tools.items() if outcome != "whole"} == NO_REPLICA_OF_A
    # the exporter: broker-a's figures absent (never 0), and no diff, which summed without it would undercount
    assert figures["mq_broker_set_master_up"] == {"broker-a": 0.0, "broker-b": 1.0}
    # the hung slave (broker-a's master is gone, unregistered) is named: its own figures are gone with it
    assert figures["mq_broker_up"] == {"broker-a/slave": 0.0, "broker-b/master": 1.0, "broker-b/slave": 1.0}
    assert figures["rocketmq_producer_offset"] == {"broker-b": SENT / 2}
    assert "rocketmq_group_diff" not in figures
    assert figures["rocketmq_consumer_offset"] == {"broker-b": COMMITTED * 4}
    # an MCP client gets the partial document as a result, not an error
    assert not tool.is_error, tool.content
    assert tool.structured_content["partial"] is True
    assert [u["brokerName"] for u in tool.structured_content["unreachable"]] == ["broker-a"]
    assert (code, doc["partial"]) == (EXIT_PARTIAL, True)
    assert [(u["brokerName"], u["addr"]) for u in doc["unreachable"]] == [("broker-a", slave)]
    assert doc["messages"] == SENT // 2 and sources(doc) == {"broker-b": {"master"}}
    assert doc["putTps"] is None
    assert doc["unreachable"][0]["reason"].startswith("no master registered; slave")
    assert (progress_code, progress["partial"], progress["diffTotal"]) == (EXIT_PARTIAL, True, LAG // 2)
    assert [u["brokerName"] for u in progress["unreachable"]] == ["broker-a"] and progress["consumeTps"] is None
    # whatever needs broker-a is partial (4) or, asked of broker-a alone, unreachable (3): mqadmin's key queries too,
    # as key0 and the message's msgId are on broker-a only (they printed a bare header, exit 0)
    assert {name: code for name, code in codes.items() if code != EXIT_OK} == {
        "cluster list": EXIT_PARTIAL, "topic status": EXIT_PARTIAL, "group progress": EXIT_PARTIAL,
        "msg unique": EXIT_PARTIAL, "msg key": EXIT_PARTIAL, "timer status": EXIT_PARTIAL, "namesrv config get": EXIT_PARTIAL,
        "group consume-mode": EXIT_PARTIAL, "broker stats": EXIT_PARTIAL, "txn list": EXIT_PARTIAL,
        "group status": EXIT_PARTIAL, "topic cq": EXIT_PARTIAL, "producer list": EXIT_PARTIAL,
        "group list": EXIT_PARTIAL, "proxy clients": EXIT_PARTIAL, "proxy status": EXIT_PARTIAL,
        "ha status": EXIT_PARTIAL, "msg print": EXIT_PARTIAL, "msg consume": EXIT_PARTIAL, "msg get": EXIT_UNREACHABLE, "msg at": EXIT_UNREACHABLE,
        "queryMsgByOffset": EXIT_UNREACHABLE, "queryMsgByKey": EXIT_UNREACHABLE, "queryMsgByUniqueKey": EXIT_UNREACHABLE,
        "ha ready": EXIT_UNREACHABLE, "getNamesrvConfig": EXIT_UNREACHABLE, "queryCq": EXIT_UNREACHABLE,
        "offset reset --dry-run": EXIT_REFUSED,
        "offset skip --dry-run": EXIT_REFUSED, "queryMsgById": EXIT_REFUSED}
    keyed = json.loads(by_key.stdout)  # key0 is on broker-a only: nothing found, and the list says why
    assert (by_key.returncode, keyed["partial"], keyed["count"]) == (EXIT_PARTIAL, True, 0), by_key.stderr
    assert [u["brokerName"] for u in keyed["unreachable"]] == ["broker-a"]
    assert table.returncode == EXIT_PARTIAL
    assert f"total: at least 4 queues, at least {SENT // 2} messages" in table.stdout
    assert table.stdout.rstrip().splitlines()[-1].startswith("partial: could not read broker-a")


def master_registered(cluster: PresetCluster, broker: str) -> bool:
    with SyncMQAdmin(cluster.namesrv) as admin:
        data = admin.cluster_info().broker_addr_table.get(broker)
    return data is not None and 0 in data.broker_addrs


def test_every_master_down_every_set_is_read_from_its_slave(cluster: PresetCluster) -> None:
    """No set with a master (broker-a's killed before, broker-b's now): every figure still whole, each set
    read from its slave; the group judged without any master to relay a member's running info (that state
    once ended `diagnose group` in a traceback); broker-b's master started again for the next test."""
    cluster.kill("broker-b")
    try:
        code, doc, _ = topic_status(cluster)
        progress_code, progress = group_progress(cluster)
        status = mq_here("admin", "group", "status", GROUP, "-o", "json", "--timeout", TIMEOUT, namesrv=cluster.namesrv)
        top = mq_here("top", "--once", "-o", "json", namesrv=cluster.namesrv)
        figures = exported(cluster)
        judged = mq("admin", "diagnose", "group", GROUP, "-o", "json", namesrv=cluster.namesrv, timeout=90)
        write = mq_here("admin", "topic", "update", TOPIC, "-w", "2", namesrv=cluster.namesrv)
    finally:
        cluster.start("broker-b")
    assert (code, doc["partial"], doc["messages"]) == (EXIT_OK, False, SENT)
    assert sources(doc) == {"broker-a": {"slave"}, "broker-b": {"slave"}}
    assert (progress_code, progress["partial"], progress["diffTotal"]) == (EXIT_OK, False, LAG)
    assert sources(progress) == {"broker-a": {"slave"}, "broker-b": {"slave"}}
    # the group's one line (group status, mq top's groups view): its lag whole, each set from its slave
    assert status.returncode == EXIT_OK, status.stdout + status.stderr
    (line,) = json.loads(status.stdout)["groups"]
    assert line["diffTotal"] == LAG, line
    assert top.returncode == EXIT_OK, top.stderr
    views = json.loads(top.stdout)["views"]
    rows = views["brokers"]["rows"]
    assert sorted((r["brokerName"], r["brokerId"]) for r in rows if r["status"] == "no master") == [
        ("broker-a", 0), ("broker-b", 0)]
    assert [r["lag"] for r in views["groups"]["rows"] if r["group"] == GROUP] == [LAG]
    assert figures["mq_broker_set_master_up"] == {"broker-a": 0.0, "broker-b": 0.0}
    assert figures["rocketmq_producer_offset"] == {"broker-a": SENT / 2, "broker-b": SENT / 2}
    assert figures["rocketmq_group_diff"] == {TOPIC: LAG}
    verdict = json.loads(judged.stdout)
    assert "Traceback" not in judged.stderr, judged.stderr
    assert (verdict["lag"], verdict["partial"], verdict["verdict"]) == (LAG, False, "offline"), verdict
    assert verdict["also"][:1] == ["no master"], verdict
    assert write.returncode == EXIT_REFUSED and "has no master registered" in write.stderr, write.stderr
    wait_for(lambda: master_registered(cluster, "broker-b"), 60, "broker-b's master registered again")


def test_a_slave_down_leaves_every_read_whole_and_its_master_unsafe_to_stop(cluster: PresetCluster) -> None:
    cluster.kill("broker-b-s")  # F3
    code, doc, _ = topic_status(cluster)
    assert (code, doc["partial"]) == (EXIT_OK, False)
    assert doc["messages"] == SENT and sources(doc) == {"broker-a": {"slave"}, "broker-b": {"master"}}
    ha = mq_here("admin", "ha", "status", "--timeout", TIMEOUT, namesrv=cluster.namesrv)
    assert ha.returncode == EXIT_OK and "broker-b: no slave registered" in ha.stdout, ha.stdout
    ready = mq_here("admin", "ha", "ready", "broker-b", "-o", "json", "--timeout", TIMEOUT, namesrv=cluster.namesrv)
    assert ready.returncode == EXIT_REFUSED, ready.stdout + ready.stderr
    assert json.loads(ready.stdout)["verdict"] == "not safe"
    assert mcp_sweep(cluster.namesrv, sweep_values(cluster)) == dict.fromkeys(MCP_READS, "whole")
    figures = exported(cluster)  # broker-a still has no master; broker-b's lost slave leaves no HA figure
    assert figures["mq_broker_set_master_up"] == {"broker-a": 0.0, "broker-b": 1.0}
    assert "broker-b" not in figures.get("mq_ha_diff_bytes", {})
