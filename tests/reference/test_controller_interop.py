"""Controller mode across implementations: two Apache 5 brokers of one broker set, in controller mode,
under mq's controller (and mq's name server).

The Apache brokers apply for ids, register, elect their first master and grow the SyncStateSet through
mq's controller as they would through Apache's; SYNC sends with allAckInSyncStateSet succeed. The master
is then SIGKILLed while our producer keeps sending: mq's controller elects the Apache slave, the group
takes writes again, and every acknowledged message is read back by Apache's Java consumer. Apache's own
mqadmin reads mq's controller (getControllerMetaData, getSyncStateSet).
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import apache
import pytest
from clientsupport import until
from mqproc import MqProcess, start_mq, start_namesrv
from refsupport import consume_all, make_topic, name

from mqtools.client.admin import MQAdmin
from mqtools.client.errors import MQClientError
from mqtools.client.producer import Producer
from mqtools.common.message import Message

pytestmark = pytest.mark.timeout(300)

BROKER, CLUSTER = "broker-ctl", "CtlRef"


def controller_broker(root: Path, namesrv: str, controller: str, tag: str) -> apache.ApacheProcess:
    """An Apache 5 broker in controller mode; its id and role come from the controller."""
    aset = apache.require("apache-5")
    port = apache.free_port((-2, 0, 1))
    store = root / tag / "store"
    conf = {
        "brokerClusterName": CLUSTER, "brokerName": BROKER, "brokerId": "-1", "brokerRole": "SLAVE",
        "namesrvAddr": namesrv, "listenPort": str(port), "brokerIP1": "127.0.0.1",
        "storePathRootDir": str(store), "storePathCommitLog": str(store / "commitlog"),
        "mappedFileSizeCommitLog": apache.COMMITLOG_FILE_SIZE, "flushDiskType": "ASYNC_FLUSH",
        "enableControllerMode": "true", "controllerAddr": controller, "allAckInSyncStateSet": "true",
        "autoCreateTopicEnable": "false", "autoCreateSubscriptionGroup": "true",
        # a slave catches up and joins the SyncStateSet sooner than with the 5 s defaults
        "haSendHeartbeatInterval": "1000", "checkSyncStateSetPeriod": "1000", "syncBrokerMetadataPeriod": "1000",
    }
    return apache._spawn("broker", aset, root, root / tag, port, apache.BROKER_MAIN, conf)


async def sync_state(admin: MQAdmin, controller: str) -> tuple[int | None, list[int], list[int]]:
    (bset,) = await admin.controllers.broker_sets([controller], [BROKER]) or [None]
    if bset is None:
        return None, [], []
    return bset.master_broker_id, bset.sync_state_set, [r.broker_id for r in bset.replicas if r.alive]


async def test_apache5_brokers_fail_over_under_mqs_controller(ref_root: Path, tmp_path: Path):
    # a name server of its own: on a shared one, a producer that lost the topic's only master would fall back
    # to another cluster's broker that creates topics on demand
    namesrv = start_namesrv(tmp_path)
    ctl: MqProcess = start_mq(["controller", "start", "--listen-port", "0", "--store-dir", str(tmp_path / "ctl")])
    brokers: list[apache.ApacheProcess] = []
    mq_single = namesrv.addr
    try:
        brokers.append(controller_broker(ref_root, mq_single, ctl.addr, f"ctl-a-{tmp_path.name}"))
        async with MQAdmin(ctl.addr) as admin:
            await until(lambda: _master_elected(admin, ctl.addr), 90, "the first Apache broker elected master")
            brokers.append(controller_broker(ref_root, mq_single, ctl.addr, f"ctl-b-{tmp_path.name}"))
            master, in_sync, _alive = await until(lambda: _in_sync(admin, ctl.addr), 90,
                                                 "the second Apache broker in the SyncStateSet")
        assert sorted(in_sync) == [1, 2] and master in (1, 2)

        shown = apache.mqadmin(ref_root, "getSyncStateSet", "-a", ctl.addr, "-b", BROKER, version="apache-5").stdout
        assert re.search(rf"#MasterBrokerId\s+{master}\b", shown) and shown.count("InSyncReplica:") == 2, shown
        meta = apache.mqadmin(ref_root, "getControllerMetaData", "-a", ctl.addr, version="apache-5").stdout
        assert f"#ControllerLeaderAddress\t{ctl.addr}" in meta, meta

        topic = name("CTLREF")
        make_topic(mq_single, topic, cluster=CLUSTER)
        master_pid = await _master_pid(mq_single, brokers)
        victim = next(b for b in brokers if b.pid == master_pid)
        survivor = next(b for b in brokers if b is not victim)
        async with MQAdmin(mq_single) as admin:  # the slave copies topics.json from its master every few seconds
            await until(lambda: _has_topic(admin, survivor.addr, topic), 30, "the topic on the slave")
        acked, rto = await _send_through_a_kill(mq_single, topic, victim)
        got = consume_all(mq_single, topic, len(acked))
        assert not set(acked) - {e["body"] for e in got}, "acknowledged messages lost"
        async with MQAdmin(ctl.addr) as admin:
            new_master, in_sync, _ = await sync_state(admin, ctl.addr)
        assert new_master != master and in_sync == [new_master]
        assert rto < 15.0, f"writes came back {rto:.1f} s after the kill"
    finally:
        for broker in brokers:
            broker.kill()
        ctl.stop()
        namesrv.stop()


async def _master_elected(admin: MQAdmin, controller: str) -> bool:
    try:
        return (await sync_state(admin, controller))[0] is not None
    except MQClientError:
        return False


async def _in_sync(admin: MQAdmin, controller: str):
    try:
        state = await sync_state(admin, controller)
    except MQClientError:
        return None
    return state if len(state[1]) == 2 else None


async def _has_topic(admin: MQAdmin, addr: str, topic: str) -> bool:
    return topic in await admin.topic_configs(addr)


async def _master_pid(namesrv: str, brokers: list[apache.ApacheProcess]) -> int:
    async with MQAdmin(namesrv) as admin:
        data = (await admin.cluster_info()).broker_addr_table[BROKER]
    master_addr = data.broker_addrs[0]
    return next(b.pid for b in brokers if b.addr == master_addr)


async def _send_through_a_kill(namesrv: str, topic: str, victim: apache.ApacheProcess,
                               before: int = 50, after: int = 50) -> tuple[list[str], float]:
    """SYNC sends, the master SIGKILLed after `before` acks; the acked bodies and the seconds from the kill
    to the first acknowledged send after it."""
    acked: list[str] = []
    errors: list[str] = []
    killed_at = recovered_at = None
    async with Producer(name("PCTL"), namesrv=namesrv, send_timeout=2.0, retry_times=0) as producer:
        i = 0
        deadline = time.monotonic() + 120
        while len(acked) < before + after and time.monotonic() < deadline:
            if killed_at is None and len(acked) == before:
                victim.kill()
                killed_at = time.monotonic()
            body = f"m-{i}"
            i += 1
            try:
                await producer.send(Message(topic, body.encode()))
            except MQClientError as exc:
                errors.append(str(exc))
                await asyncio.sleep(0.1)
                await producer.instance.route(topic, refresh=True)
                continue
            acked.append(body)
            if killed_at is not None and recovered_at is None:
                recovered_at = time.monotonic()
    assert killed_at is not None and recovered_at is not None, \
        f"{len(acked)} acked, writes never came back; last errors: {errors[-3:]}"
    return acked, recovered_at - killed_at
