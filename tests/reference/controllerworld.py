"""A broker set of two brokers in controller mode (Apache 5's, or mq's) under a controller (mq's or Apache's),
and the SIGKILL-mid-load measurement; used by test_controller_interop and bench/controller_failover.py."""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache
from refsupport import name
from support.clientsupport import until
from support.mqproc import MqProcess, start_mq, write_broker_props
from support.ports import free_port

from mqtools.client.admin import MQAdmin
from mqtools.client.errors import MQClientError
from mqtools.client.producer import Producer
from mqtools.client.types import SendStatus
from mqtools.common.message import Message

BROKER, CLUSTER = "broker-ctl", "CtlRef"
CONTROLLER_MAIN = "org.apache.rocketmq.controller.ControllerStartup"


@dataclass(frozen=True)
class Place:
    """Where a process runs: the address others reach it at, and what its command runs after (a network
    namespace's `ip netns exec NS`, so that a bench can cut it off)."""

    host: str = "127.0.0.1"
    prefix: tuple[str, ...] = ()


LOOPBACK = Place()


def start_mq_at(place: Place, args: list[str], **kwargs: Any) -> MqProcess:
    """`mq ARGS` run at `place`, known by the address others reach it at (its READY line names the one it
    bound, which from another namespace is not it)."""
    return dataclasses.replace(start_mq(args, prefix=place.prefix, **kwargs), host=place.host)


def controller_broker(root: Path, namesrv: str, controller: str, tag: str,
                      place: Place = LOOPBACK) -> apache.ApacheProcess:
    """An Apache 5 broker in controller mode; its id and role come from the controller."""
    aset = apache.require("apache-5")
    port = free_port((-2, 0, 1))
    store = root / tag / "store"
    conf = {
        "brokerClusterName": CLUSTER, "brokerName": BROKER, "brokerId": "-1", "brokerRole": "SLAVE",
        "namesrvAddr": namesrv, "listenPort": str(port), "brokerIP1": place.host,
        "storePathRootDir": str(store), "storePathCommitLog": str(store / "commitlog"),
        "mappedFileSizeCommitLog": apache.COMMITLOG_FILE_SIZE, "flushDiskType": "ASYNC_FLUSH",
        "enableControllerMode": "true", "controllerAddr": controller, "allAckInSyncStateSet": "true",
        "autoCreateTopicEnable": "false", "autoCreateSubscriptionGroup": "true",
        # a slave catches up and joins the SyncStateSet sooner than with the 5 s defaults
        "haSendHeartbeatInterval": "1000", "checkSyncStateSetPeriod": "1000", "syncBrokerMetadataPeriod": "1000",
    }
    if place != LOOPBACK:  # its HA address (brokerIP2) is otherwise the machine's first address
        conf["brokerIP2"] = place.host
    return apache._spawn("broker", aset, root, root / tag, port, apache.BROKER_MAIN, conf, host=place.host,
                         prefix=place.prefix)


def apache_controller(root: Path, tag: str, place: Place = LOOPBACK) -> apache.ApacheProcess:
    """Apache 5's own controller (DLedger, one node), ready when it names itself leader."""
    aset = apache.require("apache-5")
    port = free_port()
    conf = {"controllerDLegerGroup": "group1", "controllerDLegerPeers": f"n0-{place.host}:{port}",
            "controllerDLegerSelfId": "n0", "controllerStorePath": str(root / tag / "store")}
    process = apache._spawn("controller", aset, root, root / tag, port, CONTROLLER_MAIN, conf, host=place.host,
                            prefix=place.prefix)

    def ready() -> bool:
        async def leader() -> str:
            async with MQAdmin(process.addr, timeout=2.0) as admin:
                return await admin.controllers.leader([process.addr])
        with ThreadPoolExecutor(1) as pool:  # called from an event loop: the request runs on a loop of its own
            return pool.submit(asyncio.run, leader()).result() == process.addr

    apache._await(process, ready, 60, "controller")
    return process


