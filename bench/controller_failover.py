"""Write RTO of a broker set after a fault in controller mode: under Apache's controller and under mq's.

The same broker set each time: two Apache RocketMQ 5.5.0 brokers in controller mode (allAckInSyncStateSet,
the second in the SyncStateSet before the fault) behind an mq name server, first under Apache 5.5.0's own
controller (DLedger), then under `mq controller` (pysyncobj's Raft), one run after the other, each on
fresh processes and stores. Our Producer sends one SYNC message at a time; 50 acks in, the fault comes,
and a failed send refreshes the route and tries again at once, so what is measured is the servers' part:
the controller noticing the death and electing, the new master taking over and registering. RTO is the
time from the fault to the first acknowledged send after it. Also counted: acknowledged messages missing
afterwards (read back by Apache's Java consumer). With `--brokers mq` the set is two mq brokers in controller
mode instead (mixed under Apache's controller; not with restart-old-master).

--fault kill         SIGKILL of the master, one controller.
--fault pause        SIGSTOP of the master instead: its connections stay open and only its heartbeats stop,
                     so the controller finds it by the broker's heartbeat timeout (controllerHeartBeatTimeoutMills, 10 s).
--fault kill-leader  three controllers; SIGKILL of their leader (the master untouched): also the seconds until
                     a surviving controller says it leads.
--fault kill-both    three controllers; SIGKILL of the master and of the controller leader at the same moment:
                     the new controller leader must elect the new master.
--fault restart-old-master
                     one controller; SIGKILL of the master, then, once writes went on at its slave, the old master
                     started again on its store: also the seconds from that start until it is back in the
                     SyncStateSet beside the new master, and whether the name server ever named it master
                     meanwhile (two masters: split brain), then 50 more sends.
--fault partition    one controller; every server in a network namespace of its own (needs root and iproute2,
                     as `mq cluster up --netns`); the master's link is moved off the others' bridge (the
                     clients still reach it, so it answers sends it cannot replicate: not SEND_OK, not counted),
                     then, once writes went on at its slave, healed: also the seconds from the heal until it is
                     back in the SyncStateSet, split brain as above, then 50 more sends.
--fault partition-leader
                     three controllers in namespaces; their leader cut off from the other controllers and the
                     brokers (the master untouched): also the seconds until a surviving controller leads.

Prints one summary line: the RTO's p50 and p99 per controller (and the controller election's where the
leader was killed, the rejoin's where the old master came back), and mq/Apache at p50.

Usage: .venv/bin/python bench/controller_failover.py [--runs 3]
       [--fault kill|pause|kill-leader|kill-both|restart-old-master|partition|partition-leader]
       [--sides apache,mq] [--brokers apache|mq] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import signal
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "reference"))

import apache
from controllerworld import (
    BROKER,
    CLUSTER,
    LOOPBACK,
    Place,
    apache_controller,
    apache_controllers,
    controller_broker,
    form_set,
    leading,
    master_and_slave,
    mq_controller_broker,
    mq_controllers,
    send_through_a_kill,
    start_mq_at,
    sync_state,
)
from fetch import FETCH_COMMAND, SETS
from refsupport import consume_all, make_topic, name
from support.mqproc import start_mq
from support.ports import free_port

from mqtools.client.admin import MQAdmin
from mqtools.client.errors import MQClientError
from mqtools.client.producer import Producer
from mqtools.cluster import netns
from mqtools.common.message import Message


@dataclass(frozen=True)
class Fault:
    description: str
    sig: int | None = None
    """What the master is sent."""
    kill_leader: bool = False
    """The controller leader is SIGKILLed at the same moment."""
    controllers: int = 1
    cut: str | None = None
    """Cut off instead ("master" or "leader"): every server runs in a network namespace of its own."""


FAULTS = {
    "kill": Fault("a master SIGKILL", signal.SIGKILL),
    "pause": Fault("a master SIGSTOP", signal.SIGSTOP),
    "kill-leader": Fault("a SIGKILL of the controller leader (of 3)", None, True, 3),
    "kill-both": Fault("a SIGKILL of a master and of the controller leader (of 3) at once", signal.SIGKILL, True, 3),
    "restart-old-master": Fault("a master SIGKILL and its restart once writes went on", signal.SIGKILL),
    "partition": Fault("a master cut off from its controller, name server and slave, then healed", cut="master"),
    "partition-leader": Fault("the controller leader (of 3) cut off from the other controllers and the brokers",
                              controllers=3, cut="leader"),
}


def note(msg: str) -> None:
    print(f"[controller_failover {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class Outcome:
    rto: float
    lost: int
    election: float | None
    """Seconds from the kill until a surviving controller leads (faults that kill the controller leader)."""
    rejoin: float | None = None
    """Seconds from the old master's start until it is back in the SyncStateSet (restart-old-master)."""
    split_brain: bool = False
    """The name server named the restarted old master master while the new one was (restart-old-master)."""


