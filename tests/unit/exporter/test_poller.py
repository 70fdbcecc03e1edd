"""ExporterPoller's jobs against a stand-in admin API: what a poll reports when a broker does not answer."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from mqtools.client.errors import BrokerSystemError, RequestTimeoutError
from mqtools.exporter.poller import ExporterPoller


class Brokers:
    """broker_stats answers by address: a minute's TPS, a broker error (no counter yet), or no answer."""

    def __init__(self, by_addr: dict[str, Any]) -> None:
        self.by_addr = by_addr

    async def broker_stats(self, addr: str, stats_name: str, key: str) -> Any:
        answer = self.by_addr[addr]
        if isinstance(answer, Exception):
            raise answer
        return SimpleNamespace(stats_minute=SimpleNamespace(tps=answer))


def stats_poll(answer: Any) -> tuple[bool, list[str]]:
    """Run the stats job for one master: whether the poll counted as succeeded, and the series it left."""
    poller = ExporterPoller(SimpleNamespace(brokers=Brokers({"b:10911": answer})), 10.0)  # type: ignore[arg-type]

    async def run() -> None:
        await poller._run("stats:b:10911", lambda: poller._broker_stats("C", "b:10911", "broker-a"))

    asyncio.run(run())
    return poller.polls["stats:b:10911"][1], [s.name for s in poller.latest.get("stats:b:10911", [])]


def test_a_broker_that_answers_gives_its_tps() -> None:
    assert stats_poll(12.5) == (True, ["rocketmq_broker_tps", "rocketmq_broker_qps"])


def test_a_broker_without_the_counter_yet_leaves_the_series_out_and_the_poll_fine() -> None:
    assert stats_poll(BrokerSystemError(1, "no counter")) == (True, [])


def test_a_broker_that_does_not_answer_fails_the_poll() -> None:
    assert stats_poll(RequestTimeoutError("timed out")) == (False, [])


class Cluster:
    """cluster_snapshot answers from a list: a snapshot, or an error (the name servers down)."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers

    async def cluster_snapshot(self, runtime: bool) -> Any:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_with_the_name_servers_down_the_shape_is_not_known_and_the_brokers_are_still_asked() -> None:
    """Until stop 106 a round that could not read the cluster's shape returned at once: every series kept its last
    value for as long as the name servers were down, the heartbeat ages frozen and the polls' own figures fine."""
    from mqtools.client.admin.models.brokers import BrokerRow, ClusterSnapshot

    snapshot = ClusterSnapshot(["ns:9876"], {"C": ["broker-a"]}, [BrokerRow("C", "broker-a", 0, "b:10911")], True)
    admin = SimpleNamespace(cluster=Cluster([snapshot, RequestTimeoutError("no name server answered")]))
    poller = ExporterPoller(admin, 10.0)  # type: ignore[arg-type]
    launched: list[str] = []
    poller._launch = lambda key, job: launched.append(key)  # type: ignore[method-assign]
    asyncio.run(poller.round())
    assert poller.polls["cluster"][1] and "cluster" in poller.latest
    launched.clear()
    asyncio.run(poller.round())
    assert poller.polls["cluster"][1] is False and "cluster" not in poller.latest  # heartbeat ages not known
    assert "runtime:b:10911" in launched and "stats:b:10911" in launched  # the brokers answer for themselves
