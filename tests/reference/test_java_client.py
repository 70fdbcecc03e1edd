"""Apache's Java client (4.9.8) against Apache's broker and against mq's: Apache's run is the oracle.

Each scenario runs the same harness commands on both sides (`topology`: single brokers, then 2m-2s
SYNC_MASTER clusters, for the sends, order and retries; `pair`: single brokers only, for what a second
broker adds nothing to) and reduces what the client saw to
an outcome (counts, statuses, per-queue order, properties, reconsume times) that must be equal; times
(delivery delays) must agree within 20 %.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pytest
from javaclient import JavaClient, run_java
from refsupport import assert_same, consume_all, make_group, make_topic, name, on_both, sent_outcome

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("mode", ["sync", "async", "oneway", "batch"])
def test_send_modes_then_consume(topology, mode):
    def scenario(ns: str) -> dict[str, Any]:
        topic = name(f"JSEND_{mode}")
        make_topic(ns, topic)
        sent = run_java("produce", ns, "--topic", topic, "--count", "40", "--mode", mode, "--tag", "TagA",
                        "--props", "origin=java,k2=v2", "--batch-size", "8")
        got = consume_all(ns, topic, 40, "--print-props")
        props = {k for e in got for k in e["properties"]}
        return {**sent_outcome(sent, queues=mode != "async"), "bodies": sorted(e["body"] for e in got), "tags": {e["tags"] for e in got},
                "keys": sorted(e["keys"] for e in got), "user": {(e["properties"].get("origin"),
                                                                  e["properties"].get("k2")) for e in got},
                "props": props, "reconsume": {e["reconsumeTimes"] for e in got}}

    out = on_both(topology, scenario)
    assert out["apache"]["failed"] == 0 and len(out["apache"]["bodies"]) == 40
    assert_same(out)


def test_batch_messages_carry_the_batch_properties(topology):
    def scenario(ns: str) -> dict[str, Any]:
        topic = name("JBATCHP")
        make_topic(ns, topic)
        run_java("produce", ns, "--topic", topic, "--count", "8", "--mode", "batch", "--batch-size", "8")
        return {"cluster": {e["properties"].get("CLUSTER") for e in consume_all(ns, topic, 8, "--print-props")}}

    out = on_both(topology, scenario)
    assert out["apache"]["cluster"] == {"RefCluster"}
    assert_same(out)


def test_orderly_send_and_orderly_consume(topology):
    def scenario(ns: str) -> dict[str, Any]:
        topic = name("JORDER")
        make_topic(ns, topic)
        sent = run_java("produce", ns, "--topic", topic, "--count", "60", "--mode", "orderly", "--order-keys", "4")
        got = consume_all(ns, topic, 60, "--mode", "orderly")
        by_queue: dict[int, list[int]] = defaultdict(list)
        for e in got:
            by_queue[e["queueId"]].append(int(e["body"].split("-")[1]))
        shard_queue = {e["shardingKey"]: e["queueId"] for e in sent.of("sent")}
        return {**sent_outcome(sent), "in_order": all(v == sorted(v) for v in by_queue.values()),
                "per_queue_bodies": {q: v for q, v in sorted(by_queue.items())}, "shards": shard_queue}

    out = on_both(topology, scenario)
    assert out["apache"]["in_order"]
    assert_same(out)


def test_delay_level_delivery(pair):
    def scenario(ns: str) -> dict[str, Any]:
        topic = name("JDELAY")
        make_topic(ns, topic)
        consumer = JavaClient("consume", ns, "--topic", topic, "--group", name("CG"), "--expect", "0",
                              "--timeout-s", "60", "--from", "last")
        try:
            consumer.wait_for(lambda ev: any(e["event"] == "started" for e in ev), 30, "consumer start")
            run_java("produce", ns, "--topic", topic, "--count", "5", "--delay-level", "2")
            consumer.wait_for(lambda ev: sum(e["event"] == "received" for e in ev) >= 5, 60, "5 delayed")
        finally:
            consumer.close()
        got = consumer.received()
        delays = [e["receivedAt"] - e["bornTimestamp"] for e in got]
        return {"count": len(got), "delay_ms": sorted(delays)[len(delays) // 2], "topics": {e["topic"] == topic for e in got}}

    out = on_both(pair, scenario)
    apache_delay, mq_delay = out["apache"].pop("delay_ms"), out["mq"].pop("delay_ms")
    assert_same(out)
    assert abs(mq_delay - apache_delay) <= 0.2 * apache_delay, (mq_delay, apache_delay)


def test_compressed_bodies(pair):
    def scenario(ns: str) -> dict[str, Any]:
        topic = name("JBIG")
        make_topic(ns, topic)
        sent = run_java("produce", ns, "--topic", topic, "--count", "10", "--body-size", "20000")
        got = consume_all(ns, topic, 10, "--print-props")
        return {**sent_outcome(sent), "lens": sorted(e["bodyLen"] for e in got),
                "sys_flag_props": sorted({k for e in got for k in e["properties"]})}

    out = on_both(pair, scenario)
    assert out["apache"]["lens"] == [20000] * 10
    assert_same(out)


def test_broadcasting(pair):
    def scenario(ns: str) -> dict[str, Any]:
        topic, group = name("JBCAST"), name("CG")
        make_topic(ns, topic)
        consumers = [JavaClient("consume", ns, "--topic", topic, "--group", group, "--model", "broadcasting",
                                "--expect", "0", "--timeout-s", "60", "--instance", f"bc{i}") for i in range(2)]
        try:
            for c in consumers:
                c.wait_for(lambda ev: any(e["event"] == "started" for e in ev), 30, "consumer start")
            run_java("produce", ns, "--topic", topic, "--count", "12")
            for c in consumers:
                c.wait_for(lambda ev: sum(e["event"] == "received" for e in ev) >= 12, 60, "12 each")
        finally:
            runs = [c.close() for c in consumers]
        return {"each": [sorted(e["body"] for e in r.of("received")) for r in runs]}

    out = on_both(pair, scenario)
    assert len(out["apache"]["each"][0]) == 12
    assert_same(out)


def test_retry_then_dlq(pair):
    """On the single broker only: the 2m-2s run took 74 s for the same retry and DLQ path (suite time)."""
    def scenario(ns: str) -> dict[str, Any]:
        topic, ok_group, dlq_group = name("JRETRY"), name("CG"), name("CGDLQ")
        make_topic(ns, topic)
        make_group(ns, dlq_group, retries=2)
        run_java("produce", ns, "--topic", topic, "--count", "3")
        # the harness's consumers refresh routes each second (javaclient.ROUTE_POLL): the %RETRY% topics appear
        # after the consumers start, and the default 30 s refresh made each scenario wait for them (70-94 s a run)
        retried = consume_all(ns, topic, 3, "--fail-times", "1", group=ok_group)
        dead = JavaClient("consume", ns, "--topic", topic, "--group", dlq_group, "--fail-times", "99",
                          "--max-reconsume", "2", "--expect", "0", "--timeout-s", "90")
        try:
            dead.wait_for(lambda ev: sum(e["event"] == "received" for e in ev) >= 9, 60, "3 deliveries of 3")
        finally:
            dead_run = dead.close()
        dlq = consume_all(ns, f"%DLQ%{dlq_group}", 3, group=name("CGREAD"))
        return {"retry": sorted((e["body"], e["reconsumeTimes"]) for e in retried),
                "dead_deliveries": Counter(e["reconsumeTimes"] for e in dead_run.of("received")),
                "dlq": sorted(e["body"] for e in dlq)}

    out = on_both(pair, scenario)
    assert out["apache"]["dlq"] == ["body-0", "body-1", "body-2"]
    assert_same(out)


@pytest.mark.parametrize("mode", ["subscribe", "assign"])
def test_lite_pull(pair, mode):
    def scenario(ns: str) -> dict[str, Any]:
        topic = name("JLITE")
        make_topic(ns, topic)
        run_java("produce", ns, "--topic", topic, "--count", "30")
        run = run_java("litepull", ns, "--topic", topic, "--group", name("CGL"), "--mode", mode,
                       "--expect", "30", "--timeout-s", "60")
        return {"bodies": sorted(e["body"] for e in run.of("received"))}

    out = on_both(pair, scenario)
    assert len(out["apache"]["bodies"]) == 30
    assert_same(out)


def test_query_by_key_and_id(pair):
    def scenario(ns: str) -> dict[str, Any]:
        topic = name("JQUERY")
        make_topic(ns, topic)
        sent = run_java("produce", ns, "--topic", topic, "--count", "5", "--keys-prefix", "qk-")
        by_key = run_java("query", ns, "--topic", topic, "--key", "qk-3")
        first = sent.of("sent")[0]
        by_id = run_java("query", ns, "--topic", topic, "--msg-id", first["msgId"])
        by_offset_id = run_java("query", ns, "--msg-id", first["offsetMsgId"])
        return {"by_key": [(e["keys"], e["body"]) for e in by_key.of("found")],
                "by_id": [e["body"] for e in by_id.of("found")],
                "by_offset_id": [e["body"] for e in by_offset_id.of("found")]}

    out = on_both(pair, scenario)
    assert out["apache"]["by_key"] == [("qk-3", "body-3")]
    assert_same(out)
