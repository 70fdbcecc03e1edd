"""The mqadmin dialect's topic, consumer, subscription-group, offset and producer commands: their exact
text (RocketMQ 5 layouts, built here from the printf patterns of mqadmin's source), a runbook run word
for word, and bad input."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest
from support.adminsupport import mq_here, one_line_error
from support.clientsupport import Cluster, until
from support.trafficsupport import amq, commit, online, send_to

from mqtools.client.admin import SyncMQAdmin
from mqtools.client.producer import Producer
from mqtools.common.message import Message, MessageExt
from mqtools.common.topics import NAMESPACE_ORDER_TOPIC_CONFIG

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]
CLUSTER = "ClientIT"


def ok(*args: str, ns: str) -> list[str]:
    done = mq_here("admin", *args, namesrv=ns)
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout.splitlines()


def printf(pattern: str, *values: object) -> str:
    """Java's printf for mqadmin's patterns (no None among the values here)."""
    return pattern % values


def when(ms: int, millis: bool = True) -> str:
    text = datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
    return f"{text},{ms % 1000:03d}" if millis else text


def test_update_topic_route_and_delete_print_what_mqadmin_prints(cluster: Cluster) -> None:
    ns, a, b = cluster.namesrv.addr, cluster.brokers["broker-a"].addr, cluster.brokers["broker-b"].addr
    assert ok("updateTopic", "-c", CLUSTER, "-t", "MaRoute", "-r", "4", "-w", "4", "-p", "6", ns=ns) == [
        f"create topic to {a} success.", f"create topic to {b} success.",
        ("TopicConfig [topicName=MaRoute, readQueueNums=4, writeQueueNums=4, perm=RW-, topicFilterType=SINGLE_TAG, "
        "topicSysFlag=0, order=false, attributes={}]")]
    queue = "\t\t{\n\t\t\t\"brokerName\":\"%s\",\n\t\t\t\"perm\":6,\n\t\t\t\"readQueueNums\":4,\n" \
            "\t\t\t\"topicSysFlag\":0,\n\t\t\t\"writeQueueNums\":4\n\t\t}"
    broker = "\t\t{\n\t\t\t\"brokerAddrs\":{\n\t\t\t\t0:\"%s\"\n\t\t\t},\n\t\t\t\"brokerName\":\"%s\",\n" \
             "\t\t\t\"cluster\":\"ClientIT\",\n\t\t\t\"enableActingMaster\":false\n\t\t}"
    with SyncMQAdmin(ns) as admin:  # mqadmin keeps the name server's order of brokers and queues
        route = admin.topics.topic_route("MaRoute")
    brokers = ",\n".join(broker % (d.broker_addrs[0], d.broker_name) for d in route.broker_datas)
    queues = ",\n".join(queue % q.broker_name for q in route.queue_datas)
    assert mq_here("admin", "topicRoute", "-t", "MaRoute", namesrv=ns).stdout == (
        "{\n\t\"brokerDatas\":[\n" + brokers + "\n\t],\n\t\"filterServerTable\":{},\n\t\"queueDatas\":[\n"
        + queues + "\n\t]\n}\n")
    listed = "%-45s %-32s %-50s %-10s %-11s %-5s"
    assert ok("TOPICROUTE", "-t", "MaRoute", "-l", ns=ns) == [
        listed % ("#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm"),
        listed % (CLUSTER, "broker-a", f"{{0={a}}}", 4, 4, 6), listed % (CLUSTER, "broker-b", f"{{0={b}}}", 4, 4, 6),
        "-" * 158, listed % ("Total:", 2, "", 8, 8, "")]
    assert ok("topicClusterList", "-t", "MaRoute", ns=ns) == [CLUSTER]
    assert ok("deleteTopic", "-c", CLUSTER, "-t", "MaRoute", ns=ns) == [
        f"delete topic [MaRoute] from cluster [{CLUSTER}] success.", "delete topic [MaRoute] from NameServer success."]
    one_line_error(mq_here("admin", "topicRoute", "-t", "MaRoute", namesrv=ns), 1, "TOPIC_NOT_EXIST")


def test_update_topic_on_one_broker_records_its_order_layout(cluster: Cluster) -> None:
    ns, a = cluster.namesrv.addr, cluster.brokers["broker-a"].addr
    assert ok("updateTopic", "-b", a, "-t", "MaOrder", "-r", "2", "-w", "2", "-o", "true", "-a", "+message.type=FIFO",
              ns=ns) == [
        "set broker orderConf. isOrder=true, orderConf=[broker-a:2]", f"create topic to {a} success.",
        ("TopicConfig [topicName=MaOrder, readQueueNums=2, writeQueueNums=2, perm=RW-, topicFilterType=SINGLE_TAG, "
        "topicSysFlag=0, order=true, attributes={+message.type=FIFO}]")]
    with SyncMQAdmin(ns) as admin:
        assert admin.namesrv.get_kv(NAMESPACE_ORDER_TOPIC_CONFIG, "MaOrder") == "broker-a:2"


async def test_topic_status_and_topic_list(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    ok("updateTopic", "-c", CLUSTER, "-t", "MaStatus", "-r", "2", "-w", "2", ns=ns)
    await send_to(ns, "MaStatus", {("broker-a", 1): 3, ("broker-b", 0): 1})
    await commit(ns, "MaStatusGroup", "MaStatus", {("broker-a", 1): 1})
    with SyncMQAdmin(ns) as admin:
        stats = {(mq_.broker_name, mq_.queue_id): o for mq_, o in admin.topics.topic_stats("MaStatus").items()}
    head, row = "%-32s  %-4s  %-20s  %-20s    %s", "%-32s  %-4d  %-20d  %-20d    %s"
    lines = ok("topicStatus", "-t", "MaStatus", ns=ns)
    assert lines[:5] == [head % ("#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated"),
                         row % ("broker-a", 0, 0, 0, ""),
                         row % ("broker-a", 1, 0, 3, when(stats[("broker-a", 1)].last_update_timestamp)),
                         row % ("broker-b", 0, 0, 1, when(stats[("broker-b", 0)].last_update_timestamp)),
                         row % ("broker-b", 1, 0, 0, "")]
    assert lines[5] == "" and re.fullmatch(r"Topic Put TPS: \d+\.\d+(E-?\d+)?", lines[6]) and len(lines) == 7
    assert "MaStatus" in ok("topicList", ns=ns)
    usage = ok("topicList", "-c", ns=ns)
    assert usage[0] == printf("%-20s  %-48s  %-48s", "#Cluster Name", "#Topic", "#Consumer Group")
    assert printf("%-20s  %-64s  %-64s", CLUSTER, "MaStatus", "MaStatusGroup") in usage
    assert printf("%-20s  %-64s  %-64s", CLUSTER, "TBW102", "") in usage
    assert not any(line.split()[1:2] == ["%RETRY%MaStatusGroup"] for line in usage)


async def test_consumer_progress_connection_status_and_producer_connection(cluster: Cluster, tmp_path: Path) -> None:
    ns = cluster.namesrv.addr
    ok("updateTopic", "-c", CLUSTER, "-t", "MaProgress", "-r", "1", "-w", "1", ns=ns)
    await send_to(ns, "MaProgress", {("broker-a", 0): 3, ("broker-b", 0): 2})
    await commit(ns, "MaOffline", "MaProgress", {("broker-a", 0): 2, ("broker-b", 0): 0})
    with SyncMQAdmin(ns) as admin:
        last = {q.queue.broker_name: q.last_timestamp_ms for q in admin.groups.consumer_progress("MaOffline").queues}
    head = "%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s%s"
    row = "%-64s  %-32s  %-4d  %-20d  %-20d  %-20d %-20d %s"
    lines = ok("consumerProgress", "-g", "MaOffline", ns=ns)
    assert re.fullmatch(r"Consume TPS: \d+\.\d\d", lines.pop(4))  # the pulls above count in the last minute
    assert lines == [
        head % ("#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#Inflight",
                "#LastTime"),
        row % ("MaProgress", "broker-a", 0, 3, 2, 1, 0, when(last["broker-a"] or 0, millis=False)),
        row % ("MaProgress", "broker-b", 0, 2, 0, 2, 0, "N/A"),
        "", "Consume Diff Total: 3", "Consume Inflight Total: 0"]
    with_ip = ok("consumerProgress", "-g", "MaOffline", "-t", "MaProgress", "-s", "true", ns=ns)
    assert with_ip[0] == printf("%-64s  %-32s  %-4s  %-20s  %-20s  %-20s %-20s %-20s%s", 
        "#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Client IP", "#Diff", "#Inflight",
        "#LastTime")
    assert with_ip[2] == printf("%-64s  %-32s  %-4d  %-20d  %-20d  %-20s %-20d %-20d %s", 
        "MaProgress", "broker-b", 0, 2, 0, "N/A", 2, 0, "N/A")

    got: list[MessageExt] = []
    async with online(ns, "MaOnline", "MaProgress", got) as consumer, \
            Producer("MaProducers", namesrv=ns) as producer:
        await until(lambda: len(got) >= 5, 30, "5 messages consumed")
        await producer.send(Message("MaProgress", b"p"))
        await producer.instance.heartbeat()
        with SyncMQAdmin(ns) as admin:
            conn = admin.groups.consumer_connections("MaOnline").connections[0]
            maker = admin.groups.producer_connections("MaProducers", "MaProgress").clients[0]
        assert (await amq("admin", "consumerConnection", "-g", "MaOnline", namesrv=ns)).stdout.splitlines() == [
            printf("%-36s %-22s %-10s %s", "#ClientId", "#ClientAddr", "#Language", "#Version"),
            printf("%-36s %-22s %-10s %s", consumer.instance.client_id, conn.client_addr, "PYTHON", "V4_9_7"),
            "", "Below is subscription:", printf("%-20s %s", "#Topic", "#SubExpression"),
            printf("%-20s %s", "%RETRY%MaOnline", "*"), printf("%-20s %s", "MaProgress", "*"), "",
            "ConsumeType: CONSUME_PASSIVELY", "MessageModel: CLUSTERING",
            "ConsumeFromWhere: CONSUME_FROM_FIRST_OFFSET"]
        # the broker relays GET_CONSUMER_RUNNING_INFO to our client, which answers; the file is written where
        # the command runs, as Apache's mqadmin writes it
        status = (await amq("admin", "consumerStatus", "-g", "MaOnline", namesrv=ns, cwd=tmp_path)).stdout.splitlines()
        assert status[0] == printf("%-10s %-40s %-20s %s", "#Index", "#ClientId", "#Version", "#ConsumerRunningInfoFile")
        assert status[1].startswith(printf("%-10s %-40s %-20s ", 1, consumer.instance.client_id, "V4_9_7"))
        assert status[2:] == ["", "", "Same subscription in the same group of consumer", "", "Rebalance OK"]
        written = tmp_path / status[1].split()[-1]
        assert '"PROP_CONSUMEORDERLY": "false"' in written.read_text() and "MaProgress@" in written.read_text()
        groups = (await amq("admin", "consumerProgress", namesrv=ns)).stdout.splitlines()
        assert groups[0] == printf("%-64s  %-6s  %-24s %-5s  %-14s  %-7s  %s", 
            "#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total")
        assert groups[1].startswith(printf("%-64s  %-6d  %-24s %-5s  %-14s  ", "MaOnline", 1, "V4_9_7", "PUSH", "CLUSTERING"))
        assert (await amq("admin", "producerConnection", "-g", "MaProducers", "-t", "MaProgress",
                          namesrv=ns)).stdout == printf("%04d  %-32s %-22s %-8s %s\n", 
            1, producer.instance.client_id, maker.client_addr, "PYTHON", "V4_9_7")
    one_line_error(mq_here("admin", "consumerConnection", "-g", "MaOffline", namesrv=ns), 1, "CONSUMER_NOT_ONLINE")
    one_line_error(mq_here("admin", "producerConnection", "-g", "MaNobody", "-t", "MaProgress", namesrv=ns), 1,
                   "[MaNobody] has no producer")


def test_update_and_delete_sub_group(cluster: Cluster) -> None:
    ns, a, b = cluster.namesrv.addr, cluster.brokers["broker-a"].addr, cluster.brokers["broker-b"].addr
    config = ("SubscriptionGroupConfig{groupName=MaGroup, consumeEnable=true, consumeFromMinEnable=false, "
              "consumeBroadcastEnable=false, consumeMessageOrderly=false, retryQueueNums=1, retryMaxTimes=%d, "
              "groupRetryPolicy=GroupRetryPolicy{type=CUSTOMIZED, exponentialRetryPolicy=null, "
              "customizedRetryPolicy=null}, brokerId=0, whichBrokerWhenConsumeSlowly=1, "
              "notifyConsumerIdsChangedEnable=true, groupSysFlag=0, consumeTimeoutMinute=15, subscriptionDataSet=null, "
              "attributes={}}")
    assert ok("updateSubGroup", "-c", CLUSTER, "-g", "MaGroup", "-r", "5", ns=ns) == [
        f"create subscription group to {a} success.", f"create subscription group to {b} success.", config % 5]
    assert ok("updateSubGroup", "-b", b, "-g", "MaGroup", "-r", "3", ns=ns) == [
        f"create subscription group to {b} success.", config % 3]
    with SyncMQAdmin(ns) as admin:
        assert {p.broker_name: p.config.retry_max_times for p in admin.groups.subscription_group("MaGroup").placements} == {
            "broker-a": 5, "broker-b": 3}
    assert ok("deleteSubGroup", "-b", a, "-g", "MaGroup", ns=ns) == [
        f"delete subscription group [MaGroup] from broker [{a}] success."]
    assert ok("deleteSubGroup", "-c", CLUSTER, "-g", "MaGroup", "-r", "true", ns=ns) == [
        f"delete subscription group [MaGroup] from broker [{a}] in cluster [{CLUSTER}] success.",
        f"delete subscription group [MaGroup] from broker [{b}] in cluster [{CLUSTER}] success."]
    one_line_error(mq_here("admin", "deleteSubGroup", "-c", CLUSTER, "-g", "MaGroup", namesrv=ns), 1,
                   "SUBSCRIPTION_GROUP_NOT_EXIST")
    one_line_error(mq_here("admin", "updateSubGroup", "-c", CLUSTER, "-g", "MaGroup", "-p", "{}", namesrv=ns), 2,
                   "-p/--groupRetryPolicy is not supported")


async def test_reset_offset_by_time_and_stats_all(cluster: Cluster) -> None:
    ns, a = cluster.namesrv.addr, cluster.brokers["broker-a"].addr
    ok("updateTopic", "-c", CLUSTER, "-t", "MaReset", "-r", "1", "-w", "1", ns=ns)
    ok("updateTopic", "-c", CLUSTER, "-t", "MaIdle", "-r", "1", "-w", "1", ns=ns)
    await send_to(ns, "MaReset", {("broker-a", 0): 4, ("broker-b", 0): 2})
    await commit(ns, "MaResetGroup", "MaReset", {("broker-a", 0): 1, ("broker-b", 0): 1})
    lines = ok("resetOffsetByTime", "-g", "MaResetGroup", "-t", "MaReset", "-s", "-1", ns=ns)
    assert lines == [
        ("start reset consumer offset by specified, group[MaResetGroup], topic[MaReset], force[true], "
        "timestamp(string)[-1], timestamp(long)[-1]"),
        printf("%-40s  %-40s  %-40s", "#brokerName", "#queueId", "#offset"),
        printf("%-40s  %-40d  %-40d", "broker-a", 0, 4), printf("%-40s  %-40d  %-40d", "broker-b", 0, 2)]
    one = ok("resetOffsetByTime", "-g", "MaResetGroup", "-t", "MaReset", "-s", "now", "-b", a, "-q", "0", "-o", "1",
             ns=ns)
    assert re.fullmatch(r"start reset consumer offset by specified, group\[MaResetGroup], topic\[MaReset], "
                        rf"queueId\[0], broker\[{re.escape(a)}], timestamp\(string\)\[now], timestamp\(long\)\[\d+]",
                        one[0]) and one[1:] == ["reset consumer offset to 1"]
    with SyncMQAdmin(ns) as admin:
        offsets = {q.queue.broker_name: q.consumer_offset for q in admin.groups.consumer_progress("MaResetGroup").queues}
    assert offsets == {"broker-a": 1, "broker-b": 2}

    stats = ok("statsAll", ns=ns)
    assert stats[0] == printf("%-64s  %-64s %12s %11s %11s %14s %14s", 
        "#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour")
    mine = [line for line in stats if line.startswith("MaReset ")]
    assert len(mine) == 1 and len(mine[0]) == 197
    assert mine[0][:143] == printf("%-64s  %-64s %12d", "MaReset", "MaResetGroup", 3)
    assert re.fullmatch(r" +\d+\.\d\d +\d+\.\d\d +6 +\d+", mine[0][143:])
    idle = [line for line in stats if line.startswith("MaIdle ")]
    assert idle == [printf("%-64s  %-64s %12d %11.2f %11s %14d %14s", "MaIdle", "", 0, 0.0, "", 0, "NO_CONSUMER")]
    assert [line for line in ok("statsAll", "-a", "-t", "MaIdle", ns=ns)[1:]] == []


async def test_runbook_word_for_word(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    created = mq_here("admin", "updateTopic", "-n", ns, "-c", "ClientIT", "-t", "MaRunbook", "-r", "8", "-w", "8", "-p", "6",
                 "-o", "false")
    assert created.returncode == 0 and created.stdout.count("success.") == 2, created.stderr
    sent = await send_to(ns, "MaRunbook", {("broker-a", 3): 5, ("broker-b", 7): 4})
    # A broker reports a group's lag only on topics it holds offsets of, so commit on both (as consumers do).
    await commit(ns, "MaRunbookGroup", "MaRunbook", {("broker-a", 3): 2, ("broker-b", 7): 1})
    progress = mq_here("admin", "consumerProgress", "-n", ns, "-g", "MaRunbookGroup")
    assert progress.returncode == 0 and progress.stdout.splitlines()[-2:] == [
        f"Consume Diff Total: {len(sent) - 3}", "Consume Inflight Total: 0"], progress.stderr
    reset = mq_here("admin", "resetOffsetByTime", "-n", ns, "-g", "MaRunbookGroup", "-t", "MaRunbook", "-s", "now")
    assert reset.returncode == 0, reset.stderr
    rows = {tuple(line.split()[:2]): int(line.split()[2]) for line in reset.stdout.splitlines()[2:]}
    assert rows[("broker-a", "3")] == 5 and rows[("broker-b", "7")] == 4 and len(rows) == 16
    assert mq_here("admin", "consumerProgress", "-n", ns, "-g", "MaRunbookGroup").stdout.splitlines()[-2] == (
        "Consume Diff Total: 0")
    deleted = mq_here("admin", "deleteTopic", "-n", ns, "-c", "ClientIT", "-t", "MaRunbook")
    assert deleted.returncode == 0 and deleted.stdout.splitlines() == [
        "delete topic [MaRunbook] from cluster [ClientIT] success.", "delete topic [MaRunbook] from NameServer success."]
    one_line_error(mq_here("admin", "topicRoute", "-n", ns, "-t", "MaRunbook"), 1, "TOPIC_NOT_EXIST")


@pytest.mark.parametrize(("args", "code", "fragment"), [
    (("updateTopic", "-c", CLUSTER, "-t", "MaBad", "-r", "0"), 2, "-r/--readQueueNums must be 1..1024"),
    (("updateTopic", "-c", CLUSTER, "-t", "MaBad", "-w", "2000"), 2, "-w/--writeQueueNums must be 1..1024"),
    (("updateTopic", "-c", CLUSTER, "-t", "MaBad", "-p", "5"), 2, "-p/--perm must be 2 (W), 4 (R) or 6 (RW)"),
    (("updateTopic", "-t", "MaBad"), 2, "give one of -b/--brokerAddr and -c/--clusterName"),
    (("updateTopic", "-c", CLUSTER, "-t", "MaBad", "-a", "k=v"), 2, "bad attribute 'k=v'"),
    (("resetOffsetByTime", "-g", "MaNoGroup", "-t", "MaBad", "-s", "2026-02-30#10:00:00:000"), 2, "bad time"),
    (("topicRoute", "-t", "MaBad"), 1, "TOPIC_NOT_EXIST"),
    (("topicStatus", "-t", "MaBad"), 1, "TOPIC_NOT_EXIST"),
    (("consumerProgress", "-g", "MaNoGroup"), 1, "SUBSCRIPTION_GROUP_NOT_EXIST"),
    (("resetOffsetByTime", "-g", "MaNoGroup", "-t", "TBW102", "-s", "now"), 1, "SUBSCRIPTION_GROUP_NOT_EXIST"),
    (("updateSubGroup", "-g", "MaBad"), 2, "give -b/--brokerAddr or -c/--clusterName"),
])
def test_bad_input_is_one_line_with_the_documented_exit_code(cluster: Cluster, args: tuple[str, ...], code: int,
                                                             fragment: str) -> None:
    one_line_error(mq_here("admin", *args, namesrv=cluster.namesrv.addr), code, fragment)
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        assert "MaBad" not in admin.topics.topic_list()
        assert "MaBad" not in {e.group for e in admin.groups.group_list().entries}
