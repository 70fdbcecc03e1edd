"""Our PushConsumer against our broker, next to raw PULL_MESSAGE requests; one summary line.

Starts a real `mq namesrv` + `mq broker`, fills the bench topic with 1 KiB messages through
raw batch sends, then measures in the same run: bench/broker_send.py's raw pull driver
(hand-built PULL_MESSAGE, messages counted, not decoded) and a PushConsumer with a no-op
listener reading the same backlog from the first offset (decoding every message). Each side
runs --repeat times (a new consumer group each time) and the best of each is compared.

Usage: .venv/bin/python bench/client_consume.py [--seconds 3] [--repeat 3]
Target (issue 14): push consumer >= 0.5x raw pull.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import broker_send
from benchsupport import client_loop, namesrv_and_broker, run_client

from mqtools.client.push_consumer import PushConsumer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult
from mqtools.common.message import MessageExt


async def consume_backlog(namesrv: str, total: int, timeout: float, group: str = "CG_BENCH_PUSH") -> float:
    """Seconds the push consumer of `group` (from the first offset) needs to see `total` messages."""
    seen = 0
    done = asyncio.Event()

    async def listener(msgs: list[MessageExt]) -> ConsumeResult:
        nonlocal seen
        seen += len(msgs)
        if seen >= total:
            done.set()
        return ConsumeResult.CONSUME_SUCCESS

    consumer = PushConsumer(group, namesrv=namesrv, pull_batch_size=32, consume_concurrency=64,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(broker_send.TOPIC).register_listener(listener)
    t0 = time.perf_counter()
    async with consumer:
        await asyncio.wait_for(done.wait(), timeout)
        elapsed = time.perf_counter() - t0
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with namesrv_and_broker(broker_send.TOPIC, broker_send.QUEUES) as (namesrv, broker):
        filled = broker_send.run_case(broker.addr, "batch", 8, args.seconds, 32, 1)
        total = int(filled["msgs_s"] * args.seconds * 0.95)
        raw = max(broker_send.run_case(broker.addr, "pull", broker_send.QUEUES, args.seconds, 32, 1)["msgs_s"]
                  for _ in range(args.repeat))
        elapsed = min(run_client(consume_backlog(namesrv.addr, total, 120, f"CG_BENCH_PUSH_{i}"))
                      for i in range(args.repeat))
    ours = total / elapsed
    print(f"client_consume (client loop {client_loop()}) | push consumer: {ours:,.0f} msgs/s ({total:,} msgs in {elapsed:.2f} s, best of "
          f"{args.repeat}) | raw pull {raw:,.0f} msgs/s | ratio {ours / raw:.2f}")


if __name__ == "__main__":
    main()
