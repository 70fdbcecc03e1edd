"""The mqadmin dialect's message, broker and write-permission commands: mqadmin's option letters and
long names, and its output byte for byte where it does not depend on the moment (headers, widths,
field labels, messages); rows are checked field by field."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import pytest
from support.adminsupport import mq_here, one_line_error
from support.clientsupport import Cluster
from support.ports import free_port

from mqtools.client.admin import SyncMQAdmin
from mqtools.remoting.bodies import SubscriptionGroupConfig, TopicConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

SEND_HEADER = "#Broker Name                      #QID  #Send Result            #MsgId"
KEY_HEADER = "#Message ID" + " " * 39 + " #QID " + " " * 33 + "#Offset"
DETAIL_LABELS = ["OffsetID:", "Topic:", "Tags:", "Keys:", "Queue ID:", "Queue Offset:", "CommitLog Offset:",
                 "Reconsume Times:", "Born Timestamp:", "Store Timestamp:", "Born Host:", "Store Host:",
                 "System Flag:", "Properties:", "Message Body Path:"]
STAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}$")


@pytest.fixture(scope="module")
def sent(cluster: Cluster) -> dict[str, str]:
    """One message sent with sendMessage to queue 1 of broker-a, its id read from the row."""
    with SyncMQAdmin(cluster.namesrv.addr) as admin:
        for broker in cluster.brokers.values():
            admin.topics.create_topic(TopicConfig("AdmGold", 2, 2), broker_addr=broker.addr)
    out = mq_here("admin", "sendMessage", "-t", "AdmGold", "-p", "gold body", "-c", "TagG", "-k", "gold-key", "-b",
             "broker-a", "-i", "1", namesrv=cluster.namesrv.addr)
    assert out.returncode == 0, out.stderr
    header, row = out.stdout.splitlines()
    assert header == SEND_HEADER
    assert row[:34] == "broker-a" + " " * 26 and row[34:40] == "1     " and row[40:64] == "SEND_OK" + " " * 17
    return {"msg_id": row[64:].strip()}


def test_query_msg_by_key_table(cluster: Cluster, sent: dict[str, str]) -> None:
    out = mq_here("admin", "queryMsgByKey", "-t", "AdmGold", "-k", "gold-key", namesrv=cluster.namesrv.addr)
    header, row = out.stdout.splitlines()
    assert header == KEY_HEADER
    assert row == f"{sent['msg_id']:<50} {1:>4} {0:>40}"


def test_query_msg_by_id_and_unique_key_print_every_field(cluster: Cluster, sent: dict[str, str]) -> None:
    ns = cluster.namesrv.addr
    out = mq_here("admin", "queryMsgById", "-t", "AdmGold", "-i", sent["msg_id"], namesrv=ns)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [line[:21].rstrip() for line in lines[:15]] == DETAIL_LABELS
    fields = {line[:20].strip(): line[21:] for line in lines[:15]}
    assert fields["Topic:"] == "AdmGold" and fields["Tags:"] == "[TagG]" and fields["Keys:"] == "[gold-key]"
    assert fields["Queue ID:"] == "1" and fields["Queue Offset:"] == "0"
    assert STAMP.match(fields["Born Timestamp:"]) and STAMP.match(fields["Store Timestamp:"])
    assert fields["Store Host:"] == cluster.brokers["broker-a"].addr
    assert f"UNIQ_KEY={sent['msg_id']}" in fields["Properties:"] and fields["Properties:"].startswith("{")
    with open(fields["Message Body Path:"], "rb") as body:
        assert body.read() == b"gold body"
    assert lines[15:] == ["", "", "WARN: No Consumer"]
    unique = mq_here("admin", "queryMsgByUniqueKey", "-t", "AdmGold", "-i", sent["msg_id"], namesrv=ns)
    ulines = unique.stdout.splitlines()
    assert [line[:21].rstrip() for line in ulines[:14]] == DETAIL_LABELS[1:]
    missing = mq_here("admin", "queryMsgById", "-t", "AdmGold", "-i", "C0A8010A00002A9F0000000000000001", namesrv=ns)
    assert missing.returncode == 1 and missing.stdout == "\nMessage not found!"


def test_query_msg_by_offset_and_its_tracks(cluster: Cluster, sent: dict[str, str]) -> None:
    ns = cluster.namesrv.addr
    with SyncMQAdmin(ns) as admin:
        admin.groups.create_subscription_group(SubscriptionGroupConfig("CG_ADM_GOLD"), cluster="ClientIT")
        admin.call(cluster.brokers["broker-a"].addr, 15, {"consumerGroup": "CG_ADM_GOLD", "topic": "AdmGold",
                                                           "queueId": "1", "commitOffset": "1"})
    out = mq_here("admin", "queryMsgByOffset", "-t", "AdmGold", "-b", "broker-a", "-i", "1", "-o", "0", "-f", "UTF-8",
             namesrv=ns)
    lines = out.stdout.splitlines()
    assert lines[0].startswith("OffsetID:") and lines[15] == "Message Body:        gold body"
    assert "MIN_OFFSET=0" in lines[13] and "MAX_OFFSET=1" in lines[13]
    assert lines[16:] == ["", "", ("MessageTrack [consumerGroup=CG_ADM_GOLD, trackType=NOT_ONLINE, "
                                   "exceptionDesc=CODE:206 DESC:the consumer group[CG_ADM_GOLD] not online]")]
    one_line_error(mq_here("admin", "queryMsgByOffset", "-t", "AdmGold", "-b", "broker-a", "-i", "1", "-o", "5",
                      namesrv=ns), 1, "offset 5")


def test_print_msg_and_consume_message(cluster: Cluster, sent: dict[str, str]) -> None:
    ns = cluster.namesrv.addr
    out = mq_here("admin", "printMsg", "-t", "AdmGold", "-d", "false", namesrv=ns).stdout.splitlines()
    assert out[0] == "minOffset=0, maxOffset=0, MessageQueue [topic=AdmGold, brokerName=broker-a, queueId=0]"
    assert out[1] == "-" * 56
    assert out[2] == "minOffset=0, maxOffset=1, MessageQueue [topic=AdmGold, brokerName=broker-a, queueId=1]"
    assert out[3].startswith(f"MSGID: {sent['msg_id']} MessageExt [brokerName=broker-a, queueId=1, storeSize=")
    assert "toString()=Message{topic='AdmGold', flag=0, properties={" in out[3]
    assert "body=[103, 111, 108, 100, 32, 98, 111, 100, 121], transactionId='null'}] BODY: NOT PRINT BODY" in out[3]
    assert out[4] == "-" * 56 and len(out) == 9
    assert out[5] == "minOffset=0, maxOffset=0, MessageQueue [topic=AdmGold, brokerName=broker-b, queueId=0]"
    consumed = mq_here("admin", "consumeMessage", "-t", "AdmGold", "-b", "broker-a", "-i", "1", namesrv=ns)
    lines = consumed.stdout.splitlines()
    assert lines[0] == "Consume ok" and lines[1].endswith("BODY: gold body")
    assert lines[2] == ("MessageQueue [topic=AdmGold, brokerName=broker-a, queueId=1] print msg finished. "
                        "status=NO_NEW_MSG, offset=1")
    one_line_error(mq_here("admin", "consumeMessage", "-t", "AdmGold", "-i", "1", namesrv=ns), 2,
                   "Please set the brokerName before queueId!")


def test_broker_status_and_config_layouts(cluster: Cluster) -> None:
    ns, addr = cluster.namesrv.addr, cluster.brokers["broker-a"].addr
    status = mq_here("admin", "brokerStatus", "-b", addr, namesrv=ns).stdout.splitlines()
    keys = [line[:32].rstrip() for line in status]
    assert keys == sorted(keys) and all(line.index(": ") >= 32 for line in status)
    assert f"{'brokerActive':<32}: true" in status
    by_cluster = mq_here("admin", "brokerStatus", "-c", "ClientIT", namesrv=ns).stdout.splitlines()
    assert {line[:24].rstrip() for line in by_cluster} == {b.addr for b in cluster.brokers.values()}
    assert f"{addr:<24} {'brokerActive':<32}: true" in by_cluster
    config = mq_here("admin", "getBrokerConfig", "-b", addr, namesrv=ns).stdout.split("\n")
    assert config[0] == f"============{addr}============" and f"{'brokerName':<50}=  broker-a" in config
    assert config[-2:] == ["", ""]
    masters = mq_here("admin", "getBrokerConfig", "-c", "ClientIT", namesrv=ns).stdout.splitlines()
    assert [line for line in masters if line.startswith("====")] == [
        f"============Master: {cluster.brokers[n].addr}============" for n in ("broker-a", "broker-b")]
    updated = mq_here("admin", "updateBrokerConfig", "-c", "ClientIT", "-k", "maxMessageSize", "-v", "4194305",
                 namesrv=ns)
    assert updated.stdout.splitlines() == [f"update broker config success, {cluster.brokers[n].addr}"
                                           for n in ("broker-a", "broker-b")]
    one_line_error(mq_here("admin", "brokerStatus", namesrv=ns), 2, "-b/--brokerAddr")


def test_broker_consume_stats_layout(cluster: Cluster, sent: dict[str, str]) -> None:
    ns, addr = cluster.namesrv.addr, cluster.brokers["broker-a"].addr
    with SyncMQAdmin(ns) as admin:
        admin.groups.create_subscription_group(SubscriptionGroupConfig("CG_ADM_GOLD2"), cluster="ClientIT")
        admin.call(addr, 15, {"consumerGroup": "CG_ADM_GOLD2", "topic": "AdmGold", "queueId": "1", "commitOffset": "1"})
    lines = mq_here("admin", "brokerConsumeStats", "-b", addr, namesrv=ns).stdout.splitlines()
    assert lines[0] == ("#Topic" + " " * 60 + "#Group" + " " * 60 + "#Broker Name" + " " * 22 + "#QID  "
                        "#Broker Offset        #Consumer Offset      #Diff                 #LastTime")
    row = next(line for line in lines if "CG_ADM_GOLD2" in line)
    assert row.startswith(f"{'AdmGold':<64}  {'CG_ADM_GOLD2':<64}  {'broker-a':<32}  {1:<4}  {1:<20}  {1:<20}  {0:<20}  ")
    assert re.match(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$", row[238:])
    assert lines[-2] == "" and re.fullmatch(r"Diff Total: \d+", lines[-1])


def test_clean_expired_cq_reports_what_the_broker_lacks(cluster: Cluster) -> None:
    one_line_error(mq_here("admin", "cleanExpiredCQ", "-b", cluster.brokers["broker-a"].addr,
                      namesrv=cluster.namesrv.addr), 1, "306")


def test_wipe_and_add_write_perm_lines(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    wiped = mq_here("admin", "wipeWritePerm", "-b", "broker-b", namesrv=ns)
    assert re.fullmatch(rf"wipe write perm of broker\[broker-b\] in name server\[{ns}\] OK, [1-9]\d*\n", wiped.stdout)
    added = mq_here("admin", "addWritePerm", "--brokerName", "broker-b", namesrv=ns)
    assert re.fullmatch(rf"add write perm of broker\[broker-b\] in name server\[{ns}\] OK, [1-9]\d*\n", added.stdout)


def test_write_perm_with_a_name_server_down_is_applied_on_the_rest_and_says_where_not(cluster: Cluster) -> None:
    """Name servers do not talk to each other: one that was down misses the change. mqadmin prints each name
    server's outcome and exits 0; the mq dialect prints where it applied, then one error line naming where it did
    not (exit 3). Before, both printed only the failure, as if nothing had changed."""
    ns, dead = cluster.namesrv.addr, f"127.0.0.1:{free_port()}"
    wiped = mq_here("admin", "wipeWritePerm", "-b", "broker-b", namesrv=f"{ns};{dead}")
    assert wiped.returncode == 0, wiped.stderr
    assert re.fullmatch(rf"wipe write perm of broker\[broker-b\] in name server\[{ns}\] OK, [1-9]\d*\n"
                        rf"wipe write perm of broker\[broker-b\] in name server\[{dead}\] Failed\n", wiped.stdout)
    assert dead in wiped.stderr
    added = mq_here("admin", "broker", "perm", "add", "broker-b", namesrv=f"{ns};{dead}")
    one_line_error(added, 3, dead, f"applied on {ns}")
    assert re.fullmatch(rf"{ns}: restored write permission of broker-b on [1-9]\d* topics\n", added.stdout)


def test_cluster_rt_prints_a_round_then_loops_until_sigint(cluster: Cluster) -> None:
    argv = [sys.executable, "-m", "mqtools.cli.main", "admin", "clusterRT", "-a", "3", "-s", "16", "-i", "1",
            "-n", cluster.namesrv.addr]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline() for _ in range(5)]  # type: ignore[union-attr]
        proc.send_signal(signal.SIGINT)
        _rest, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert lines[0] == "#Cluster Name             #Broker Name              #RT   #successCount  #failCount\n"
    rows = [line.rstrip("\n") for line in lines[1:]]
    assert [r[26:50].rstrip() for r in rows] == ["broker-a", "broker-b"] * 2
    for row in rows:
        assert row[:26] == f"{'ClientIT':<24}  " and re.fullmatch(r"\d+\.\d\d", row[52:60].strip())
        assert row[62:78] == f"{3:<16}" and row[80:].rstrip() == "0"
    assert proc.returncode == 0 and "Traceback" not in err
