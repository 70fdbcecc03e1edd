"""`mq admin diagnose` on Apache's 2m-2s SYNC cluster beside mq's, the same world on each (tkworld): the same
verdicts where Apache reports the figures the verdict rests on.

TkLive is a running Java push consumer that has consumed everything (healthy); TkLag consumed some and
stopped, so messages wait and no member is online (offline); every broker is idle and every SYNC_MASTER has
its slave (healthy). The Java client answers GET_CONSUMER_RUNNING_INFO on both sides (Apache's broker and
mq's relay it), so owners are known on both. Then the same consumer paused with SIGSTOP while messages wait
(stalled). Every diagnosis samples for its window (10 s at least), so all of one test's run at once, both
sides together.
"""

from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from support.adminsupport import json_of, mq
from tkworld import LAG, LIVE, TOPIC, World
from tkworld import settled as tk_settled

from mqtools.client.admin import SyncMQAdmin
from mqtools.common.exitcodes import EXIT_OK, EXIT_REFUSED

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def settled(namesrv: str, group: str) -> dict:
    """The live group's diagnosis; "rebalancing" (a test before this one changed routes or offsets) is asked
    again, as its own advice says, up to twice, and so are queues whose owner is not known (the Java client
    did not answer its running info in time: on a loaded machine it can be seconds late)."""
    for _ in range(3):
        doc = json_of(mq("admin", "diagnose", "group", group, "-o", "json", namesrv=namesrv, timeout=120),
                      "GroupDiagnosis", EXIT_OK)
        unowned = [q for q in doc["queues"] if q["owner"] is None]
        if doc["verdict"] != "rebalancing" and not unowned:
            break
        print(f"{namesrv}: {group} {doc['verdict']}, {len(unowned)} queues without a known owner: {doc['summary']}")
    return doc


def lagging(namesrv: str) -> dict[str, Any]:
    return json_of(mq("admin", "diagnose", "group", LAG, "-o", "json", namesrv=namesrv, timeout=120),
                   "GroupDiagnosis", EXIT_REFUSED)


def test_group_verdicts_agree(worlds: dict[str, World]) -> None:
    with ThreadPoolExecutor() as pool:
        runs = {side: (pool.submit(settled, w.namesrv, LIVE), pool.submit(lagging, w.namesrv))
                for side, w in worlds.items()}
    got = {side: (live.result(), lag.result()) for side, (live, lag) in runs.items()}
    for side, (live, lag) in got.items():
        assert (live["verdict"], live["also"]) == ("healthy", []), (side, live)
        assert all(q["owner"] == live["members"][0]["clientId"] for q in live["queues"]), (side, live["queues"])
        assert live["members"][0]["orderly"] is False and live["members"][0]["version"].startswith("V4_9")
        assert (lag["verdict"], lag["also"], lag["members"]) == ("offline", [], []), (side, lag)
    assert got["apache"][1]["lag"] == got["mq"][1]["lag"] > 0


def broker_a(namesrv: str) -> dict[str, Any]:
    return json_of(mq("admin", "diagnose", "broker", "broker-a", "--window", "1", "-o", "json", namesrv=namesrv),
                   "BrokerDiagnosis", EXIT_OK)


def cluster(namesrv: str) -> dict[str, Any]:
    """The cluster pass; asked again (up to twice) while the live group is found rebalancing, as `settled`."""
    for _ in range(3):
        doc = json_of(mq("admin", "diagnose", "cluster", "-o", "json", namesrv=namesrv, timeout=180),
                      "ClusterDiagnosis", EXIT_REFUSED)
        live = next(i for i in doc["items"] if (i["kind"], i["name"]) == ("group", LIVE))
        if live["verdict"] != "rebalancing":
            break
        print(f"{namesrv}: {LIVE} rebalancing: {live['summary']}")
    return doc


def test_broker_and_cluster_verdicts_agree(worlds: dict[str, World]) -> None:
    with ThreadPoolExecutor() as pool:
        runs = {side: (pool.submit(broker_a, w.namesrv), pool.submit(cluster, w.namesrv))
                for side, w in worlds.items()}
    for side, (one, every) in runs.items():
        doc, whole = one.result(), every.result()
        roles = sorted(b["role"] for b in doc["brokers"])
        assert roles == ["SLAVE", "SYNC_MASTER"] and all(b["verdict"] == "healthy" for b in doc["brokers"]), (side, doc)
        verdicts = {(i["kind"], i["name"]): (i["verdict"], i["summary"]) for i in whole["items"]}
        assert verdicts[("group", LAG)][0] == "offline" and verdicts[("group", LIVE)][0] == "healthy", (side, verdicts)
        assert whole["items"][0]["severity"] == "action"  # worst first
        assert all(i["severity"] == "ok" for i in whole["items"] if i["kind"] != "group"), (side, whole["items"])
        assert {(i["kind"], i["name"]) for i in whole["items"] if i["kind"] == "ha"} == {("ha", "broker-a"),
                                                                                       ("ha", "broker-b")}


@pytest.mark.soak  # `stalled` from a real paused consumer: tests/integration/diagnose on mq's; here beside Apache's
def test_a_paused_java_consumer_is_stalled_on_both(worlds: dict[str, World]) -> None:
    """TkLive's Java consumer SIGSTOPped with new messages waiting: no committed offset moves in the window, on
    Apache's brokers as on mq's. It is resumed after and catches up (settled), as the tests after this expect,
    also when this one fails."""
    try:
        for world in worlds.values():
            os.kill(world.consumer.proc.pid, signal.SIGSTOP)  # first: it would take the messages before the window
            with SyncMQAdmin(world.namesrv) as admin:  # as the world's own sends, recorded (test_spark reads all)
                for j in range(8):
                    i = len(world.sent)
                    r = admin.messages.send_message(TOPIC, f"body-{i}".encode(), tags="TagA", keys=f"stall-{j}")
                    world.sent.append({"event": "sent", "i": i, "key": f"stall-{j}", "msgId": r.msg_id,
                                       "offsetMsgId": r.offset_msg_id, "broker": r.queue.broker_name,
                                       "queueId": r.queue.queue_id, "queueOffset": r.queue_offset, "tag": "TagA"})
        with ThreadPoolExecutor() as pool:
            runs = {side: pool.submit(lambda ns: json_of(mq("admin", "diagnose", "group", LIVE, "-o", "json",
                                                            namesrv=ns, timeout=120), "GroupDiagnosis", EXIT_REFUSED),
                                      w.namesrv) for side, w in worlds.items()}
        got = {side: run.result() for side, run in runs.items()}
    finally:
        for world in worlds.values():
            os.kill(world.consumer.proc.pid, signal.SIGCONT)
    for side, doc in got.items():
        assert doc["verdict"] == "stalled", (side, doc["verdict"], doc["summary"], doc["also"])
        waiting = [q for q in doc["queues"] if q["topic"] == TOPIC and q["lag"]]
        assert waiting and all(q["consumedPerSec"] == 0 for q in waiting), (side, waiting)
    assert got["apache"]["lag"] == got["mq"]["lag"] == 8
    for world in worlds.values():
        tk_settled(world.namesrv, timeout=60)
