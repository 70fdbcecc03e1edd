"""`mq admin msg` and `mq admin dlq` against real processes: lookups by key (of a message the C++
client sent), by both ids and by queue offset, reading queues, sending, and a dead message put
back for its group and received by its consumer."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from support.adminsupport import json_of, mq, mq_here, one_line_error
from support.clientsupport import Cluster, create_topic, until
from support.cppclient import CppClient

from mqtools.client.admin import MQAdmin
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult
from mqtools.common.message import MessageExt
from mqtools.remoting.bodies import SubscriptionGroupConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


async def amq(*args: str, namesrv: str | None = None) -> subprocess.CompletedProcess[str]:
    """`mq` in a thread, so a consumer on this event loop keeps running meanwhile."""
    return await asyncio.to_thread(mq, *args, namesrv=namesrv)


async def test_msg_key_finds_what_the_cpp_client_sent(cluster: Cluster, tmp_path: Path) -> None:
    await create_topic(cluster, "AdmMsgCpp", 2)
    cpp = CppClient.produce(cluster.namesrv.addr, "AdmMsgCpp", 5, tmp_path / "home")
    assert cpp.wait(90) == 0, f"{cpp.stderr_tail()}\nevents: {cpp.events}\n{cpp.log_tail()}"
    sent = {e["sent"]: e["msg_id"] for e in cpp.events if "sent" in e}
    assert len(sent) == 5
    doc = json_of(mq_here("admin", "msg", "key", "AdmMsgCpp", "cpp-key-3", "-o", "json", namesrv=cluster.namesrv.addr),
                  "MessageList")
    assert doc["count"] == 1
    (found,) = doc["messages"]
    assert found["body"] == "cpp-body-3" and found["keys"] == ["cpp-key-3"] and found["tags"] == "TagCpp"
    assert found["msgId"] == sent[3] and found["properties"]["origin"] == "cpp"


def test_send_then_get_by_both_ids_unique_and_at(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    sent = json_of(mq_here("admin", "msg", "send", "AdmMsgOne", "payload-1", "--tags", "TagX", "--keys", "k-1 k-2",
                      "--broker", "broker-b", "--queue", "0", "-o", "json", namesrv=ns), "SendResult")
    assert sent["status"] == "SEND_OK" and sent["brokerName"] == "broker-b" and sent["queueId"] == 0
    by_offset_id = json_of(mq_here("admin", "msg", "get", sent["offsetMsgId"], "-o", "json", namesrv=ns), "Message")
    by_client_id = json_of(mq_here("admin", "msg", "get", sent["msgId"], "-t", "AdmMsgOne", "-o", "json", namesrv=ns),
                           "Message")
    for doc in (by_offset_id, by_client_id):
        m = doc["message"]
        assert (m["body"], m["tags"], m["keys"], m["msgId"]) == ("payload-1", "TagX", ["k-1", "k-2"], sent["msgId"])
        assert m["storeHost"] == cluster.brokers["broker-b"].addr and m["queueOffset"] == sent["queueOffset"]
        assert doc["tracks"] == []
    unique = json_of(mq_here("admin", "msg", "unique", "AdmMsgOne", sent["msgId"], "-o", "json", namesrv=ns), "MessageList")
    assert [m["offsetMsgId"] for m in unique["messages"]] == [sent["offsetMsgId"]]
    at = json_of(mq_here("admin", "msg", "at", "AdmMsgOne", "broker-b", "0", str(sent["queueOffset"]), "-o", "json",
                    namesrv=ns), "Message")
    assert at["message"]["offsetMsgId"] == sent["offsetMsgId"]
    table = mq_here("admin", "msg", "get", sent["offsetMsgId"], namesrv=ns)
    assert table.returncode == 0 and "payload-1" in table.stdout
    assert "no consumer group consumes this topic" in table.stdout


async def test_print_and_consume_read_the_queues(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    await create_topic(cluster, "AdmMsgRead", 2)
    for i in range(6):
        assert (await amq("admin", "msg", "send", "AdmMsgRead", f"r-{i}", namesrv=ns)).returncode == 0
    printed = json_of(mq_here("admin", "msg", "print", "AdmMsgRead", "-o", "json", namesrv=ns), "MessageList")
    assert sorted(m["body"] for m in printed["messages"]) == [f"r-{i}" for i in range(6)]
    later = json_of(mq_here("admin", "msg", "print", "AdmMsgRead", "--from", "now", "-o", "json", namesrv=ns),
                    "MessageList")
    assert later["count"] == 0
    consumed = json_of(mq_here("admin", "msg", "consume", "AdmMsgRead", "-c", "4", "-o", "json", namesrv=ns),
                       "MessageList")
    assert consumed["count"] == 4
    csv = mq_here("admin", "msg", "print", "AdmMsgRead", "-o", "csv", namesrv=ns)
    assert csv.stdout.splitlines()[0].startswith("MSG ID,TOPIC,STORE HOST,QID,OFFSET") and len(csv.stdout.splitlines()) == 7


async def test_a_dead_message_resent_reaches_the_groups_consumer(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    await create_topic(cluster, "AdmDlqT", 1)
    async with MQAdmin(ns) as admin:
        await admin.groups.create_subscription_group(SubscriptionGroupConfig("CG_ADM_DLQ", retry_max_times=1),
                                              cluster="ClientIT")
    deliveries: list[MessageExt] = []
    failing = True

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        deliveries.extend(msgs)
        return ConsumeResult.RECONSUME_LATER if failing else ConsumeResult.CONSUME_SUCCESS

    consumer = PushConsumer("CG_ADM_DLQ", namesrv=ns, rebalance_interval=2.0, max_reconsume_times=1,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe("AdmDlqT", "*").register_listener(listener)
    async with consumer:
        sent = json_of(await amq("admin", "msg", "send", "AdmDlqT", "doomed", "--keys", "dlq-1", "-o", "json",
                                 namesrv=ns), "SendResult")
        await until(lambda: len(deliveries) >= 2, 60, "the delivery and its one retry")

        async def dead() -> dict | None:
            doc = json_of(await amq("admin", "dlq", "list", "CG_ADM_DLQ", "-o", "json", namesrv=ns), "MessageList")
            return doc if doc["count"] else None

        listed = await until(dead, 30, "the message in the DLQ")
        (message,) = listed["messages"]
        assert message["msgId"] == sent["msgId"] and message["body"] == "doomed"
        failing = False
        before = len(deliveries)
        resent = json_of(await amq("admin", "dlq", "resend", "CG_ADM_DLQ", sent["msgId"], "-o", "json",
                                   namesrv=ns), "DlqResend")
        (result,) = resent["results"]
        assert result["resent"] and result["topic"] == "AdmDlqT" and result["error"] is None
        await until(lambda: len(deliveries) > before, 30, "the resent message at the consumer")
    again = deliveries[before]
    assert (again.body, again.topic, again.reconsume_times) == (b"doomed", "AdmDlqT", 0)
    assert again.properties.get("UNIQ_KEY") == sent["msgId"]
    missing = mq_here("admin", "dlq", "resend", "CG_ADM_DLQ", "NOPE", "-o", "json", namesrv=ns)
    assert missing.returncode == 1 and '"resent": false' in missing.stdout


def test_resend_all_refuses_without_yes_off_a_terminal(cluster: Cluster) -> None:
    one_line_error(mq_here("admin", "dlq", "resend", "CG_ADM_DLQ", "--all", namesrv=cluster.namesrv.addr), 2, "--yes")


def test_bad_input_is_one_line_with_its_exit_code(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    one_line_error(mq_here("admin", "msg", "print", "AdmNoSuchTopic", namesrv=ns), 1, "AdmNoSuchTopic")
    one_line_error(mq_here("admin", "msg", "print", "AdmMsgRead", "--from", "yesterday-ish", namesrv=ns), 2, "bad time")
    one_line_error(mq_here("admin", "msg", "key", "AdmMsgRead", "k", namesrv="127.0.0.1:1"), 3, "127.0.0.1:1")
    one_line_error(mq_here("admin", "msg", "get", "not-an-id", namesrv=ns), 2, "--topic")
    one_line_error(mq_here("admin", "msg", "send", "AdmMsgRead", "x", "--queue", "1", namesrv=ns), 2, "--broker")