async def watch_election(survivors: list[str], since: float) -> float:
    """Seconds from `since` (when the signal went) until one of `survivors` says it leads."""
    while await leading(survivors) is None:
        await asyncio.sleep(0.02)
    return time.monotonic() - since


async def watch_rejoin(namesrv: str, controller: str, new_master: Any, old: Any, since: float,
                       timeout: float = 120.0) -> tuple[float, bool]:
    """Seconds from `since` until `old` (restarted) is listed beside `new_master` at the name server and the
    controller's SyncStateSet holds both, `new_master` still its master; and whether the name server named
    `old` master at any poll meanwhile."""
    split = False
    async with MQAdmin(namesrv, timeout=2.0) as admin, MQAdmin(controller, timeout=2.0) as ctl:
        master_id, _ = await sync_state(ctl, controller)
        while time.monotonic() < since + timeout:
            try:
                addrs = (await admin.cluster_info()).broker_addr_table[BROKER].broker_addrs
                split |= addrs.get(0) == old.addr
                now_master, members = await sync_state(ctl, controller)
            except (MQClientError, KeyError):
                await asyncio.sleep(0.05)
                continue
            if (now_master == master_id and len(members) == 2 and addrs.get(0) == new_master.addr
                    and old.addr in addrs.values()):
                return time.monotonic() - since, split
            await asyncio.sleep(0.05)
    raise AssertionError(f"the old master {old.addr} was not back in the SyncStateSet after {timeout:g} s")


async def send_more(namesrv: str, topic: str, count: int) -> list[str]:
    """`count` SYNC sends after the rejoin (the set acknowledges only once both have the message)."""
    async with Producer(name("PCTL"), namesrv=namesrv, send_timeout=5.0) as producer:
        bodies = [f"after-{i}" for i in range(count)]
        for body in bodies:
            await producer.send(Message(topic, body.encode()))
    return bodies


def namespaces(stack: ExitStack, fault: Fault) -> tuple[netns.Layout | None, list[Place]]:
    """Where each server runs (name server, the controllers, the two brokers, in that order): loopback, or for
    a cut a network namespace each, removed when the run ends (after its processes: the stack unwinds first)."""
    count = 1 + fault.controllers + 2
    if fault.cut is None:
        return None, [LOOPBACK] * count
    layout = netns.Layout(free_port())
    netns.create(layout, count)
    stack.callback(netns.destroy, layout, count)
    return layout, [Place(layout.host(k), tuple(layout.exec_prefix(layout.namespace(k)))) for k in range(count)]


