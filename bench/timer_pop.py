"""RocketMQ 5's timer messages and POP consumption on Apache 5.5.0's broker and mq's, one after the other in
one run (issue 44's targets; Apache's broker is the baseline).

Each side gets its own name server and broker (ASYNC_MASTER, ASYNC_FLUSH, the timer wheel at its defaults:
1 s precision), Apache's first; a side's processes are stopped before the next starts.

  timer  --timers messages (1 KiB) whose TIMER_DELIVER_MS is spread evenly over the next --window seconds,
         sent by our Producer with 256 in flight: the enqueue rate (msgs/s); then every queue of the topic
         is read until all came out: per message, its lateness (the delivered message's store time minus
         the time it asked for; p50/p99/max from an HDR histogram, and p99 apart for the messages due
         before the last send was answered and for the rest), how many came out early (store time
         before the asked time: must be 0) or twice, and the broker's anonymous RSS growth over the case (MiB, RssAnon: the mapped files left out).
  pop    --pops messages (1 KiB) stored first, then --poppers POP loops of our PopConsumer (32 a pop, 60 s
         invisible) receive and acknowledge each one: receive+ack msgs/s over the whole drain.
  live   --waiters POP loops long-polling an empty topic (5 s), each a consumer of its own in one group, then
         --live messages (1 KiB) sent one after another, so that each arrives with POPs waiting for it: the
         delivery latency (a message's receipt minus its born time; p50/p99 from an HDR histogram) and the
         broker's CPU a message (user + system over the sends and their receipts). Where each arrival woke
         every waiting POP (and left its other waits behind), this case grew with the waiters and stalled the
         broker's loop at four.

Targets (README's Benchmarks): timer lateness p99 <= 1.0 s, none early, enqueue >= 1.0x Apache's; POP
receive+ack >= 1.0x Apache's. The live case has no target of its own: its figures are given against Apache's. The issue's full timer case is --timers 1000000 --window 600; the default is
a tenth of it over a minute.

Usage: .venv/bin/python bench/timer_pop.py [--timers 100000] [--window 60] [--pops 100000] [--poppers 4]
       [--live 3000] [--waiters 32] [--sides apache,mq]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "reference"))

import apache
import psutil
from benchsupport import memory, run_client
from hdrh.histogram import HdrHistogram
from support.mqproc import MqProcess, start_broker, start_namesrv

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.client.pop_consumer import PopConsumer
from mqtools.client.producer import Producer
from mqtools.client.pull_consumer import PullConsumer
from mqtools.client.types import PullStatus
from mqtools.common import properties as P
from mqtools.common.message import Message
from mqtools.remoting.assignment import PollingInfoRequestHeader, PollingInfoResponseHeader
from mqtools.remoting.bodies import TopicConfig
from mqtools.remoting.codes import RequestCode

CLUSTER, BROKER = "BenchT5", "broker-t5"
TIMER_TOPIC, POP_TOPIC, GROUP = "BenchTimer", "BenchPop", "CG_BENCH_POP"
LIVE_TOPIC, LIVE_GROUP = "BenchPopLive", "CG_BENCH_POP_LIVE"
LIVE_POLL_MS = 5_000
QUEUES = 8
BODY = b"x" * 1024
STORE = {"flushDiskType": "ASYNC_FLUSH", "mappedFileSizeCommitLog": str(1024 * 1024 * 1024)}
IN_FLIGHT = 256


def note(msg: str) -> None:
    print(f"[timer_pop {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@contextmanager
def apache_side(root: Path) -> Iterator[tuple[str, int]]:
    """Apache 5.5.0's name server and broker; (name server, broker pid), killed on exit."""
    namesrv = apache.start_namesrv(root, "apache-5")
    try:
        broker = apache.start_broker(root, namesrv.addr, "apache-5", name=BROKER, cluster=CLUSTER, **STORE)
        try:
            yield namesrv.addr, broker.pid
        finally:
            broker.kill()
    finally:
        namesrv.kill()


@contextmanager
def mq_side(root: Path) -> Iterator[tuple[str, int]]:
    procs: list[MqProcess] = []
    root.mkdir(parents=True, exist_ok=True)
    try:
        namesrv = start_namesrv(root)
        procs.append(namesrv)
        broker = start_broker(root, namesrv.addr, BROKER, brokerClusterName=CLUSTER, **STORE)
        procs.append(broker)
        yield namesrv.addr, broker.pid
    finally:
        for proc in reversed(procs):
            proc.stop()


def make_topics(namesrv: str) -> None:
    with SyncMQAdmin(namesrv) as admin:
        for topic in (TIMER_TOPIC, POP_TOPIC, LIVE_TOPIC):
            admin.topics.create_topic(TopicConfig(topic, read_queue_nums=QUEUES, write_queue_nums=QUEUES),
                                      cluster=CLUSTER)


