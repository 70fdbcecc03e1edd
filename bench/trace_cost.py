"""What message trace costs the send path: our Producer with trace=False and trace=True, one summary line.

Starts a real `mq namesrv` + `mq broker` (ASYNC_FLUSH, traceTopicEnable=true). One client process (bench/client_produce.py's driver) sends
1 KiB messages, sync with 64 in flight and async with 256 in flight, untraced and traced in turns (A, B,
A, B...), and keeps each side's best of --repeat runs; the traced producer also sends its trace
messages (one per 100 records) through the same broker, as it would in production. The ratio is traced
over untraced throughput. Target (issue "Transactional messages and message trace"): tracing costs at
most 10 %, ratio >= 0.90.

Usage: .venv/bin/python bench/trace_cost.py [--seconds 3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import broker_send
import client_produce
from benchsupport import best_of_ab, client_loop, namesrv_and_broker, run_client, run_processes, throughput


def _child(args: tuple, out: mp.Queue) -> None:
    namesrv, kind, inflight, seconds, trace = args
    out.put(run_client(client_produce.drive_producer(namesrv, kind, inflight, seconds, 1, False, trace)))


def run(namesrv: str, kind: str, inflight: int, seconds: float, trace: bool) -> dict:
    return throughput(run_processes(_child, (namesrv, kind, inflight, seconds, trace), 1, timeout=seconds + 60))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cases = {"sync64": ("send", 64), "async256": ("async", 256)}
    parts = []
    with namesrv_and_broker(broker_send.TOPIC, broker_send.QUEUES, traceTopicEnable="true") as (namesrv, _broker):
        for name, (kind, inflight) in cases.items():
            off, on = best_of_ab(lambda trace, k=kind, n=inflight: run(namesrv.addr, k, n, args.seconds, trace),
                                 args.repeat)
            parts.append(f"{name}: untraced {off['msgs_s']:,.0f} msgs/s p99 {off['p99_ms']:.2f} ms, traced "
                         f"{on['msgs_s']:,.0f} msgs/s p99 {on['p99_ms']:.2f} ms, ratio {on['msgs_s'] / off['msgs_s']:.2f}")
    print(f"trace_cost (best of {args.repeat}, client loop {client_loop()}) | " + " | ".join(parts)
          + " | target: ratio >= 0.90")


if __name__ == "__main__":
    main()
