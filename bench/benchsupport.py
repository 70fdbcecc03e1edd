"""What the broker/client benches share: a temp name server + broker, client processes, figures.

The benches import this from their own directory; it puts tests/ on sys.path for mqproc.

Client loops: every bench client (ours, the raw drivers and the peers') runs on mq's own event loop,
uvloop when installed, as mq's servers, commands and client loop threads do; MQ_BENCH_LOOP=asyncio runs
them all on asyncio's own loop instead. Both sides of a comparison are always on the same loop.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.mqproc import MqProcess, start_broker, start_namesrv

from mqtools.common.loop import loop_name
from mqtools.common.loop import run as run_loop
from mqtools.common.security import ClientSecurity
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand

T = TypeVar("T")

LOOP_ENV = "MQ_BENCH_LOOP"


def client_loop() -> str:
    """The loop bench clients run on (spawned client processes inherit the choice)."""
    return "asyncio" if os.environ.get(LOOP_ENV) == "asyncio" else loop_name()


def run_client(main: Coroutine[Any, Any, T]) -> T:
    """A bench client's coroutine on client_loop()."""
    return asyncio.run(main) if client_loop() == "asyncio" else run_loop(main)


async def create_topic(addr: str, topic: str, queues: int, security: ClientSecurity | None = None) -> None:
    """UPDATE_AND_CREATE_TOPIC on one broker (as an ACL admin with `security`); exit the bench when refused."""
    client = RemotingClient(security=security)
    ext = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queues), "writeQueueNums": str(queues),
           "perm": "6", "topicFilterType": "SINGLE_TAG"}
    resp = await client.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, ext), 10)
    await client.close()
    if resp.code != 0:
        raise SystemExit(f"cannot create {topic}: {resp.remark}")


@contextmanager
def namesrv_and_broker(topic: str, queues: int, **props: str) -> Iterator[tuple[MqProcess, MqProcess]]:
    """A name server and a broker "bench" (ASYNC_FLUSH, 1 GiB commitlog files, and `props`) in a
    temp directory, `topic` created on it and given a second to reach the name server; both are
    stopped on exit."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        namesrv = start_namesrv(work)
        try:
            broker = start_broker(work, namesrv.addr, "bench", **{"flushDiskType": "ASYNC_FLUSH",
                                  "mappedFileSizeCommitLog": str(1024 * 1024 * 1024), **props})
            try:
                asyncio.run(create_topic(broker.addr, topic, queues))
                time.sleep(1.0)
                yield namesrv, broker
            finally:
                broker.stop()
        finally:
            namesrv.stop()


def run_processes(target: Callable[[tuple, mp.Queue], None], args: tuple, n: int, timeout: float) -> list[dict]:
    """`n` spawned processes each running target(args, queue); the dict each put on the queue.

    One Python client saturates one core, so a bench splits its load over processes."""
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()
    procs = [ctx.Process(target=target, args=(args, out)) for _ in range(n)]
    for p in procs:
        p.start()
    results = [out.get(timeout=timeout) for _ in procs]
    for p in procs:
        p.join(10)
    return results


def throughput(results: list[dict]) -> dict[str, float]:
    """msgs/s over the processes' results ("msgs", "elapsed", "lat" in seconds) and latency
    percentiles in ms (0 when no latencies were taken)."""
    lat = sorted(x for r in results for x in r["lat"])
    msgs = sum(r["msgs"] for r in results)
    elapsed = max(r["elapsed"] for r in results)
    return {
        "msgs_s": msgs / elapsed,
        "p50_ms": statistics.median(lat) * 1000 if lat else 0.0,
        "p99_ms": lat[int(len(lat) * 0.99) - 1] * 1000 if lat else 0.0,
    }


def best_of_ab(run: Callable[[bool], dict], repeat: int) -> tuple[dict, dict]:
    """`run(False)` and `run(True)` in turns (A, B, A, B...), `repeat` times each; each side's run with the most
    msgs/s, A's first (turns, so a machine that slows down mid-run slows both sides)."""
    best: dict[bool, dict] = {}
    for _ in range(repeat):
        for side in (False, True):
            got = run(side)
            if side not in best or got["msgs_s"] > best[side]["msgs_s"]:
                best[side] = got
    return best[False], best[True]


def memory(pid: int) -> dict[str, float]:
    """The process's RSS and its anonymous part (RssAnon: without mapped file pages), in MiB."""
    rss = psutil.Process(pid).memory_info().rss / 2**20
    anon = rss
    with suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                anon = int(line.split()[1]) / 1024
    return {"rss": rss, "anon": anon}
