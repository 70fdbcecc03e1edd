"""Helpers for tests against real processes: a name server with brokers, polling, one-off
requests and topic creation."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mqtools.remoting.client import RemotingClient
from mqtools.remoting.command import RemotingCommand
from support.mqproc import MqProcess, start_broker, start_namesrv

#: Every delay level is one second, so retries come back fast.
ONE_SECOND_LEVELS = " ".join(["1s"] * 18)


@dataclass
class Cluster:
    namesrv: MqProcess
    brokers: dict[str, MqProcess]
    workdir: Path

    @property
    def broker(self) -> MqProcess:
        """The broker of a one-broker cluster."""
        (only,) = self.brokers.values()
        return only


def broker_cluster(work: Path, names: Iterable[str], **props: str) -> Iterator[Cluster]:
    """One name server and a broker per name (mqproc.start_broker with `props`), all under
    `work`; what started is stopped when the generator ends, or when a later start fails."""
    namesrv = start_namesrv(work)
    brokers = {}
    try:
        for name in names:
            brokers[name] = start_broker(work, namesrv.addr, name, **props)
        yield Cluster(namesrv, brokers, work)
    finally:
        for proc in brokers.values():
            proc.stop()
        namesrv.stop()


def two_broker_cluster(work: Path) -> Iterator[Cluster]:
    """One name server and two brokers (broker-a, broker-b), stopped when the generator ends."""
    yield from broker_cluster(work, ("broker-a", "broker-b"), messageDelayLevel=ONE_SECOND_LEVELS,
                              brokerClusterName="ClientIT")


async def until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll `predicate` (plain or async) until it gives a true value, and return that value;
    fail with `what` after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        outcome = predicate()
        if inspect.isawaitable(outcome):
            outcome = await outcome
        if outcome:
            return outcome
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


async def call(addr: str, code: int, ext: dict[str, str] | None = None, body: bytes | None = None,
               timeout: float = 10.0) -> RemotingCommand:
    """One request on a connection of its own, closed afterwards."""
    client = RemotingClient()
    try:
        return await client.invoke(addr, RemotingCommand.request(code, ext or {}, body), timeout)
    finally:
        await client.close()


async def create_topic(cluster: Cluster, topic: str, queues: int = 4, *, order: bool = False,
                       message_type: str | None = None, timeout: float = 20) -> None:
    """Create the topic on every broker (MQAdmin), of RocketMQ 5's `message_type` where given (a 5.x proxy
    takes only that type's sends: FIFO, DELAY, TRANSACTION; NORMAL without it), then wait until the name
    server routes it to all."""
    from mqtools.client.admin import MQAdmin
    from mqtools.client.errors import MQBrokerError
    from mqtools.remoting.bodies import TopicConfig

    async with MQAdmin(cluster.namesrv.addr) as admin:
        for broker in cluster.brokers.values():
            attributes = {"message.type": message_type} if message_type else {}
            await admin.topics.create_topic(TopicConfig(topic, queues, queues, order=order, attributes=attributes),
                                            broker_addr=broker.addr)

        async def routed() -> bool:
            try:
                route = await admin.topics.topic_route(topic)
            except MQBrokerError:
                return False
            return sum(q.read_queue_nums for q in route.queue_datas) == queues * len(cluster.brokers)

        await until(routed, timeout, f"a route of {topic} on every broker")
