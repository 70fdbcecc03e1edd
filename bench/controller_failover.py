"""Write RTO of a broker set after a SIGKILL of its master: under Apache's controller and under mq's.

The same broker set each time: two Apache RocketMQ 5.5.0 brokers in controller mode (allAckInSyncStateSet,
the second in the SyncStateSet before the kill) behind an mq name server, first under Apache 5.5.0's own
controller (DLedger, one node), then under `mq controller` (one node), one run after the other, each on
fresh processes and stores. Our Producer sends one SYNC message at a time; 50 acks in, the master is
SIGKILLed, and a failed send refreshes the route and tries again at once, so what is measured is the
servers' part: the controller noticing the death and electing, the new master taking over and registering.
RTO is the time from the kill to the first acknowledged send after it. Also counted: acknowledged
messages missing afterwards (read back by Apache's Java consumer).

`--fault pause` sends SIGSTOP instead: the master's connections stay open and only its heartbeats stop,
so the controller finds it by the broker's heartbeat timeout (controllerHeartBeatTimeoutMills, 10 s).

Prints one summary line: the RTO's p50 and p99 per controller, and mq/Apache at p50.

Usage: .venv/bin/python bench/controller_failover.py [--runs 3] [--fault kill|pause]
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
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "reference"))

import apache
from controllerworld import CLUSTER, apache_controller, form_set, master_and_slave, send_through_a_kill
from fetch import FETCH_COMMAND, SETS
from refsupport import consume_all, make_topic, name
from support.mqproc import start_mq, start_namesrv

SIGNALS = {"kill": signal.SIGKILL, "pause": signal.SIGSTOP}
SIGNAL_NAMES = {"kill": "SIGKILL", "pause": "SIGSTOP"}


def note(msg: str) -> None:
    print(f"[controller_failover {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


async def one_run(root: Path, side: str, run: int, sig: int) -> tuple[float, int]:
    """(RTO seconds, acknowledged messages lost) of one fault under `side`'s controller."""
    work = root / f"{side}-{run}"
    work.mkdir(parents=True)
    with ExitStack() as stack:  # what started is stopped, also when a later start fails
        namesrv = start_namesrv(work)
        stack.callback(namesrv.stop)
        if side == "apache":
            ctl = apache_controller(root, f"{side}-{run}-controller")
            stack.callback(ctl.kill)
        else:
            mq_ctl = start_mq(["controller", "start", "--listen-port", "0", "--store-dir", str(work / "ctl")])
            ctl = mq_ctl
            stack.callback(mq_ctl.stop)
        brokers: list[apache.ApacheProcess] = []
        stack.callback(lambda: [broker.kill() for broker in brokers])
        brokers += await form_set(root, namesrv.addr, ctl.addr, f"{side}-{run}")
        topic = name("CTLBENCH")
        make_topic(namesrv.addr, topic, cluster=CLUSTER)
        master, _slave = await master_and_slave(namesrv.addr, brokers, topic)
        acked, rto = await send_through_a_kill(namesrv.addr, topic, master, sig=sig)
        master.kill()  # a paused one too: its successor must be the only master the consumer reads
        got = {e["body"] for e in consume_all(namesrv.addr, topic, len(acked))}
        return rto, len(set(acked) - got)

def nearest_rank(values: list[float], q: float) -> float:
    """The q-quantile by nearest rank (with 20 runs, p99 is the slowest)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="faults per controller")
    parser.add_argument("--fault", choices=("kill", "pause"), default="kill",
                        help="kill: SIGKILL (connections close at once); pause: SIGSTOP (only heartbeats stop, "
                             "found by controllerHeartBeatTimeoutMills, 10 s)")
    args = parser.parse_args()
    for key in ("apache-5", "harness"):
        if not SETS[key].ready():
            print(f"controller_failover: {SETS[key].name} is missing; run `{FETCH_COMMAND}` first", file=sys.stderr)
            return 2
    figures: dict[str, list[float]] = {"apache": [], "mq": []}
    lost = {"apache": 0, "mq": 0}
    with tempfile.TemporaryDirectory(prefix="ctl-failover-") as tmp:
        try:
            for side in ("apache", "mq"):
                for run in range(args.runs):
                    rto, missing = asyncio.run(one_run(Path(tmp), side, run, SIGNALS[args.fault]))
                    note(f"{side} run {run + 1}: RTO {rto:.2f} s, {missing} acknowledged lost")
                    figures[side].append(rto)
                    lost[side] += missing
        finally:
            apache.kill_all()
    med = {side: statistics.median(values) for side, values in figures.items()}
    p99 = {side: nearest_rank(values, 0.99) for side, values in figures.items()}
    detail = "; ".join(f"{side} " + " ".join(f"{v:.2f}" for v in values) for side, values in figures.items())
    print(f"controller_failover: write RTO after a master {SIGNAL_NAMES[args.fault]}, p50/p99: Apache's controller "
          f"{med['apache']:.2f}/{p99['apache']:.2f} s, mq's {med['mq']:.2f}/{p99['mq']:.2f} s, mq/Apache p50 "
          f"{med['mq'] / med['apache']:.2f} ({args.runs} runs each: {detail}; "
          f"acknowledged lost: apache {lost['apache']}, mq {lost['mq']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
