"""Three `mq controller` processes replicating with Raft, driven by stand-in brokers that speak the
controller protocol as an Apache 5 broker's ReplicasManager does (id application, registration,
heartbeats to every controller, the first election, SyncStateSet changes) and take the controller's
NOTIFY_BROKER_ROLE_CHANGED pushes on a server of their own. Real processes and sockets, real SIGKILLs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from support.adminsupport import mq, mq_here
from support.clientsupport import until
from support.mqproc import MqProcess, start_mq
from support.ports import free_ports

from mqtools.client.admin import MQAdmin
from mqtools.client.errors import MQClientError
from mqtools.common.presentation import load_schema
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.controller import (
    AlterSyncStateSetRequestHeader,
    ApplyBrokerIdRequestHeader,
    BrokerHeartbeatRequestHeader,
    ElectMasterRequestHeader,
    ElectMasterResponseHeader,
    GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader,
    GetReplicaInfoRequestHeader,
    NotifyBrokerRoleChangedRequestHeader,
    RegisterBrokerToControllerRequestHeader,
    SyncStateSet,
)
from mqtools.remoting.errors import RemotingError
from mqtools.remoting.server import RemotingServer

pytestmark = pytest.mark.integration

CLUSTER, NAME = "CtlCluster", "broker-a"
#: The stand-ins' heartbeat timeout. A dead stand-in is seen by its closed connections, at once; the timeout only
#: has to outlast a starved test process (at 3 s a CPU-hog run saw broker 2 expire and re-elected to no master).
HEARTBEAT_TIMEOUT_MS = 10_000


class Controllers:
    def __init__(self, work: Path) -> None:
        ports = free_ports(6)
        self.ids = ["n0", "n1", "n2"]
        self.addrs = {pid: f"127.0.0.1:{ports[i]}" for i, pid in enumerate(self.ids)}
        peers = ";".join(f"{pid}-{addr}" for pid, addr in self.addrs.items())
        raft = ";".join(f"{pid}-127.0.0.1:{ports[3 + i]}" for i, pid in enumerate(self.ids))
        self.work = work
        self.confs = {}
        for pid in self.ids:
            conf = work / f"{pid}.properties"
            conf.write_text(f"controllerDLegerGroup=group1\ncontrollerDLegerPeers={peers}\ncontrollerRaftPeers={raft}\n"
                            f"controllerDLegerSelfId={pid}\ncontrollerStorePath={work / pid}\n"
                            "scanNotActiveBrokerInterval=1000\nscanInactiveMasterInterval=1000\n"
                            "controllerRaftPassword=test-secret\n")
            self.confs[pid] = conf
        self.procs: dict[str, MqProcess] = {}

    def start(self, pid: str) -> None:
        self.procs[pid] = start_mq(["controller", "start", "-c", str(self.confs[pid])])

    @property
    def all(self) -> str:
        return ";".join(self.addrs.values())

    def stop(self) -> None:
        for proc in self.procs.values():
            proc.stop()


@pytest.fixture
def controllers(tmp_path: Path) -> Iterator[Controllers]:
    ctl = Controllers(tmp_path)
    try:
        for pid in ctl.ids:
            ctl.start(pid)
        yield ctl
    finally:
        ctl.stop()


class StandIn:
    """A broker as the controllers see it: its own server (its address) and a client to the controllers."""

    def __init__(self, ctl: Controllers) -> None:
        self.ctl = ctl
        self.server = RemotingServer("127.0.0.1", 0)
        self.server.register(RequestCode.NOTIFY_BROKER_ROLE_CHANGED, self._notified)
        self.client = RemotingClient()
        self.notes: list[tuple[float, NotifyBrokerRoleChangedRequestHeader, SyncStateSet]] = []
        self.broker_id: int | None = None
        self._beat: asyncio.Task | None = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    def _notified(self, conn, req: RemotingCommand) -> RemotingCommand:
        self.notes.append((time.monotonic(), NotifyBrokerRoleChangedRequestHeader.from_ext(req.ext_fields),
                           SyncStateSet.from_json(req.body or b"{}")))
        return req.response()

    async def leader(self) -> str:
        async with MQAdmin(self.ctl.all) as admin:
            return await admin.controllers.leader(list(self.ctl.addrs.values()))

    async def call(self, code: int, ext: dict[str, str], body: bytes | None = None) -> RemotingCommand:
        """To the leader; again while a just-elected leader still says CONTROLLER_NOT_LEADER, as brokers retry."""
        deadline = time.monotonic() + 10
        while True:
            resp = await self.client.invoke(await self.leader(), RemotingCommand.request(code, ext, body), 5.0)
            if resp.code != ResponseCode.CONTROLLER_NOT_LEADER or time.monotonic() > deadline:
                return resp
            await asyncio.sleep(0.1)

    async def join(self) -> None:
        await self.server.start()
        await until(lambda: _other_leader(self, None), 15, "a controller leader")
        got = await self.call(RequestCode.CONTROLLER_GET_NEXT_BROKER_ID,
                              GetNextBrokerIdRequestHeader(CLUSTER, NAME).to_ext())
        self.broker_id = GetNextBrokerIdResponseHeader.from_ext(got.ext_fields).next_broker_id
        applied = await self.call(RequestCode.CONTROLLER_APPLY_BROKER_ID, ApplyBrokerIdRequestHeader(
            CLUSTER, NAME, self.broker_id, f"{self.addr};{time.time_ns()}").to_ext())
        assert applied.code == ResponseCode.SUCCESS, applied.remark
        registered = await self.call(RequestCode.CONTROLLER_REGISTER_BROKER, RegisterBrokerToControllerRequestHeader(
            CLUSTER, NAME, self.broker_id, self.addr, int(time.time() * 1000)).to_ext())
        assert registered.code == ResponseCode.SUCCESS, registered.remark
        await self.heartbeat()
        self._beat = asyncio.create_task(self._beats())

    async def heartbeat(self) -> None:
        header = BrokerHeartbeatRequestHeader(CLUSTER, self.addr, NAME, self.broker_id, 1, 1000 * self.broker_id,
                                              0, HEARTBEAT_TIMEOUT_MS)
        for addr in self.ctl.addrs.values():  # every controller, as Apache's brokers do
            with contextlib.suppress(MQClientError, RemotingError, OSError):  # a dead controller is part of the test
                await self.client.invoke_oneway(addr, RemotingCommand.request(
                    RequestCode.BROKER_HEARTBEAT, header.to_ext(), oneway=True))

    async def _beats(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            await self.heartbeat()

    async def die(self) -> None:
        """As a SIGKILLed broker: heartbeats stop and every connection closes at once."""
        if self._beat is not None:
            self._beat.cancel()
        await self.client.close()
        await self.server.shutdown()

    async def elect(self) -> RemotingCommand:
        return await self.call(RequestCode.CONTROLLER_ELECT_MASTER,
                               ElectMasterRequestHeader(CLUSTER, NAME, self.broker_id, False).to_ext())


def replica_info(ctl: Controllers, addr: str) -> RemotingCommand:
    async def ask() -> RemotingCommand:
        client = RemotingClient()
        try:
            return await client.invoke(addr, RemotingCommand.request(
                RequestCode.CONTROLLER_GET_REPLICA_INFO, GetReplicaInfoRequestHeader(NAME).to_ext()), 5.0)
        finally:
            await client.close()
    return ask()


async def test_raft_controllers_elect_a_new_master_on_a_dead_master_and_survive_their_leaders_death(controllers):
    ctl = controllers
    one, two = StandIn(ctl), StandIn(ctl)
    await one.join()
    await two.join()
    assert (one.broker_id, two.broker_id) == (1, 2)
    first = await one.elect()
    assert first.code == ResponseCode.SUCCESS, first.remark
    assert ElectMasterResponseHeader.from_ext(first.ext_fields).master_broker_id == 1
    assert (await two.elect()).code == ResponseCode.CONTROLLER_MASTER_STILL_EXIST
    grown = await one.call(RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET,
                           AlterSyncStateSetRequestHeader(NAME, 1, 1, int(time.time() * 1000)).to_ext(),
                           SyncStateSet({1, 2}, 1).to_json())
    assert grown.code == ResponseCode.SUCCESS, grown.remark

    # a non-leader refuses metadata requests and names the leader through GET_METADATA_INFO
    leader = await one.leader()
    follower = next(a for a in ctl.addrs.values() if a != leader)
    assert (await replica_info(ctl, follower)).code == ResponseCode.CONTROLLER_NOT_LEADER

    # the master dies: its connections close, and the controller leader elects 2 and tells it at once
    died = time.monotonic()
    await one.die()
    note = await until(lambda: next((n for n in two.notes if n[1].master_broker_id == 2), None), 10,
                       "NOTIFY_BROKER_ROLE_CHANGED making broker 2 master")
    took = note[0] - died
    assert (note[1].master_broker_id, note[1].master_epoch, note[2].sync_state_set) == (2, 2, {2})
    # by the closed connections, not at the heartbeat timeout (10 s)
    assert took < HEARTBEAT_TIMEOUT_MS / 2000, f"the new master was told {took:.2f} s after the old one died"
    # and the leader's log says why and how it elected (`mq controller start` logs its INFO lines)
    log = ctl.procs[next(pid for pid, a in ctl.addrs.items() if a == leader)].output
    await until(lambda: f"election for {NAME}: SUCCESS" in log(), 5, "the election in the leader's log")
    assert f"broker {NAME}/1 (" in log() and "is inactive: its connection closed" in log()

    # the controller leader dies (SIGKILL): another one takes over with the same metadata
    killed = next(pid for pid, a in ctl.addrs.items() if a == leader)
    ctl.procs[killed].signal(signal.SIGKILL)
    ctl.procs[killed].proc.wait(5)
    new_leader = await until(lambda: _other_leader(two, leader), 15, "a new controller leader")
    info = await until(lambda: _answered(replica_info(ctl, new_leader)), 10, "the new leader ready")
    assert info.ext_fields["masterBrokerId"] == "2"
    assert info.ext_fields["masterEpoch"] == "2"

    # the killed controller comes back from its Raft journal, as a follower with the same table
    ctl.start(killed)
    result = await until(lambda: asyncio.to_thread(
        lambda: _json(mq_here("admin", "controller", "sync-state-set", NAME, "-a", ctl.all, "-o", "json"))),
        15, "the table from the controllers")
    jsonschema.validate(result, load_schema("SyncStateSets"))
    (bset,) = result["brokerSets"]
    assert (bset["masterBrokerId"], bset["masterEpoch"]) == (2, 2)
    assert [(r["brokerId"], r["alive"], r["inSync"]) for r in bset["replicas"]] == [(1, False, False), (2, True, True)]

    def agreed() -> dict | None:
        meta = _json(mq_here("admin", "controller", "metadata", "-a", ctl.all, "-o", "json"))
        if not meta or len({c["leaderAddress"] for c in meta["controllers"]} - {None}) != 1:
            return None  # (the returning one may start an election of its own: any one leader will do)
        return meta if all(c["leaderAddress"] for c in meta["controllers"]) else None

    meta = await until(lambda: asyncio.to_thread(agreed), 15, "all three controllers naming the same leader")
    jsonschema.validate(meta, load_schema("ControllerMetadata"))
    # in a thread, as every CLI call here: the stand-in's heartbeats go on meanwhile, and a
    # loaded machine's `mq` start-up must not make the controllers see broker 2 die (CPU-hog run)
    shown = _json(await asyncio.to_thread(mq, "admin", "controller", "config", "-a", ctl.all, "-o", "json"))
    assert [c["config"]["controllerDLegerSelfId"] for c in shown["controllers"]] == ctl.ids
    assert all("controllerRaftPassword" not in c["config"] for c in shown["controllers"])
    history = _json(await asyncio.to_thread(mq, "admin", "controller", "elections", "-a", ctl.all, "-o", "json"))
    jsonschema.validate(history, load_schema("ControllerElections"))
    assert [(e["oldMaster"], e["newMaster"], e["masterEpoch"], e["cause"]) for e in history["elections"]] == [
        (None, 1, 1, "broker"), (1, 2, 2, "controller")]
    assert sum(c["isLeader"] for c in meta["controllers"]) <= 1
    await two.die()


async def _other_leader(stand_in: StandIn, old: str | None) -> str | None:
    try:
        leader = await stand_in.leader()
    except Exception:  # noqa: BLE001 - no leader yet
        return None
    return leader if leader != old else None


async def _answered(call) -> RemotingCommand | None:
    resp = await call
    return resp if resp.code == ResponseCode.SUCCESS else None


def _json(result) -> dict | None:
    return json.loads(result.stdout) if result.returncode == 0 else None


def test_a_name_server_runs_its_controller_with_enable_controller_in_namesrv(tmp_path: Path):
    ns_port, ctl_port, raft_port = free_ports(3)
    conf = tmp_path / "namesrv.properties"
    conf.write_text(f"listenPort={ns_port}\nkvConfigPath={tmp_path / 'kv.json'}\nenableControllerInNamesrv=true\n"
                    f"controllerDLegerPeers=n0-127.0.0.1:{ctl_port}\ncontrollerDLegerSelfId=n0\n"
                    f"controllerRaftPeers=n0-127.0.0.1:{raft_port}\ncontrollerStorePath={tmp_path / 'ctl'}\n")
    namesrv = start_mq(["namesrv", "start", "-c", str(conf)])
    try:
        assert namesrv.port == ns_port
        ctl = f"127.0.0.1:{ctl_port}"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(line.startswith("READY controller") for line in namesrv.lines):
            time.sleep(0.05)
        assert f"READY controller {ctl}" in namesrv.lines
        while True:  # the controller leads itself once its Raft has elected it (about half a second)
            shown = mq_here("admin", "getControllerMetaData", "-a", ctl)
            assert shown.returncode == 0, shown.stderr
            if f"#ControllerLeaderAddress\t{ctl}" in shown.stdout or time.monotonic() > deadline:
                break
            assert "#ControllerLeaderAddress\tnull" in shown.stdout, shown.stdout
        assert f"#ControllerLeaderAddress\t{ctl}" in shown.stdout, shown.stdout
    finally:
        namesrv.stop()
