"""`mq top` on Apache's 2m-2s SYNC cluster: `--once -o json` fills every view, and the live view (Textual's
pilot) turns a SIGKILLed Apache slave's row red within two refreshes; the slave is started again after.
"""

from __future__ import annotations

import time
from pathlib import Path

import apache
import pytest
from refsupport import Clusters2m2s
from support.adminsupport import json_of, mq
from support.clientsupport import until
from support.tuisupport import status_of
from tkworld import LAG, LIVE, TOPIC, World

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.cluster import LIVE_TABLE_WAIT_S
from mqtools.live.tables import CRIT, Row
from mqtools.tui.app import TopApp
from mqtools.tui.poller import Poller

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

REFRESH = 1.0
POLL_TIMEOUT = 1.5
SIZE = (180, 40)


def test_once_fills_every_view_on_apache(worlds: dict[str, World]) -> None:
    world = worlds["apache"]
    doc = json_of(mq("top", "--once", "-o", "json", namesrv=world.namesrv, timeout=60), "TopSnapshot")
    views = doc["views"]
    brokers = views["brokers"]["rows"]
    assert sorted((b["brokerName"], b["brokerId"]) for b in brokers) == [
        ("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1)]
    assert all(b["status"] == "ok" and b["version"] == "V4_9_7" and b["commitLogMaxOffset"] > 0 for b in brokers)
    assert all(b["heartbeatAgeMs"] is None for b in brokers)  # Apache's name server does not tell it
    assert any("n/a" in note for note in views["brokers"]["notes"]), views["brokers"]["notes"]
    ha = views["ha"]["rows"]
    assert sorted(r["master"] for r in ha) == ["broker-a", "broker-b"]
    assert all(r["diffBytes"] == 0 and r["ackOffset"] > 0 for r in ha), ha
    assert TOPIC in {t["topic"] for t in views["topics"]["rows"]}
    groups = {g["group"]: g for g in views["groups"]["rows"]}
    assert groups[LAG]["lag"] > 0 and groups[LIVE]["members"] == 1, groups
    assert all(n["reachable"] for n in views["namesrv"]["rows"])


async def test_rounds_do_not_wait_for_what_apache_leaves_unanswered(worlds: dict[str, World]) -> None:
    """Apache's name server never answers mq's private GET_BROKER_LIVE_TABLE: the first round gives it
    LIVE_TABLE_WAIT_S, later ones do not ask (they used to wait out the session's timeout every round)."""
    async with MQAdmin(worlds["apache"].namesrv, timeout=5.0) as admin:
        began = time.monotonic()
        first = await admin.cluster.cluster_snapshot(runtime=False)
        first_s, began = time.monotonic() - began, time.monotonic()
        await admin.cluster.cluster_snapshot(runtime=False)
        probes = await admin.namesrv_probes.namesrv_probe()
        later_s = time.monotonic() - began
    assert not first.live_table_available and [p.live_table for p in probes] == [False] * len(probes)
    assert first_s < LIVE_TABLE_WAIT_S + 1.0 and later_s < 0.5, (first_s, later_s)


def rows_of(app: TopApp) -> dict[str, Row]:
    return {r.key: r for r in app.current_rows}


@pytest.mark.faults
async def test_a_killed_apache_slave_turns_red_within_two_refreshes(clusters_2m2s: Clusters2m2s,
                                                                     tmp_path: Path) -> None:
    cluster = clusters_2m2s.apache
    slave = cluster.brokers["broker-b-s"]
    poller = Poller(cluster.addr, timeout=POLL_TIMEOUT)
    app = TopApp(poller=poller, namesrv=poller.namesrv_addrs, refresh=REFRESH, snapshot_dir=tmp_path)
    try:
        async with app.run_test(size=SIZE):
            await until(lambda: len(app.current_rows) == 4
                        and all(status_of(r).value == "ok" for r in app.current_rows), 30, "four brokers answering")
            assert rows_of(app)[slave.addr].level != CRIT
            slave.kill()
            began = time.monotonic()
            # two refresh intervals, and the second round's own time (a request to the dead broker may
            # wait out the poller's timeout)
            await until(lambda: rows_of(app)[slave.addr].level == CRIT, 2 * REFRESH + POLL_TIMEOUT,
                        "the killed slave's row red")
            print(f"\nkilled Apache slave red after {time.monotonic() - began:.2f}s (refresh {REFRESH:g}s)")
    finally:
        if not slave.alive:
            cluster.brokers["broker-b-s"] = apache.restart_broker(slave)
