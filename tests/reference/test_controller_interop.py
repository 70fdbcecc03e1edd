"""Controller mode across implementations: two Apache 5 brokers of one broker set, in controller mode,
under mq's controller (and mq's name server); and two mq brokers under Apache 5's controller.

The Apache brokers apply for ids, register, elect their first master and grow the SyncStateSet through
mq's controller as they would through Apache's; SYNC sends with allAckInSyncStateSet succeed. The master
is then SIGKILLed while our producer keeps sending: mq's controller elects the Apache slave, the set
takes writes again, and every acknowledged message is read back by Apache's Java consumer. Apache's own
mqadmin reads mq's controller (getControllerMetaData, getSyncStateSet), and `mq admin controller` and
`ha status` read Apache's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import apache
import pytest
from controllerworld import (
    BROKER,
    CLUSTER,
    apache_controller,
    form_set,
    master_and_slave,
    mq_controller_broker,
    send_through_a_kill,
    sync_state,
)
from refsupport import consume_all, make_topic, name
from support.adminsupport import json_of, mq
from support.mqproc import start_mq, start_namesrv

from mqtools.client.admin import MQAdmin

pytestmark = pytest.mark.timeout(300)


@pytest.mark.soak  # the mixed pair in make test: mq's brokers under Apache's controller, below
async def test_apache5_brokers_fail_over_under_mqs_controller(ref_root: Path, tmp_path: Path):
    # a name server of its own: on a shared one, a producer that lost the topic's only master would fall back
    # to another cluster's broker that creates topics on demand
    namesrv = start_namesrv(tmp_path)
    ctl = start_mq(["controller", "start", "--listen-port", "0", "--store-dir", str(tmp_path / "ctl")])
    brokers: list[apache.ApacheProcess] = []
    try:
        brokers = await form_set(ref_root, namesrv.addr, ctl.addr, f"ctl-{tmp_path.name}")
        async with MQAdmin(ctl.addr) as admin:
            master, in_sync = await sync_state(admin, ctl.addr)
        assert sorted(in_sync) == [1, 2] and master in (1, 2)

        shown = apache.mqadmin(ref_root, "getSyncStateSet", "-a", ctl.addr, "-b", BROKER, version="apache-5").stdout
        assert re.search(rf"#MasterBrokerId\s+{master}\b", shown) and shown.count("InSyncReplica:") == 2, shown
        meta = apache.mqadmin(ref_root, "getControllerMetaData", "-a", ctl.addr, version="apache-5").stdout
        assert f"#ControllerLeaderAddress\t{ctl.addr}" in meta, meta

        status = json_of(mq("admin", "ha", "status", "-c", CLUSTER, "--window", "0", "-o", "json",
                            namesrv=namesrv.addr), "HAStatus")
        (group,) = status["groups"]
        assert group["controller"]["syncStateSet"] == sorted(in_sync), group["controller"]
        assert group["controller"]["masterBrokerId"] == master and group["controller"]["error"] is None
        ready = json_of(mq("admin", "ha", "ready", BROKER, "-o", "json", namesrv=namesrv.addr), "HAReady")
        assert [c["ok"] for c in ready["checks"] if c["name"] == "electable"] == [True], ready["checks"]

        await kill_master_and_read_back(namesrv.addr, ctl.addr, brokers, master, name("CTLREF"))
    finally:
        for broker in brokers:
            broker.kill()
        ctl.stop()
        namesrv.stop()


async def test_mq_brokers_fail_over_under_apaches_controller(ref_root: Path, tmp_path: Path):
    # mq's brokers apply for ids, register, elect and grow the SyncStateSet through Apache's controller
    # (DLedger, one node), take its NOTIFY_BROKER_ROLE_CHANGED, and fail over with nothing acknowledged lost
    namesrv = start_namesrv(tmp_path)
    ctl = apache_controller(ref_root, f"actl-{tmp_path.name}")
    brokers = []
    try:
        brokers = await form_set(tmp_path, namesrv.addr, ctl.addr, "mqb", make=mq_controller_broker)
        async with MQAdmin(ctl.addr) as admin:
            master, in_sync = await sync_state(admin, ctl.addr)
        assert sorted(in_sync) == [1, 2] and master in (1, 2)
        # mq's toolkit reads Apache's controller as it reads its own
        meta = json_of(mq("admin", "controller", "metadata", "-a", ctl.addr, "-o", "json"), "ControllerMetadata")
        assert [(c["address"], c["isLeader"], c["leaderAddress"]) for c in meta["controllers"]] == [
            (ctl.addr, True, ctl.addr)], meta
        sets = json_of(mq("admin", "controller", "sync-state-set", BROKER, "-a", ctl.addr, "-o", "json"),
                       "SyncStateSets")
        (bset,) = sets["brokerSets"]
        assert bset["masterBrokerId"] == master and bset["masterEpoch"] == 1, bset
        assert sorted((r["brokerId"], r["alive"], r["inSync"]) for r in bset["replicas"]) == [
            (1, True, True), (2, True, True)], bset
        status = json_of(mq("admin", "ha", "status", "-c", CLUSTER, "--window", "0", "-o", "json",
                            namesrv=namesrv.addr), "HAStatus")
        (group,) = status["groups"]
        assert group["controller"]["syncStateSet"] == [1, 2] and group["controller"]["error"] is None, group
        await kill_master_and_read_back(namesrv.addr, ctl.addr, brokers, master, name("CTLMQ"))
        # Apache's mqadmin reads the survivor's epoch cache (GET_BROKER_EPOCH_CACHE, served by mq's broker)
        shown = apache.mqadmin(ref_root, "getBrokerEpoch", "-n", namesrv.addr, "-b", BROKER,
                               version="apache-5").stdout
        assert re.search(r"epoch=1, startOffset=0\b", shown) and re.search(r"epoch=2, startOffset=[1-9]", shown), shown
    finally:
        for broker in brokers:
            broker.stop()
        ctl.stop()
        namesrv.stop()


async def kill_master_and_read_back(namesrv: str, controller: str, brokers: list[Any], master: int, topic: str) -> None:
    """SIGKILL the set's master mid-load: the controller elects the other broker, writes come back within
    15 s, and Apache's Java consumer reads back every acknowledged message."""
    make_topic(namesrv, topic, cluster=CLUSTER)
    victim, _slave = await master_and_slave(namesrv, brokers, topic)
    acked, rto = await send_through_a_kill(namesrv, topic, victim)
    got = consume_all(namesrv, topic, len(acked))
    assert not set(acked) - {e["body"] for e in got}, "acknowledged messages lost"
    async with MQAdmin(controller) as admin:
        new_master, in_sync = await sync_state(admin, controller)
    assert new_master != master and in_sync == [new_master]
    assert rto < 15.0, f"writes came back {rto:.1f} s after the kill"
