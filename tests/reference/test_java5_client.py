"""Apache's 5.x remoting Java client (rocketmq-client 5.5.0, the same harness built on it) against
Apache 5.5.0's broker and mq's: Apache's run is the oracle, as in test_java_client, but for the
properties a 5.x broker adds to what it stores, which mq, storing as 4.x does, leaves out (README,
Differences from Apache RocketMQ)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from javaclient import run_java
from refsupport import assert_same, consume_all, make_topic, name, on_both, sent_outcome

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
        # the retry topic appears after the consumer started: refresh routes each second, not each 30 s
        retried = consume_all(ns, topic, 4, "--fail-times", "1", "--poll-name-server-ms", "1000", client=CLIENT)
        return {"reconsume": Counter(e["reconsumeTimes"] for e in retried)}

    out = on_both(pair5, scenario)
    assert out["apache"]["reconsume"][1] == 4
    assert_same(out)
