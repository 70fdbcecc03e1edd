"""`make demo`: bring up a local 2m-2s-sync cluster, send and consume through it, show HA.

The cluster's state (logs, stores, pids) lives under `.mq-state/demo` in the project, and
the cluster is left running at the end, with the command that stops it.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

from mqtools.client.admin import MQAdmin
from mqtools.client.errors import MQClientError
from mqtools.client.producer import Producer
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult, SendResult
from mqtools.common.loop import run as run_loop
from mqtools.common.message import Message, MessageExt
from mqtools.common.presentation import NA, cell

STATE_DIR = Path(".mq-state") / "demo"
TOPIC = "DemoTopic"
GROUP = "DemoConsumerGroup"
COUNT = 200
console = Console()


def mq(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mqtools.cli.main", *args], text=True, capture_output=True,
                          check=False)


def bring_up() -> str:
    """Restart the demo cluster from a clean stop and return its name-server address."""
    mq("cluster", "down", "--dir", str(STATE_DIR))
    with console.status("starting name server, 2 SYNC_MASTER brokers and 2 slaves ..."):
        up = mq("cluster", "up", "--preset", "2m-2s-sync", "--dir", str(STATE_DIR))
    if up.returncode != 0:
        console.print(up.stdout + up.stderr)
        raise SystemExit(f"mq cluster up failed with status {up.returncode}")
    print(up.stdout.rstrip())
    return next(line.split("=", 1)[1] for line in up.stdout.splitlines() if line.startswith("NAMESRV_ADDR="))


async def send_all(namesrv: str) -> list[SendResult]:
    async with Producer("DemoProducerGroup", namesrv=namesrv) as producer:
        return [await producer.send(Message(TOPIC, f"demo message {i}".encode(),
                                            properties={"TAGS": f"Tag{i % 3}", "KEYS": f"order-{i}"}))
                for i in range(COUNT)]


async def consume_all(namesrv: str, expected: set[bytes], timeout: float = 60.0) -> tuple[list[MessageExt], float]:
    got: list[MessageExt] = []
    done = asyncio.Event()

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        got.extend(msgs)
        if expected <= {m.body for m in got}:
            done.set()
        return ConsumeResult.CONSUME_SUCCESS

    consumer = PushConsumer(GROUP, namesrv=namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(TOPIC, "*").register_listener(listener)
    began = time.monotonic()
    async with consumer:
        await asyncio.wait_for(done.wait(), timeout)
    return got, time.monotonic() - began


async def ha_status(namesrv: str) -> Table:
    """One row per slave of each master, from MQAdmin's typed HA status."""
    table = Table(title="HA status (GET_BROKER_HA_STATUS on each master)")
    for column in ("broker", "master max offset", "slave", "slave ack offset", "diff bytes", "in sync"):
        table.add_column(column)
    async with MQAdmin(namesrv) as admin:
        for name, addr in (await admin.master_addrs()).items():
            try:
                ha = await admin.brokers.ha_status(addr)
            except MQClientError as exc:
                table.add_row(name, NA, NA, NA, NA, f"{NA} ({exc})")
                continue
            for slave in ha.slaves or [None]:
                if slave is None:
                    table.add_row(name, cell(ha.commitlog_max_offset), "no slave", NA, NA, NA)
                    continue
                table.add_row(name, cell(ha.commitlog_max_offset), slave.addr, cell(slave.ack_offset),
                              cell(slave.diff_bytes), cell(slave.in_sync))
    return table


async def run(namesrv: str) -> None:
    with console.status(f"sending {COUNT} messages (sync sends: SEND_OK means a slave has them too) ..."):
        results = await send_all(namesrv)
    statuses = Counter(r.status.value for r in results)
    per_broker = Counter(r.queue.broker_name for r in results)
    console.print(f"sent {COUNT} messages to {TOPIC}: {dict(statuses)}; per broker: {dict(per_broker)}")
    expected = {f"demo message {i}".encode() for i in range(COUNT)}
    with console.status(f"consuming with push consumer group {GROUP} ..."):
        got, seconds = await consume_all(namesrv, expected)
    tags = Counter(m.tags for m in got)
    console.print(f"consumed {len({m.body for m in got})}/{COUNT} distinct messages in {seconds:.2f}s; "
                  f"tags: {dict(sorted(tags.items()))}")
    console.print(await ha_status(namesrv))


ADMIN_TOUR = (("cluster", "list"), ("topic", "route", TOPIC), ("group", "progress", GROUP), ("ha", "status"))
DRILL = ("drill", "run", "kill-master", "--dir", str(STATE_DIR), "--duration", "5")


def admin_tour(namesrv: str) -> None:
    """The toolkit on the demo cluster: the same commands an operator would type."""
    for args in ADMIN_TOUR:
        console.rule(f"mq admin {' '.join(args)} -n {namesrv}")
        done = mq("admin", *args, "-n", namesrv)
        print((done.stdout + done.stderr).rstrip())
        if done.returncode != 0:
            raise SystemExit(f"mq admin {' '.join(args)} failed with status {done.returncode}")


def drill() -> None:
    """A failover drill on the demo cluster: SIGKILL broker-a's master under load, then the verdict.

    The drill restores the cluster (starts broker-a again) before it reports.
    """
    console.rule(f"mq admin {' '.join(DRILL)}")
    with console.status("drill: load, SIGKILL broker-a's master, keep the load going, check the history ..."):
        done = mq("admin", *DRILL)
    print((done.stdout + done.stderr).rstrip())
    if done.returncode != 0:
        raise SystemExit(f"the drill ended with status {done.returncode}")


def next_steps(namesrv: str) -> str:
    return "\n".join([
        "",
        "Try next (the cluster is still running):",
        f"  mq context add demo -n '{namesrv}' --dir {STATE_DIR}   (or export NAMESRV_ADDR='{namesrv}')",
        f"  mq admin topic status {TOPIC}",
        f"  mq admin msg key {TOPIC} order-7",
        f"  mq admin group connections {GROUP}",
        f"  mq admin offset reset {GROUP} {TOPIC} --to-time -5m --dry-run",
        "  mq admin cluster list -o json",
        "  mq admin ha ready broker-a                  (is it safe to stop broker-a's master now?)",
        f"  mq admin drill list; mq admin drill run restart-master --dir {STATE_DIR}",
        "  mq admin                      (every mqadmin command by its own name, e.g. mq admin topicStatus -t ...)",
        f"Stop it with: mq cluster down --dir {STATE_DIR}",
    ])


def main() -> None:
    namesrv = bring_up()
    run_loop(run(namesrv))
    status = mq("cluster", "status", "--dir", str(STATE_DIR))
    print(status.stdout.rstrip())
    admin_tour(namesrv)
    drill()
    print(next_steps(namesrv))


if __name__ == "__main__":
    main()