def apache_controllers(root: Path, tag: str, count: int = 3,
                       places: Sequence[Place] | None = None) -> list[apache.ApacheProcess]:
    """`count` of Apache 5's controllers in one DLedger group (each serves the controller's requests on its
    DLedger port), ready when one of them leads."""
    aset = apache.require("apache-5")
    places = places or [LOOPBACK] * count
    ports = [free_port() for _ in range(count)]
    peers = ";".join(f"n{i}-{places[i].host}:{port}" for i, port in enumerate(ports))
    processes = [apache._spawn("controller", aset, root, root / f"{tag}-{i}", port, CONTROLLER_MAIN,
                               {"controllerDLegerGroup": "group1", "controllerDLegerPeers": peers,
                                "controllerDLegerSelfId": f"n{i}", "controllerStorePath": str(root / f"{tag}-{i}" / "store")},
                               host=places[i].host, prefix=places[i].prefix)
                 for i, port in enumerate(ports)]
    _until_led([p.addr for p in processes], 90)
    return processes


def mq_controllers(root: Path, tag: str, count: int = 3, places: Sequence[Place] | None = None) -> list[MqProcess]:
    """`count` of mq's controllers in one Raft group (each takes its port and the next, for Raft), ready
    when one of them leads."""
    places = places or [LOOPBACK] * count
    ports = [free_port((0, 1)) for _ in range(count)]
    peers = ";".join(f"n{i}-{places[i].host}:{port}" for i, port in enumerate(ports))
    processes = []
    for i in range(count):
        conf = root / f"{tag}-{i}" / "controller.properties"
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text(f"controllerDLegerGroup=group1\ncontrollerDLegerPeers={peers}\n"
                        f"controllerDLegerSelfId=n{i}\ncontrollerStorePath={root / f'{tag}-{i}' / 'store'}\n")
        processes.append(start_mq_at(places[i], ["controller", "start", "-c", str(conf)]))
    _until_led([p.addr for p in processes], 60)
    return processes


async def leading(addrs: list[str]) -> str | None:
    """The controller among `addrs` that says it leads now, None while none does (a follower may still name
    a dead leader)."""
    async with MQAdmin(addrs[0], timeout=1.0) as admin:
        for addr in addrs:
            try:
                if (await admin.controllers.metadata(addr)).is_leader:
                    return addr
            except MQClientError:
                continue
    return None


