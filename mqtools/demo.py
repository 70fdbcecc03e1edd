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

from mqtools.client.instance import ClientInstance
from mqtools.client.producer import Producer
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult, SendResult
from mqtools.common.message import Message, MessageExt
from mqtools.remoting import fastjson
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand

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
    table = Table(title="HA status (GET_BROKER_HA_STATUS on each master)")
    for column in ("broker", "master max offset", "slave", "slave ack offset", "diff bytes", "in sync"):
        table.add_column(column)
    instance = ClientInstance(namesrv)
    try:
        route = await instance.route(TOPIC, refresh=True)
        for name in route.brokers if route else []:
            addr = instance.broker_addr(name, any_node=False)
            resp = await instance.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_HA_STATUS))
            if resp.code != ResponseCode.SUCCESS or not resp.body:
                table.add_row(name, "n/a", "n/a", "n/a", "n/a", "n/a")
                continue
            info = fastjson.loads(resp.body)
            for conn in info.get("haConnectionInfo") or [{}]:
                table.add_row(name, str(info.get("masterCommitLogMaxOffset")), str(conn.get("addr", "-")),
                              str(conn.get("slaveAckOffset", "-")), str(conn.get("diff", "-")),
                              str(conn.get("inSync", "-")))
    finally:
        await instance.shutdown()
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


def main() -> None:
    namesrv = bring_up()
    asyncio.run(run(namesrv))
    status = mq("cluster", "status", "--dir", str(STATE_DIR))
    print(status.stdout.rstrip())
    console.print(f"\nThe cluster is still running. Stop it with: mq cluster down --dir {STATE_DIR}")


if __name__ == "__main__":
    main()