async def send_all(namesrv: str, topic: str, count: int, props_of: Callable[[int], dict[str, str]],
                   ready: Callable[[], None] = lambda: None) -> float:
    """Send `count` messages in order from IN_FLIGHT senders; the seconds it took. `ready` runs once the
    producer has started. A fixed pool of senders, not a task per message: gathering 500,000 coroutines
    takes seconds before the first send, and timers due in those seconds were counted late."""
    async with Producer(f"PG_{topic}", namesrv=namesrv) as producer:
        ready()
        numbers = iter(range(count))

        async def sender() -> None:
            for i in numbers:
                await producer.send(Message(topic, BODY, properties=props_of(i)))

        began = time.monotonic()
        await asyncio.gather(*(sender() for _ in range(IN_FLIGHT)))
        return time.monotonic() - began


async def timer_case(namesrv: str, count: int, window: float) -> dict[str, Any]:
    step = window * 1000 / count
    due: list[int] = []

    def plan() -> None:
        start_ms = int(time.time() * 1000) + 2000
        due.extend(int(start_ms + i * step) for i in range(count))

    seconds = await send_all(namesrv, TIMER_TOPIC, count,
                             lambda i: {P.TIMER_DELIVER_MS: str(due[i]), P.KEYS: str(i)}, plan)
    sent_ms = int(time.time() * 1000)
    lateness = HdrHistogram(1, 3_600_000, 3)
    # where the lateness comes from: messages due while the senders still ran, and the rest
    during, after = HdrHistogram(1, 3_600_000, 3), HdrHistogram(1, 3_600_000, 3)
    seen: set[int] = set()
    early = twice = 0
    async with PullConsumer("CG_BENCH_TIMER", namesrv=namesrv) as reader:
        queues = await reader.fetch_queues(TIMER_TOPIC)
        offsets = dict.fromkeys(queues, 0)
        deadline = time.monotonic() + window + 120
        while len(seen) < count and time.monotonic() < deadline:
            found = False
            for mq in queues:
                # no long polling: Apache's broker answers a held pull on its 5 s check, past the client's wait
                result = await reader.pull(mq, "*", offsets[mq])
                if result.status is not PullStatus.FOUND:
                    continue
                found = True
                offsets[mq] = result.next_begin_offset
                for m in result.messages:
                    i = int(m.properties[P.KEYS])
                    if i in seen:
                        twice += 1
                        continue
                    seen.add(i)
                    late = m.store_timestamp - due[i]
                    early += late < 0
                    lateness.record_value(max(late, 1))
                    (during if due[i] <= sent_ms else after).record_value(max(late, 1))
            if not found:
                await asyncio.sleep(0.05)
    return {"enqueue_s": count / seconds, "delivered": len(seen), "early": early, "twice": twice,
            "p50_ms": lateness.get_value_at_percentile(50), "p99_ms": lateness.get_value_at_percentile(99),
            "max_ms": lateness.get_max_value(), "during_n": during.get_total_count(),
            "during_p99_ms": during.get_value_at_percentile(99) if during.get_total_count() else "n/a",
            "after_p99_ms": after.get_value_at_percentile(99) if after.get_total_count() else "n/a"}


async def pop_case(namesrv: str, count: int, poppers: int) -> dict[str, Any]:
    await send_all(namesrv, POP_TOPIC, count, lambda i: {})
    acked = 0
    async with PopConsumer(GROUP, namesrv=namesrv) as consumer:
        async def loop() -> None:
            nonlocal acked
            while acked < count:
                result = await consumer.pop(POP_TOPIC, 32, 60_000, 1000)
                for m in result.messages:
                    await consumer.ack(m)
                acked += len(result.messages)
                if not result.messages and acked >= count:
                    return

        began = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(loop() for _ in range(poppers))), timeout=count / 100 + 120)
        return {"pop_ack_s": acked / (time.monotonic() - began), "acked": acked}


async def waiting_pops(namesrv: str, count: int, timeout: float = 60.0) -> None:
    """Until `count` POPs of the live group wait on the broker (POLLING_INFO of queue -1, both brokers answer it)."""
    async with MQAdmin(namesrv) as admin:
        (data,) = (await admin.cluster_info()).broker_addr_table.values()
        header = PollingInfoRequestHeader(LIVE_GROUP, LIVE_TOPIC, -1).to_ext()
        deadline = time.monotonic() + timeout
        while True:
            resp = await admin.call(data.broker_addrs[0], RequestCode.POLLING_INFO, header)
            if PollingInfoResponseHeader.from_ext(resp.ext_fields).polling_num >= count:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{count} POPs did not all wait on the broker within {timeout:.0f} s")
            await asyncio.sleep(0.05)


def cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


async def live_case(namesrv: str, count: int, waiters: int, pid: int) -> dict[str, Any]:
    latency = HdrHistogram(1, 3_600_000, 3)
    received = 0
    everything = asyncio.Event()
    consumers = [await PopConsumer(LIVE_GROUP, namesrv=namesrv).start() for _ in range(waiters)]

    async def wait_and_take(consumer: PopConsumer) -> None:
        nonlocal received
        while not everything.is_set():
            result = await consumer.pop(LIVE_TOPIC, 32, 60_000, LIVE_POLL_MS)
            now_ms = int(time.time() * 1000)
            for m in result.messages:
                latency.record_value(max(now_ms - m.born_timestamp, 1))
                await consumer.ack(m)
            received += len(result.messages)
            if received >= count:
                everything.set()

    loops = [asyncio.create_task(wait_and_take(c)) for c in consumers]
    try:
        await waiting_pops(namesrv, waiters)
        cpu = cpu_seconds(pid)
        async with Producer("PG_BENCH_POP_LIVE", namesrv=namesrv) as producer:
            for _ in range(count):
                await producer.send(Message(LIVE_TOPIC, BODY))
        await asyncio.wait_for(everything.wait(), timeout=count / 100 + 60)
        cpu = cpu_seconds(pid) - cpu
    finally:
        everything.set()
        for task in loops:
            task.cancel()
        await asyncio.gather(*loops, return_exceptions=True)
        for consumer in consumers:
            await consumer.shutdown()
    return {"live_p50_ms": latency.get_value_at_percentile(50), "live_p99_ms": latency.get_value_at_percentile(99),
            "live_cpu_us": cpu / count * 1e6, "live_received": received}


def run_side(name: str, side: Any, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    with side(root / name) as (namesrv, pid):
        make_topics(namesrv)
        anon_before = memory(pid)["anon"]
        note(f"{name}: timer case ({args.timers} over {args.window:.0f} s)")
        timer = run_client(timer_case(namesrv, args.timers, args.window))
        timer["anon_growth_mib"] = memory(pid)["anon"] - anon_before
        note(f"{name}: pop case ({args.pops} messages, {args.poppers} poppers)")
        popped = run_client(pop_case(namesrv, args.pops, args.poppers))
        note(f"{name}: live case ({args.live} messages, {args.waiters} waiting POPs)")
        return {**timer, **popped, **run_client(live_case(namesrv, args.live, args.waiters, pid))}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timers", type=int, default=100_000)
    parser.add_argument("--window", type=float, default=60.0)
    parser.add_argument("--pops", type=int, default=100_000)
    parser.add_argument("--poppers", type=int, default=4)
    parser.add_argument("--live", type=int, default=3_000)
    parser.add_argument("--waiters", type=int, default=32)
    parser.add_argument("--sides", default="apache,mq")
    args = parser.parse_args()
    sides = {"apache": apache_side, "mq": mq_side}
    res: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="timer-pop-") as tmp:
        for name in args.sides.split(","):
            res[name] = run_side(name, sides[name], Path(tmp), args)
    parts = []
    for name, r in res.items():
        parts.append(f"{name}: timer enqueue {r['enqueue_s']:,.0f} msgs/s, delivered {r['delivered']}/{args.timers} "
                     f"(early {r['early']}, twice {r['twice']}), lateness p50 {r['p50_ms']} ms p99 {r['p99_ms']} ms "
                     f"max {r['max_ms']} ms (p99 of the {r['during_n']} due while sending {r['during_p99_ms']} ms, "
                     f"of the rest {r['after_p99_ms']} ms), anonymous RSS +{r['anon_growth_mib']:.0f} MiB; pop+ack {r['pop_ack_s']:,.0f} msgs/s; "
                     f"live ({args.waiters} waiting) delivery p50 {r['live_p50_ms']} ms p99 {r['live_p99_ms']} ms, "
                     f"broker CPU {r['live_cpu_us']:.0f} us a message")
    if {"apache", "mq"} <= res.keys():
        a, m = res["apache"], res["mq"]
        parts.append(f"mq/Apache: timer enqueue {m['enqueue_s'] / a['enqueue_s']:.2f}x, "
                     f"pop+ack {m['pop_ack_s'] / a['pop_ack_s']:.2f}x, live delivery p99 "
                     f"{m['live_p99_ms'] / a['live_p99_ms']:.2f}x, live broker CPU a message "
                     f"{m['live_cpu_us'] / a['live_cpu_us']:.2f}x")
    print(f"timer_pop ({args.timers} timers over {args.window:.0f} s, {args.pops} pops, {args.live} live) | "
          + " | ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