def _until_led(addrs: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    with ThreadPoolExecutor(1) as pool:  # called from an event loop: the requests run on a loop of their own
        while time.monotonic() < deadline:
            if pool.submit(asyncio.run, leading(addrs)).result() is not None:
                return
            time.sleep(0.2)
    raise AssertionError(f"no controller of {addrs} leads after {timeout:g} s")


async def sync_state(admin: MQAdmin, controller: str) -> tuple[int | None, list[int]]:
    """The set's master id and SyncStateSet as the controller holds them (`controller`: addresses joined
    by ';', as a broker's controllerAddr)."""
    sets = await admin.controllers.broker_sets(controller.split(";"), [BROKER])
    return (sets[0].master_broker_id, sets[0].sync_state_set) if sets else (None, [])


def mq_controller_broker(root: Path, namesrv: str, controller: str, tag: str, place: Place = LOOPBACK) -> MqProcess:
    """An mq broker in controller mode, in the same broker set as controller_broker's."""
    conf = write_broker_props(
        root / f"{tag}.properties", namesrv, root / tag / "store", brokerClusterName=CLUSTER, brokerName=BROKER,
        brokerId="-1", brokerRole="SLAVE", enableControllerMode="true", controllerAddr=controller,
        allAckInSyncStateSet="true", autoCreateTopicEnable="false", haSendHeartbeatInterval="1000",
        checkSyncStateSetPeriod="1000", syncBrokerMetadataPeriod="1000", brokerIP1=place.host)
    return start_mq_at(place, ["broker", "start", "-c", str(conf)], timeout=60)


async def form_set(root: Path, namesrv: str, controller: str, tag: str,
                   make: Callable[[Path, str, str, str, Place], Any] = controller_broker,
                   places: tuple[Place, Place] = (LOOPBACK, LOOPBACK)) -> list[Any]:
    """Two brokers (Apache's by default, or `make`'s, at `places`): the first elected master, the second in the
    SyncStateSet."""
    brokers = [make(root, namesrv, controller, f"{tag}-a", places[0])]
    async with MQAdmin(controller) as admin:
        await until(lambda: _state_is(admin, controller, 1), 90, "the first broker elected master")
        brokers.append(make(root, namesrv, controller, f"{tag}-b", places[1]))
        await until(lambda: _state_is(admin, controller, 2), 90, "the second broker in the SyncStateSet")
    return brokers


async def _state_is(admin: MQAdmin, controller: str, in_sync: int) -> bool:
    try:
        master, members = await sync_state(admin, controller)
    except MQClientError:
        return False
    return master is not None and len(members) == in_sync


async def master_and_slave(namesrv: str, brokers: list[Any], topic: str) -> tuple[Any, Any]:
    """The master (brokerId 0 at the name server) and the slave, once the slave has copied the topic from it
    (topics.json every few seconds): a slave promoted before that would not serve the topic."""
    async with MQAdmin(namesrv) as admin:
        master_addr = (await admin.cluster_info()).broker_addr_table[BROKER].broker_addrs[0]
        master = next(b for b in brokers if b.addr == master_addr)
        slave = next(b for b in brokers if b is not master)
        await until(lambda: _has_topic(admin, slave.addr, topic), 30, "the topic on the slave")
    return master, slave


async def _has_topic(admin: MQAdmin, addr: str, topic: str) -> bool:
    return topic in await admin.topics.topic_configs(addr)


async def send_through_a_kill(namesrv: str, topic: str, victim: Any, before: int = 50,
                              after: int = 50, give_up: float = 120.0, sig: int = signal.SIGKILL,
                              also: Sequence[Any] = (), on_signal: Callable[[], None] = lambda: None,
                              ) -> tuple[list[str], float]:
    """SYNC sends one at a time, the master (`victim`, None for none) sent `sig` after `before` acks (SIGKILL:
    its connections close; SIGSTOP: they stay open and only its heartbeats stop), `also` the processes given
    (SIGKILL) at the same moment, then `on_signal` called; a failed send, or one answered other than SEND_OK
    (stored on a master cut off from its slave), refreshes the route and tries again at once. The acked
    bodies and the seconds from the signal to the first ack after it."""
    acked: list[str] = []
    errors: list[str] = []
    killed_at = recovered_at = None
    async with Producer(name("PCTL"), namesrv=namesrv, send_timeout=2.0, retry_times=0) as producer:
        i = 0
        deadline = time.monotonic() + give_up
        while len(acked) < before + after and time.monotonic() < deadline:
            if killed_at is None and len(acked) == before:
                if victim is not None:
                    victim.proc.send_signal(sig)
                for other in also:
                    other.proc.send_signal(signal.SIGKILL)
                killed_at = time.monotonic()
                on_signal()
            body = f"m-{i}"
            i += 1
            try:
                status = (await producer.send(Message(topic, body.encode()))).status
            except MQClientError as exc:
                status = None
                errors.append(str(exc))
            if status is not SendStatus.SEND_OK:  # stored but not replicated (a cut-off master) is not acked
                if status is not None:
                    errors.append(status.name)
                await asyncio.sleep(0.1)
                await producer.instance.route(topic, refresh=True)
                continue
            acked.append(body)
            if killed_at is not None and recovered_at is None:
                recovered_at = time.monotonic()
    assert killed_at is not None and recovered_at is not None, \
        f"{len(acked)} acked, writes never came back; last errors: {errors[-3:]}"
    return acked, recovered_at - killed_at
