"""Helpers for client tests: a two-broker cluster and polling/topic utilities."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mqproc import MqProcess, start_broker, start_namesrv

#: Every delay level is one second, so retries come back fast.
ONE_SECOND_LEVELS = " ".join(["1s"] * 18)


@dataclass
class Cluster:
    namesrv: MqProcess
    brokers: dict[str, MqProcess]
    workdir: Path


def two_broker_cluster(work: Path) -> Iterator[Cluster]:
    """One name server and two brokers (broker-a, broker-b), stopped when the generator ends."""
    namesrv = start_namesrv(work)
    brokers = {}
    try:
        for name in ("broker-a", "broker-b"):
            brokers[name] = start_broker(work, namesrv.addr, name, messageDelayLevel=ONE_SECOND_LEVELS,
                                         brokerClusterName="ClientIT")
        yield Cluster(namesrv, brokers, work)
    finally:
        for proc in brokers.values():
            proc.stop()
        namesrv.stop()


async def until(predicate: Callable[[], bool | Awaitable[bool]], timeout: float, what: str) -> None:
    """Poll `predicate` until true; fail with `what` after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        outcome = predicate()
        if not isinstance(outcome, bool):
            outcome = await outcome
        if outcome:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


async def create_topic(cluster: Cluster, topic: str, queues: int = 4, *, order: bool = False) -> None:
    """UPDATE_AND_CREATE_TOPIC on every broker, then wait until the name server routes it to all."""
    from mqtools.client.instance import ClientInstance
    from mqtools.remoting.codes import RequestCode, ResponseCode
    from mqtools.remoting.command import RemotingCommand
    from mqtools.remoting.headers import CreateTopicRequestHeader

    instance = ClientInstance(cluster.namesrv.addr)
    try:
        for broker in cluster.brokers.values():
            header = CreateTopicRequestHeader(topic, "TBW102", queues, queues, 6, "SINGLE_TAG", order=order)
            resp = await instance.invoke(broker.addr, RemotingCommand.request(
                RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext()))
            assert resp.code == ResponseCode.SUCCESS, resp.remark

        async def routed() -> bool:
            route = await instance.route(topic, refresh=True)
            return route is not None and len(route.subscribe) == queues * len(cluster.brokers)

        await until(routed, 20, f"a route of {topic} on every broker")
    finally:
        await instance.shutdown()
