"""Apache's Java client against Apache and mq, continued: where consumption starts, an online offset
reset, TLS, ACL, message trace and transactions. Apache's run is the oracle, as in test_java_client.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

import apache
import pytest
from javaclient import JavaClient, run_java
from refsupport import (
    ACL_ACCOUNT,
    ACL_CLUSTER,
    assert_same,
    consume_all,
    make_topic,
    name,
    on_both,
    sent_outcome,
)
from support.adminsupport import mq_here

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.common.security import ClientSecurity, SessionCredentials
from mqtools.remoting.bodies import TopicConfig

pytestmark = pytest.mark.timeout(300)


def started(client: JavaClient) -> None:
    client.wait_for(lambda ev: any(e["event"] == "started" for e in ev), 30, "consumer start")


def test_new_group_from_last_and_from_timestamp(pair):
    """A new group's first offset: with CONSUME_FROM_LAST_OFFSET and CONSUME_FROM_TIMESTAMP alike, 4.x
    starts a young queue at 0 (the broker answers a new group's offset query with 0 while the queue's
    first message is still in memory), so both read every message."""
    def scenario(ns: str) -> dict[str, Any]:
        topic = name("JFROM")
        make_topic(ns, topic)
        run_java("produce", ns, "--topic", topic, "--count", "6", "--keys-prefix", "early-")
        cut = (int(time.time()) + 1) * 1000
        while time.time() * 1000 < cut + 50:  # the clock passes the next whole second, which the format keeps
            time.sleep(cut / 1000 + 0.05 - time.time())
        run_java("produce", ns, "--topic", topic, "--count", "4", "--keys-prefix", "late-")
        stamp = datetime.fromtimestamp(cut / 1000).strftime("%Y%m%d%H%M%S")
        last = consume_all(ns, topic, 10, "--from", "last")
        since = consume_all(ns, topic, 10, "--from", "timestamp", "--timestamp", stamp)
        return {"from_last": sorted(e["keys"] for e in last), "from_timestamp": sorted(e["keys"] for e in since)}

    out = on_both(pair, scenario)
    assert len(out["apache"]["from_last"]) == 10
    assert_same(out)


def test_online_offset_reset_is_followed_by_the_running_consumer(pair, ref_root):
    """Apache's mqadmin resetOffsetByTime on a group whose consumer is running: the broker pushes the
    new offsets to it and it consumes the topic again from the start."""
    def scenario(ns: str) -> dict[str, Any]:
        topic, group = name("JRESET"), name("CGRESET")
        make_topic(ns, topic)
        run_java("produce", ns, "--topic", topic, "--count", "8")
        consumer = JavaClient("consume", ns, "--topic", topic, "--group", group, "--expect", "0", "--timeout-s", "90")
        try:
            consumer.wait_for(lambda ev: sum(e["event"] == "received" for e in ev) >= 8, 60, "first 8")
            deadline = time.monotonic() + 30
            while True:  # the broker refuses the reset until the group's offsets are committed (every 5 s)
                reset = apache.mqadmin(ref_root, "resetOffsetByTime", "-n", ns, "-g", group, "-t", topic, "-s", "0")
                failed = "Exception" in reset.stdout + reset.stderr  # mqadmin exits 0 either way
                if not failed or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert reset.returncode == 0 and not failed, reset.stdout + reset.stderr
            consumer.wait_for(lambda ev: sum(e["event"] == "received" for e in ev) >= 16, 60, "8 again")
        finally:
            run = consumer.close()
        got = run.of("received")
        return {"first": sorted(e["body"] for e in got[:8]), "again": sorted(e["body"] for e in got[8:16]),
                "more": len(got) - 16}

    out = on_both(pair, scenario)
    assert out["apache"]["again"] == out["apache"]["first"]
    assert_same(out)


def test_tls_client(pair):
    """useTLS on every connection (name server and broker); both sides serve TLS and plain on one port."""
    def scenario(ns: str) -> dict[str, Any]:
        topic = name("JTLS")
        make_topic(ns, topic)
        sent = run_java("produce", ns, "--topic", topic, "--count", "10", "--tls")
        got = consume_all(ns, topic, 10, "--tls")
        return {**sent_outcome(sent), "bodies": sorted(e["body"] for e in got)}

    out = on_both(pair, scenario)
    assert len(out["apache"]["bodies"]) == 10
    assert_same(out)


def _acl_topic(ns: str) -> str:
    topic = name("JACL")
    with SyncMQAdmin(ns, security=ClientSecurity(SessionCredentials(*ACL_ACCOUNT))) as admin:
        admin.topics.create_topic(TopicConfig(topic, read_queue_nums=2, write_queue_nums=2), cluster=ACL_CLUSTER)
    return topic


def test_acl_signed_client_and_refusals(acl_pair):
    """AclClientRPCHook: the right secret sends and consumes; a wrong secret and no credentials are refused.
    Apache 4.x answers a refusal with SYSTEM_ERROR (1) and the AclException's text, mq with NO_PERMISSION
    (16) and a remark naming the key and resource (docs/compatibility.md, Differences from Apache RocketMQ)."""
    ak, sk = ACL_ACCOUNT

    def scenario(ns: str) -> dict[str, Any]:
        topic = _acl_topic(ns)
        sent = run_java("produce", ns, "--topic", topic, "--count", "6", "--ak", ak, "--sk", sk)
        got = consume_all(ns, topic, 6, "--ak", ak, "--sk", sk)
        wrong = run_java("produce", ns, "--topic", topic, "--count", "1", "--ak", ak, "--sk", "not-the-secret",
                         "--retries", "0", ok=(2,))
        anonymous = run_java("produce", ns, "--topic", topic, "--count", "1", "--retries", "0", ok=(2,))
        return {**sent_outcome(sent), "bodies": sorted(e["body"] for e in got),
                "wrong_secret": [e["error"] for e in wrong.of("send_failed")],
                "no_credentials": [e["error"] for e in anonymous.of("send_failed")]}

    out = on_both(acl_pair, scenario)
    assert len(out["apache"]["bodies"]) == 6
    for side, code in (("apache", "CODE: 1 "), ("mq", "CODE: 16 ")):
        for refusal in ("wrong_secret", "no_credentials"):
            (error,) = out[side].pop(refusal)
            assert code in error, (side, refusal, error)
    assert_same(out)


def test_message_trace(pair, ref_root):
    """enableMsgTrace on producer and consumer: Apache's mqadmin queryMsgTraceById then shows the
    message's publish and its consumption (a Pub row and a Sub row) with the producer and consumer groups;
    `mq admin msg trace` reads the same records (Pub, SubBefore, SubAfter)."""
    def scenario(ns: str) -> dict[str, Any]:
        topic, group = name("JTRACE"), name("CGTRACE")
        make_topic(ns, topic)
        # linger: the client's trace dispatcher sends its batch in the background, and a client that shuts
        # down at once gives it only 500 ms (on a loaded machine the trace topic's route takes longer)
        sent = run_java("produce", ns, "--topic", topic, "--count", "1", "--trace", "--group", "PG_TRACE_REF",
                        "--linger-ms", "1500")
        consume_all(ns, topic, 1, "--trace", "--linger-ms", "1500", group=group)
        msg_id = sent.of("sent")[0]["msgId"]
        deadline = time.monotonic() + 30
        while True:  # the trace dispatcher sends in batches, up to a second or so after the message
            shown = apache.mqadmin(ref_root, "queryMsgTraceById", "-n", ns, "-i", msg_id)
            kinds = sorted({line.split()[0] for line in shown.stdout.splitlines() if line.startswith(("Pub ", "Sub "))})
            if len(kinds) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        ours = mq_here("admin", "msg", "trace", msg_id, "-o", "json", namesrv=ns)
        records = json.loads(ours.stdout)["records"] if ours.returncode == 0 else []
        return {"kinds": kinds, "groups_shown": [g in shown.stdout for g in ("PG_TRACE_REF", group)],
                "mq_admin_msg_trace": sorted((r["type"], r["group"] == group or r["group"] == "PG_TRACE_REF",
                                              r["success"]) for r in records)}

    out = on_both(pair, scenario)
    assert out["apache"]["kinds"] == ["Pub", "Sub"]
    assert [r[0] for r in out["apache"]["mq_admin_msg_trace"]] == ["Pub", "SubAfter", "SubBefore"]
    assert_same(out)


@pytest.mark.parametrize("outcome", ["commit", "rollback", "unknown-then-commit",
                                     pytest.param("unknown-then-rollback", marks=pytest.mark.soak)])
def test_transactions(pair, outcome):
    def scenario(ns: str) -> dict[str, Any]:
        topic = name("JTX")
        make_topic(ns, topic)
        consumer = JavaClient("consume", ns, "--topic", topic, "--group", name("CGTX"), "--expect", "0",
                              "--timeout-s", "60")
        try:
            started(consumer)
            sent = run_java("transaction", ns, "--topic", topic, "--count", "3", "--outcome", outcome,
                            "--group", name("PGTX"), "--wait-check-s", "8" if outcome.startswith("unknown") else "0")
            if outcome.endswith("commit"):
                consumer.wait_for(lambda ev: sum(e["event"] == "received" for e in ev) >= 3, 30, "3 committed")
        finally:
            run = consumer.close()
        return {**sent_outcome(sent, queues=False), "checked": len(sent.of("checked")) > 0,
                "received": sorted(e["body"] for e in run.of("received"))}

    out = on_both(pair, scenario)
    assert out["apache"]["failed"] == 0
    assert_same(out)


def test_a_killed_transaction_producer_is_checked_through_its_restart(pair):
    """A TransactionMQProducer SIGKILLed after its half messages were stored, its local transactions
    undecided; a new producer of the same group, started after, is asked by the brokers' checks and commits:
    each message is delivered once."""

    def scenario(ns: str) -> dict[str, Any]:
        topic, group = name("JTXK"), name("PGTXK")
        make_topic(ns, topic)
        consumer = JavaClient("consume", ns, "--topic", topic, "--group", name("CGTXK"), "--expect", "0",
                              "--timeout-s", "90")
        try:
            started(consumer)
            dying = JavaClient("transaction", ns, "--topic", topic, "--count", "3", "--outcome", "unknown-then-commit",
                               "--group", group, "--wait-check-s", "60")
            try:
                dying.wait_for(lambda ev: sum(e["event"] == "sent" for e in ev) >= 3, 30, "3 half messages")
            finally:
                dying.proc.kill()  # SIGKILL: no END_TRANSACTION, no unregistering
                dying.close()
            again = run_java("transaction", ns, "--topic", topic, "--count", "0", "--outcome", "unknown-then-commit",
                             "--group", group, "--wait-check-s", "45", "--expect-checks", "3")
            consumer.wait_for(lambda ev: sum(e["event"] == "received" for e in ev) >= 3, 30, "3 committed")
        finally:
            run = consumer.close()
        return {"halves": [e["localState"] for e in dying.of("sent")],
                "checkedKeys": sorted({e["keys"] for e in again.of("checked")}),
                "received": sorted(e["body"] for e in run.of("received"))}

    out = on_both(pair, scenario)
    assert out["apache"]["checkedKeys"] == ["key-0", "key-1", "key-2"], out["apache"]
    assert_same(out)
