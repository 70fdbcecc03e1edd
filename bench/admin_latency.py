"""The CLI's own cost: `mq admin` commands against the same calls made through MQAdmin in this run.

Starts a name server and a broker, creates 1,000 topics and 200 subscription groups, sends 200
messages to one topic and lets one of the groups consume them. Then, for `mq admin topic list`,
`cluster list` and `group progress`, it times the command as a user runs it (a new process, stdout a
pipe) and the same API calls in-process with a fresh MQAdmin each time (connections included), the
median of --runs each, and `mq --help`. Targets: CLI minus API <= 0.3 s per command; --help < 0.25 s.

Usage: .venv/bin/python bench/admin_latency.py [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.mqproc import start_broker, start_namesrv

from mqtools.client.admin import MQAdmin
from mqtools.client.producer import Producer
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult
from mqtools.common.message import Message
from mqtools.remoting.bodies import SubscriptionGroupConfig, TopicConfig

TOPICS = 1000
GROUPS = 200
TOPIC = "BenchTopic0"
GROUP = "BenchGroup0"
TARGET_OVERHEAD_S = 0.3
TARGET_HELP_S = 0.25


async def populate(namesrv: str, broker: str) -> None:
    async with MQAdmin(namesrv, timeout=30) as admin:
        for start in range(0, TOPICS, 50):
            await asyncio.gather(*(admin.topics.create_topic(TopicConfig(f"BenchTopic{i}", 4, 4), broker_addr=broker)
                                   for i in range(start, min(start + 50, TOPICS))))
        await asyncio.gather(*(admin.groups.create_subscription_group(SubscriptionGroupConfig(f"BenchGroup{i}"),
                                                               broker_addr=broker) for i in range(GROUPS)))
    async with Producer("bench_admin_producer", namesrv=namesrv) as producer:
        for i in range(200):
            await producer.send(Message(TOPIC, f"m{i}".encode()))
    got: list[int] = []
    done = asyncio.Event()

    def listener(msgs: list) -> ConsumeResult:
        got.extend(range(len(msgs)))
        if len(got) >= 200:
            done.set()
        return ConsumeResult.CONSUME_SUCCESS

    consumer = PushConsumer(GROUP, namesrv=namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(TOPIC).register_listener(listener)
    async with consumer:
        await asyncio.wait_for(done.wait(), 60)


def cli_seconds(args: list[str], runs: int) -> float:
    """Median wall time of `mq ARGS` after one warm-up run (which writes the bytecode cache, as any
    installed `mq` has it; PYTHONDONTWRITEBYTECODE is dropped so sandboxes measure the same)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    times = []
    for i in range(runs + 1):
        began = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "mqtools.cli.main", *args], capture_output=True, check=False,
                              env=env)
        if i:
            times.append(time.perf_counter() - began)
        if done.returncode != 0:
            raise SystemExit(f"mq {' '.join(args)} failed: {done.stderr.decode()}")
    return statistics.median(times)


def api_seconds(namesrv: str, call: Callable[[MQAdmin], Awaitable[object]], runs: int) -> float:
    async def once() -> float:
        began = time.perf_counter()
        async with MQAdmin(namesrv) as admin:
            await call(admin)
        return time.perf_counter() - began

    return statistics.median(asyncio.run(once()) for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        namesrv = start_namesrv(work)
        broker = start_broker(work, namesrv.addr, "broker-a")
        try:
            began = time.perf_counter()
            asyncio.run(populate(namesrv.addr, broker.addr))
            setup = time.perf_counter() - began
            cases: list[tuple[str, list[str], Callable[[MQAdmin], Awaitable[object]]]] = [
                ("topic list", ["admin", "topic", "list"], lambda a: a.topics.topic_list()),
                ("cluster list", ["admin", "cluster", "list"], lambda a: a.cluster.cluster_snapshot()),
                ("group progress", ["admin", "group", "progress", GROUP], lambda a: a.groups.consumer_progress(GROUP)),
            ]
            parts, worst = [], 0.0
            for name, args, call in cases:
                api = api_seconds(namesrv.addr, call, runs)
                cli = cli_seconds([*args, "-n", namesrv.addr], runs)
                worst = max(worst, cli - api)
                parts.append(f"{name} cli {cli:.3f}s api {api:.3f}s (+{cli - api:.3f}s)")
            help_s = cli_seconds(["--help"], runs * 2)
        finally:
            broker.stop()
            namesrv.stop()
    verdict = "met" if worst <= TARGET_OVERHEAD_S and help_s < TARGET_HELP_S else "missed"
    print(f"admin_latency ({TOPICS} topics, {GROUPS} groups, setup {setup:.1f}s): " + "; ".join(parts)
          + f"; mq --help {help_s:.3f}s; worst CLI overhead {worst:.3f}s "
          f"(targets <= {TARGET_OVERHEAD_S}s, help < {TARGET_HELP_S}s: {verdict})")


if __name__ == "__main__":
    main()
