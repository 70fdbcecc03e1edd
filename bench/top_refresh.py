"""`mq top` refresh benchmark on a local cluster (2m-2s-async) with 1,000 topics and 200 groups.

Measures, in the same run and against the same cluster:
- bare: the MQAdmin calls that give a view's data, run concurrently on one MQAdmin (cluster snapshot,
  each broker's runtime, each master's HA status, the name-server probe, and the view's own call:
  topic_overview for the topics view, group_list + group_summaries for the groups view);
- tui: one refresh round of the app on that view, from the start of the round to the table redrawn
  with its rows (the poller's thread, outcomes handed to the UI, the 1,000-row table updated);
- keys: key-to-screen latency while rounds run: a key event handed to the app as the terminal driver
  does, until the app writes the screen update that shows the cursor moved.
Targets: a round <= 1.5x the bare calls; key latency p99 under 100 ms while refreshing.

Usage: .venv/bin/python bench/top_refresh.py [--topics 1000] [--groups 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from textual import events

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.ports import random_base_port

from mqtools.client.admin import MQAdmin
from mqtools.remoting.bodies import SubscriptionGroupConfig, TopicConfig
from mqtools.tui.app import TopApp
from mqtools.tui.poller import Poller, tune_process

CLUSTER = "DefaultCluster"


def mq(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "mqtools.cli.main", *args], capture_output=True, text=True,
                          check=False, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"mq {' '.join(args)} failed: {done.stdout}{done.stderr}")
    return done.stdout


async def populate(namesrv: str, topics: int, groups: int) -> None:
    gate = asyncio.Semaphore(16)
    async with MQAdmin(namesrv, timeout=30) as admin:
        async def one(make):  # type: ignore[no-untyped-def]
            async with gate:
                await make(admin)

        await asyncio.gather(*(one(lambda a, i=i: a.topics.create_topic(TopicConfig(f"BenchTopic{i:04d}", 4, 4),
                                                                  cluster=CLUSTER)) for i in range(topics)))
        await asyncio.gather(*(one(lambda a, i=i: a.groups.create_subscription_group(
            SubscriptionGroupConfig(f"BenchGroup{i:03d}"), cluster=CLUSTER)) for i in range(groups)))


async def bare_round(admin: MQAdmin, view: str) -> float:
    """The same data as a round of `view`, straight from MQAdmin."""
    began = time.perf_counter()

    async def brokers() -> None:
        snap = await admin.cluster.cluster_snapshot(runtime=False)
        await asyncio.gather(*(admin.brokers.broker_runtime_info(b.addr) for b in snap.brokers),
                             *(admin.brokers.ha_status(b.addr) for b in snap.masters()))

    async def groups() -> None:
        names = [e.group for e in (await admin.groups.group_list()).entries if not e.system]
        await admin.overview.group_summaries(names)

    await asyncio.gather(brokers(), admin.namesrv_probes.namesrv_probe(), admin.topic_views.topic_overview() if view == "topics" else groups())
    return time.perf_counter() - began


async def measure(namesrv: str, topics: int, rounds: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    tune_process()  # what the TUI's process runs with, for the bare calls too
    async with MQAdmin(namesrv, timeout=30) as admin:
        await bare_round(admin, "topics")  # connections and routes warm
        for view in ("topics", "groups"):
            figures[f"bare_{view}"] = statistics.median([await bare_round(admin, view) for _ in range(rounds)])
    poller = Poller(namesrv, timeout=30)
    # every round is started by hand here: the interval is only the clock tick of ages
    app = TopApp(poller=poller, namesrv=poller.namesrv_addrs, refresh=3600, view="topics")
    latencies: list[float] = []
    async with app.run_test(size=(180, 50)) as pilot:
        while len(app.current_rows) < topics:
            await pilot.pause(0.1)
        for view in ("topics", "groups"):
            await pilot.press("colon", *view, "enter")
            await app._round()
            walls = []
            for _ in range(rounds):
                began = time.perf_counter()
                await app._round()
                walls.append(time.perf_counter() - began)
            figures[f"tui_{view}"] = statistics.median(walls)
        await pilot.press("colon", *"topics", "enter")
        await app._round()
        table = app.screen.query_one("#table")
        shown: list[tuple[float, int]] = []  # (when the app wrote a screen update, cursor row then)
        display = app._display

        def spy(screen: object, renderable: object) -> None:
            display(screen, renderable)  # type: ignore[arg-type]
            shown.append((time.perf_counter(), table.cursor_row))

        app._display = spy  # type: ignore[method-assign]
        for _ in range(rounds):
            task = asyncio.ensure_future(app._round())
            key = "down"
            while not task.done():
                wanted = table.cursor_row + (1 if key == "down" else -1)
                began = time.perf_counter()
                app._driver.send_message(events.Key(key, None))  # as a terminal's key arrives
                while not any(t >= began and row == wanted for t, row in shown):
                    await asyncio.sleep(0.0005)
                latencies.append(next(t for t, row in shown if t >= began and row == wanted) - began)
                shown.clear()
                key = "up" if key == "down" else "down"
                await asyncio.sleep(0.01)
            await task
    latencies.sort()
    figures["keys"] = len(latencies)
    figures["key_p50_ms"] = latencies[len(latencies) // 2] * 1000
    figures["key_p99_ms"] = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
    figures["key_max_ms"] = latencies[-1] * 1000
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        out = mq("cluster", "up", "--preset", "2m-2s-async", "--dir", str(state),
                 "--base-port", str(random_base_port()))
        namesrv = next(line.split("=", 1)[1].strip() for line in out.splitlines() if "NAMESRV_ADDR=" in line)
        try:
            began = time.perf_counter()
            asyncio.run(populate(namesrv, args.topics, args.groups))
            setup = time.perf_counter() - began
            time.sleep(1.0)
            f = asyncio.run(measure(namesrv, args.topics, args.rounds))
        finally:
            mq("cluster", "down", "--dir", str(state), "--grace", "5")
    print(f"top_refresh topics={args.topics} groups={args.groups} (setup {setup:.0f}s): "
          f"topics round tui {f['tui_topics'] * 1000:.0f} ms vs bare {f['bare_topics'] * 1000:.0f} ms "
          f"(x{f['tui_topics'] / f['bare_topics']:.2f}); groups round tui {f['tui_groups'] * 1000:.0f} ms vs bare "
          f"{f['bare_groups'] * 1000:.0f} ms (x{f['tui_groups'] / f['bare_groups']:.2f}); key-to-screen during "
          f"refresh p50 {f['key_p50_ms']:.1f} ms p99 {f['key_p99_ms']:.1f} ms max {f['key_max_ms']:.1f} ms "
          f"({f['keys']:.0f} keys)")


if __name__ == "__main__":
    main()
