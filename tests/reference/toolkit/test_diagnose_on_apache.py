"""`mq admin diagnose` on Apache's 2m-2s SYNC cluster beside mq's, the same world on each (tkworld): the same
verdicts where Apache reports the figures the verdict rests on.

TkLive is a running Java push consumer that has consumed everything (healthy); TkLag consumed some and
stopped, so messages wait and no member is online (offline); every broker is idle and every SYNC_MASTER has
its slave (healthy). The Java client answers GET_CONSUMER_RUNNING_INFO on both sides (Apache's broker and
mq's relay it), so owners are known on both.
"""

from __future__ import annotations

import pytest
from adminsupport import json_of, mq
from tkworld import LAG, LIVE, World

from mqtools.common.exitcodes import EXIT_OK, EXIT_REFUSED

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def settled(namesrv: str, group: str) -> dict:
    """The live group's diagnosis; "rebalancing" (a test before this one changed routes or offsets) is asked
    again, as its own advice says, up to twice."""
    for _ in range(3):
        doc = json_of(mq("admin", "diagnose", "group", group, "-o", "json", namesrv=namesrv, timeout=120),
                      "GroupDiagnosis", EXIT_OK)
        if doc["verdict"] != "rebalancing":
            break
    return doc


def test_group_verdicts_agree(worlds: dict[str, World]) -> None:
    got = {}
    for side, world in worlds.items():
        live = settled(world.namesrv, LIVE)
        lag = json_of(mq("admin", "diagnose", "group", LAG, "-o", "json", namesrv=world.namesrv, timeout=120),
                      "GroupDiagnosis", EXIT_REFUSED)
        got[side] = (live, lag)
        assert (live["verdict"], live["also"]) == ("healthy", []), (side, live)
        assert all(q["owner"] == live["members"][0]["clientId"] for q in live["queues"]), (side, live["queues"])
        assert live["members"][0]["orderly"] is False and live["members"][0]["version"].startswith("V4_9")
        assert (lag["verdict"], lag["also"], lag["members"]) == ("offline", [], []), (side, lag)
    assert got["apache"][1]["lag"] == got["mq"][1]["lag"] > 0


def test_broker_and_cluster_verdicts_agree(worlds: dict[str, World]) -> None:
    for side, world in worlds.items():
        doc = json_of(mq("admin", "diagnose", "broker", "broker-a", "--window", "1", "-o", "json",
                         namesrv=world.namesrv), "BrokerDiagnosis", EXIT_OK)
        roles = sorted(b["role"] for b in doc["brokers"])
        assert roles == ["SLAVE", "SYNC_MASTER"] and all(b["verdict"] == "healthy" for b in doc["brokers"]), (side, doc)
        whole = json_of(mq("admin", "diagnose", "cluster", "-o", "json", namesrv=world.namesrv, timeout=180),
                        "ClusterDiagnosis", EXIT_REFUSED)
        verdicts = {(i["kind"], i["name"]): i["verdict"] for i in whole["items"]}
        assert verdicts[("group", LAG)] == "offline" and verdicts[("group", LIVE)] == "healthy", (side, verdicts)
        assert whole["items"][0]["severity"] == "action"  # worst first
        assert all(i["severity"] == "ok" for i in whole["items"] if i["kind"] != "group"), (side, whole["items"])
        assert {(i["kind"], i["name"]) for i in whole["items"] if i["kind"] == "ha"} == {("ha", "broker-a"),
                                                                                       ("ha", "broker-b")}