async def one_run(root: Path, side: str, run: int, name_: str, kind: str = "apache") -> Outcome:
    """One fault under `side`'s controller(s), to a set of `kind`'s brokers."""
    fault = FAULTS[name_]
    work = root / f"{side}-{run}"
    work.mkdir(parents=True)
    with ExitStack() as stack:  # what started is stopped, also when a later start fails
        layout, places = namespaces(stack, fault)
        ns_place, ctl_places, broker_places = places[0], places[1:-2], places[-2:]
        namesrv = start_mq_at(ns_place, ["namesrv", "start", "--listen-port", "0", "--store-dir",
                                         str(work / "namesrv")])
        stack.callback(namesrv.stop)
        controllers: list[Any] = []
        stack.callback(lambda: [ctl.kill() for ctl in controllers])
        tag = f"{side}-{run}-controller"
        if side == "apache":
            controllers += ([apache_controller(root, tag, ctl_places[0])] if fault.controllers == 1
                            else apache_controllers(root, tag, fault.controllers, ctl_places))
        elif fault.controllers == 1 and fault.cut is None:
            controllers.append(start_mq(["controller", "start", "--listen-port", "0", "--store-dir",
                                         str(work / "ctl")]))
        else:  # a group of them, or one in a namespace: it names itself to brokers by its peer address
            controllers += mq_controllers(root, tag, fault.controllers, ctl_places)
        brokers: list[Any] = []
        stack.callback(lambda: [broker.kill() for broker in brokers])
        controller = ";".join(c.addr for c in controllers)  # as a broker's controllerAddr
        make = controller_broker if kind == "apache" else mq_controller_broker
        brokers += await form_set(root, namesrv.addr, controller, f"{side}-{run}", make, tuple(broker_places))
        topic = name("CTLBENCH")
        make_topic(namesrv.addr, topic, cluster=CLUSTER)
        master, slave = await master_and_slave(namesrv.addr, brokers, topic)
        victims: list[Any] = []
        watchers: list[asyncio.Future[float]] = []
        leader = None
        if fault.kill_leader or fault.cut == "leader":
            leader_addr = await leading([c.addr for c in controllers])
            leader = next(c for c in controllers if c.addr == leader_addr)
            victims += [leader] if fault.kill_leader else []
        survivors = [c.addr for c in controllers if c is not leader]
        # the process cut off: its namespace's index (the order of `places`)
        cut = (1 + fault.controllers + brokers.index(master) if fault.cut == "master"
               else 1 + controllers.index(leader) if fault.cut == "leader" else None)

        def at_fault() -> None:  # the moment the signals went
            if layout is not None and cut is not None:
                netns.partition(layout, cut)
            if leader is not None:
                watchers.append(asyncio.ensure_future(watch_election(survivors, time.monotonic())))

        acked, rto = await send_through_a_kill(namesrv.addr, topic, master if fault.sig is not None else None,
                                               sig=fault.sig or signal.SIGKILL, also=victims, on_signal=at_fault)
        elected = await asyncio.wait_for(watchers[0], 120) if watchers else None
        rejoin, split = None, False
        if name_ == "restart-old-master":
            began = time.monotonic()
            again = await asyncio.to_thread(apache.respawn_broker, master)
            brokers.append(again)
            rejoin, split = await watch_rejoin(namesrv.addr, controller, slave, again, began)
        if layout is not None and cut is not None:
            began = time.monotonic()
            netns.heal(layout, cut)
            if fault.cut == "master":
                rejoin, split = await watch_rejoin(namesrv.addr, controller, slave, master, began)
        if rejoin is not None:
            acked += await send_more(namesrv.addr, topic, 50)
        if fault.sig is not None:
            master.kill()  # a paused one too: its successor must be the only master the consumer reads
        got = {e["body"] for e in consume_all(namesrv.addr, topic, len(acked))}
        return Outcome(rto, len(set(acked) - got), elected, rejoin, split)


