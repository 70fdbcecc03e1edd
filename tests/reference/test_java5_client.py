"""Apache's 5.x remoting Java client (rocketmq-client 5.5.0, the same harness built on it) against
Apache 5.5.0's broker and mq's: Apache's run is the oracle, as in test_java_client, but for the
properties a 5.x broker adds to what it stores, which mq, storing as 4.x does, leaves out (README,
Differences from Apache RocketMQ)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import apache
import pytest
from javaclient import JavaClient, run_java
from refsupport import CLUSTER, assert_same, consume_all, make_topic, name, on_both, sent_outcome
from support.presetcluster import wait_for

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.remoting.assignment import PollingInfoRequestHeader, PollingInfoResponseHeader
from mqtools.remoting.codes import RequestCode

pytestmark = pytest.mark.timeout(300)

CLIENT = "harness-5"

#: Stored by Apache 5.x's broker, not by 4.x's nor mq's: the region, the trace switch, and WAIT, which 4.x
#: drops from single sends.
FIVE_ONLY_PROPS = {"MSG_REGION", "TRACE_ON", "WAIT"}
#: What a 5.x client's batch carries itself, which mq appends to each of its messages (4.x's encoder).
BATCH_APPENDED = {"CLUSTER", "WAIT"}


@pytest.mark.parametrize("mode", ["sync", "batch", "orderly"])
def test_sends_then_consume(pair5, mode):
    def scenario(ns: str) -> dict[str, Any]:
        topic = name(f"J5_{mode}")
        make_topic(ns, topic)
        sent = run_java("produce", ns, "--topic", topic, "--count", "24", "--mode", mode, "--tag", "Tag5",
                        "--props", "origin=java5", "--batch-size", "8", client=CLIENT)
        got = consume_all(ns, topic, 24, "--print-props", client=CLIENT)
        return {**sent_outcome(sent), "bodies": sorted(e["body"] for e in got),
                "distinct_ids": len({e["msgId"] for e in got}), "tags": {e["tags"] for e in got},
                "props": {k for e in got for k in e["properties"]},
                "origin": {e["properties"].get("origin") for e in got}}

    out = on_both(pair5, scenario)
    assert out["apache"]["failed"] == 0 and len(out["apache"]["bodies"]) == 24
    assert out["apache"]["props"] - out["mq"]["props"] <= FIVE_ONLY_PROPS
    out["apache"]["props"] -= FIVE_ONLY_PROPS
    if mode == "batch":  # mq appends a batch's own properties to its messages, as 4.x does and 5.x no longer
        assert out["mq"]["props"] - out["apache"]["props"] == BATCH_APPENDED
        out["mq"]["props"] -= BATCH_APPENDED
    assert_same(out)


def test_retry(pair5):
    def scenario(ns: str) -> dict[str, Any]:
        topic = name("J5RETRY")
        make_topic(ns, topic)
        run_java("produce", ns, "--topic", topic, "--count", "4", client=CLIENT)
        # the retry topic appears after the consumer started: the harness's consumers refresh routes each second
        retried = consume_all(ns, topic, 4, "--fail-times", "1", client=CLIENT)
        return {"reconsume": Counter(e["reconsumeTimes"] for e in retried)}

    out = on_both(pair5, scenario)
    assert out["apache"]["reconsume"][1] == 4
    assert_same(out)


def test_the_clients_own_pop_requests(pair5):
    """rocketmq-client 5.5.0's own POP calls (MQClientAPIImpl's pop, change invisible time and ack): four popped,
    the first given back after a second, the rest acknowledged; the first comes back once with its reconsume
    times one up, and after its ack nothing is left. In the JSON header both brokers answer alike. In the
    ROCKETMQ (binary) header, whose 16-bit code field carries POP_MESSAGE's 200050 as 3442, Apache's own broker
    refuses the pop (apache/rocketmq issues 5684, 6953); mq's takes both forms, as the issue asks, and answers
    the binary cycle as the JSON one (README, Differences from Apache RocketMQ)."""

    def cycle(ns: str, serialize: str) -> dict[str, Any]:
        topic, group = name("J5POPC"), name("CG_J5POPC")
        make_topic(ns, topic, 1)
        run = run_java("pop-cycle", ns, "--topic", topic, "--group", group, "--count", "4", "--back-ms", "1000",
                       "--serialize", serialize, client=CLIENT, timeout=90)
        if "refusedCode" in run.done:
            return {"refused": (run.done["refusedCode"], run.done["refusedRemark"].strip())}
        popped = {e["round"]: e for e in run.of("popped")}  # the last of a round: "again" polls until it is back
        return {"sent": run.of("sent")[0]["statuses"],
                "popped": {r: (e["status"], sorted(e["bodies"]), e["reconsumeTimes"]) for r, e in popped.items()},
                "changed": [e["status"] for e in run.of("changed")],
                "acked": [e["status"] for e in run.of("acked")]}

    out = on_both(pair5, lambda ns: {"json": cycle(ns, "JSON"), "binary": cycle(ns, "ROCKETMQ")})
    apache_json = out["apache"]["json"]
    assert apache_json["popped"]["first"] == ("FOUND", ["pop-0", "pop-1", "pop-2", "pop-3"], [0, 0, 0, 0]), apache_json
    assert apache_json["popped"]["again"] == ("FOUND", ["pop-0"], [1]), apache_json
    assert apache_json["popped"]["last"][0] != "FOUND", apache_json
    assert apache_json["changed"] == ["OK"] and apache_json["acked"] == ["OK"] * 4, apache_json
    assert out["mq"]["json"] == apache_json
    assert out["apache"]["binary"] == {"refused": (3, "request type 3442 not supported")}, out["apache"]["binary"]
    assert out["mq"]["binary"] == apache_json


def parked_pops(ns: str, topic: str, group: str) -> int:
    """POPs of `group` waiting on the broker for any queue of `topic` (POLLING_INFO's pollingNum for queue -1)."""
    with SyncMQAdmin(ns) as admin:
        (data,) = admin.cluster_info().broker_addr_table.values()
        resp = admin.call(data.broker_addrs[0], RequestCode.POLLING_INFO,
                          PollingInfoRequestHeader(group, topic, -1).to_ext())
    return PollingInfoResponseHeader.from_ext(resp.ext_fields).polling_num


def test_pop_consumers_outnumbering_the_queues_all_receive(pair5, ref_root):
    """5.x's DefaultMQPushConsumer with client rebalance off on a group that Apache's mqadmin 5.5.0 set to POP
    (setConsumeMode): two consumers on a topic of one queue both receive, every message once, none left. The
    messages are sent once both consumers' POPs wait on the broker: the client sends its first POP 500 ms after
    the assignment that "started" reports, and 40 messages stored before then went to whichever consumer asked
    first, in two POPs of up to 32 (on mq, whose sends are quicker, in 8 of 17 runs here)."""
    count = 40

    def scenario(ns: str) -> dict[str, Any]:
        topic, group = name("J5POP"), name("CG_J5POP")
        make_topic(ns, topic, 1)
        mode = apache.mqadmin(ref_root, "setConsumeMode", "-c", CLUSTER, "-t", topic, "-g", group, "-m", "POP",
                              version="harness-5", namesrv=ns)
        assert "success" in mode.stdout, mode.stdout + mode.stderr
        consumers = [JavaClient("consume", ns, "--topic", topic, "--group", group, "--pop", "--expect", "0",
                                "--timeout-s", "90", client=CLIENT) for _ in range(2)]
        try:
            for c in consumers:
                c.wait_for(lambda ev: [e for e in ev if e.get("event") == "started"], 60, "the consumer started")
            wait_for(lambda: parked_pops(ns, topic, group) == 2, 30, "a POP of each consumer waiting on the broker")
            sent = run_java("produce", ns, "--topic", topic, "--count", str(count), client=CLIENT)
            consumers[0].wait_for(lambda ev: sum(len(c.received()) for c in consumers) >= count, 60,
                                  f"{count} messages received by the two")
        finally:
            runs = [c.close() for c in consumers]
        got = [e for r in runs for e in r.of("received")]
        return {**sent_outcome(sent), "bodies": sorted(e["body"] for e in got),
                "every_consumer_received": all(r.of("received") for r in runs),
                "queues_owned": [r.of("started")[0]["queues"] for r in runs],
                "reconsumed": sum(1 for e in got if e["reconsumeTimes"] > 0)}

    out = on_both(pair5, scenario)
    assert out["apache"]["every_consumer_received"] and len(out["apache"]["bodies"]) == count
    assert_same(out)