def nearest_rank(values: list[float], q: float) -> float:
    """The q-quantile by nearest rank (with 20 runs, p99 is the slowest)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="faults per controller")
    parser.add_argument("--fault", choices=tuple(FAULTS), default="kill",
                        help="kill: SIGKILL of the master (connections close at once); pause: SIGSTOP (only "
                             "heartbeats stop, found by controllerHeartBeatTimeoutMills, 10 s); kill-leader: "
                             "SIGKILL of the controller leader of three; kill-both: the master and the leader; "
                             "restart-old-master: a kill, then the old master started again; partition: the "
                             "master cut off from the other servers, then healed; partition-leader: the "
                             "controller leader of three cut off (both: network namespaces, as root)")
    parser.add_argument("--sides", default="apache,mq", help="controllers to measure, in this order")
    parser.add_argument("--brokers", choices=("apache", "mq"), default="apache",
                        help="whose brokers form the set (mq: mq's brokers in controller mode)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="run in this new directory and keep it (every process's logs and stores, a folder a run) "
                             "instead of a temporary one")
    args = parser.parse_args()
    sides = args.sides.split(",")
    if not sides or not set(sides) <= {"apache", "mq"}:
        print("controller_failover: --sides takes apache, mq or both", file=sys.stderr)
        return 2
    if args.brokers == "mq" and args.fault == "restart-old-master":
        print("controller_failover: --fault restart-old-master restarts Apache's brokers only", file=sys.stderr)
        return 2
    why = netns.unavailable() if FAULTS[args.fault].cut else None
    if why is not None:
        print(f"controller_failover: --fault {args.fault}: {why}", file=sys.stderr)
        return 2
    for key in ("apache-5", "harness"):
        if not SETS[key].ready():
            print(f"controller_failover: {SETS[key].name} is missing; run `{FETCH_COMMAND}` first", file=sys.stderr)
            return 2
    outcomes: dict[str, list[Outcome]] = {side: [] for side in sides}
    if args.keep is not None:
        args.keep.mkdir(parents=True)  # a new one: each run's folders are made afresh
    place = nullcontext(str(args.keep)) if args.keep is not None else tempfile.TemporaryDirectory(prefix="ctl-failover-")
    with place as tmp:
        try:
            for side in sides:
                for run in range(args.runs):
                    out = asyncio.run(one_run(Path(tmp), side, run, args.fault, args.brokers))
                    elected = "" if out.election is None else f", a controller leads again after {out.election:.2f} s"
                    if out.rejoin is not None:
                        since = "the heal" if FAULTS[args.fault].cut else "its start"
                        elected += (f", the old master back in the SyncStateSet {out.rejoin:.2f} s after {since}"
                                    + (", SPLIT BRAIN: named master beside the new one" if out.split_brain else ""))
                    note(f"{side} run {run + 1}: RTO {out.rto:.2f} s{elected}, {out.lost} acknowledged lost")
                    outcomes[side].append(out)
        finally:
            apache.kill_all()
    owners = {"apache": "Apache's controller", "mq": "mq's"}

    def quantiles(values: list[float]) -> str:
        return f"{statistics.median(values):.2f}/{nearest_rank(values, 0.99):.2f} s"

    parts = []
    for side, outs in outcomes.items():
        part = f"{owners[side]} RTO {quantiles([o.rto for o in outs])}"
        if FAULTS[args.fault].kill_leader or FAULTS[args.fault].cut == "leader":
            part += f", controller election {quantiles([o.election for o in outs if o.election is not None])}"
        if args.fault in ("restart-old-master", "partition"):
            part += (f", rejoin {quantiles([o.rejoin for o in outs if o.rejoin is not None])}, split brain "
                     f"{sum(o.split_brain for o in outs)} of {len(outs)}")
        parts.append(part)
    ratio = ""
    if len(sides) == 2:
        p50 = {side: statistics.median(o.rto for o in outs) for side, outs in outcomes.items()}
        ratio = f", mq/Apache RTO p50 {p50['mq'] / p50['apache']:.2f}"
    detail = "; ".join(f"{side} RTO " + " ".join(f"{o.rto:.2f}" for o in outs) for side, outs in outcomes.items())
    lost = ", ".join(f"{side} {sum(o.lost for o in outs)}" for side, outs in outcomes.items())
    whose = "" if args.brokers == "apache" else " (a set of mq's brokers)"
    print(f"controller_failover: after {FAULTS[args.fault].description}{whose}, p50/p99: " + "; ".join(parts)
          + f"{ratio} ({args.runs} runs each: {detail}; acknowledged lost: {lost})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
