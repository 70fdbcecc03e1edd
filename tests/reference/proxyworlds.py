"""Four proxy worlds, shared by every module that holds `mq proxy` to Apache's rocketmq-proxy 5.5.0 with a gRPC
client (test_proxy_on_apache: the official Python client; test_java_grpc_client: the official Java client).

A world is a proxy in front of a cluster: Apache's proxy over Apache 5.5.0 (the oracle), `mq proxy` over mq,
`mq proxy` over Apache's broker (mixed-1) and Apache's proxy over mq's (mixed-2). conftest.py starts the four once
per session (`proxy_worlds`). A scenario runs in all four at once (one thread each, `Outcomes`) and reduces what the
client saw to an outcome free of message ids, times and addresses; each other world's outcome must equal Apache's
(`like_apache`), and a known deviation is a strict xfail naming it (`worlds_but`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apache
import pytest
from refsupport import CLUSTER, name
from support.mqproc import MqProcess, start_mq

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.remoting.bodies import TopicConfig

WORLDS = ("apache", "mq", "mixed-1", "mixed-2")
OTHERS = WORLDS[1:]

#: rmq-proxy.json keys both proxies get: receive may ask for 1 s of invisibility (Apache's floor is 10 s) and
#: a long poll may last 1 s (5 s), so a message left unacked returns soon and an empty receive is short; the
#: proxy tells the brokers of its clients' producer groups every second (20 s): until it has, Apache's broker
#: finds no one to ask about an open transaction, and after 15 checks (a second apart here) drops it.
PROXY_CONF = {"minInvisibleTimeMillsForRecv": 1000, "grpcClientConsumerMinLongPollingTimeoutMillis": 1000,
              "transactionHeartbeatPeriodSecond": 1}


@dataclass(frozen=True)
class World:
    """A proxy (its gRPC address) in front of a cluster (its name server)."""

    name: str
    proxy: str
    namesrv: str
    remoting: str
    """The proxy's remoting port (remotingListenPort), where tools ask about its gRPC clients."""

    def topic(self, prefix: str, kind: str, queues: int = 4) -> str:
        """A new topic of message type `kind` (Apache's `message.type` attribute) on the world's cluster."""
        topic = name(prefix)
        with SyncMQAdmin(self.namesrv) as admin:
            admin.topics.create_topic(TopicConfig(topic, read_queue_nums=queues, write_queue_nums=queues,
                                                  attributes={"+message.type": kind}), cluster=CLUSTER)
        return topic


def _mq_proxy_conf(path: Path, namesrv: str) -> Path:
    path.write_text(json.dumps({"rocketMQClusterName": CLUSTER, "namesrvAddr": namesrv, "proxyMode": "cluster",
                                "grpcServerPort": 0, "remotingListenPort": 0, **PROXY_CONF}))
    return path


def start_worlds(work: Path, apache5: str, mq_single: str) -> Iterator[dict[str, World]]:
    """The four proxies, started from the calling thread (a JVM dies with the thread that started it): Apache's two
    together, then mq's one after the other; all stopped when the generator is closed."""
    work.mkdir()
    started: list[apache.ApacheProcess | MqProcess] = []
    theirs: list[apache.ApacheProcess] = []
    try:
        out: dict[str, World] = {}
        for world, namesrv in (("apache", apache5), ("mixed-2", mq_single)):
            proc = apache.start_proxy(work, namesrv, name=f"proxy-{world}", cluster=CLUSTER, wait=False, **PROXY_CONF)
            started.append(proc)
            out[world] = World(world, proc.addr, namesrv, f"127.0.0.1:{proc.props['remotingListenPort']}")
            theirs.append(proc)
        for proc in theirs:
            apache.await_proxy(proc)
        for world, namesrv in (("mq", mq_single), ("mixed-1", apache5)):
            conf = _mq_proxy_conf(work / f"mq-proxy-{world}.json", namesrv)
            proc = start_mq(["proxy", "start", "-c", str(conf), "--host", "127.0.0.1"], timeout=60)
            started.append(proc)
            out[world] = World(world, proc.addr, namesrv, f"127.0.0.1:{proc.extra['remoting']}")
        yield {w: out[w] for w in WORLDS}
    finally:
        for proc in started:
            proc.kill()


Scenario = Callable[[World], dict[str, Any]]


class Outcomes:
    """Each scenario's outcome per world, run once (in all worlds at once) for the tests that compare them.

    `context` is entered around each run in its worker thread (the Python client needs its own event loop)."""

    def __init__(self, worlds: dict[str, World],
                 context: Callable[[], AbstractContextManager[Any]] = nullcontext) -> None:
        self.worlds = worlds
        self.context = context
        self._done: dict[str, dict[str, Any]] = {}

    def of(self, scenario: Scenario) -> dict[str, Any]:
        if scenario.__name__ not in self._done:
            with ThreadPoolExecutor(len(self.worlds)) as pool:
                futures = {w: pool.submit(self._run, scenario, world) for w, world in self.worlds.items()}
                self._done[scenario.__name__] = {w: f.result() for w, f in futures.items()}
        return self._done[scenario.__name__]

    def _run(self, scenario: Scenario, world: World) -> dict[str, Any]:
        """The scenario in a worker thread; an exception is the outcome (its type and message), so one world's
        failure does not hide the others'."""
        with self.context():
            try:
                return scenario(world)
            except Exception as exc:  # noqa: BLE001 - the outcome to compare
                return {"error": f"{type(exc).__name__}: {exc}"}


def like_apache(outcomes: Outcomes, scenario: Scenario, world: str, keys: Collection[str] | None = None) -> None:
    """`world`'s outcome of `scenario` equals Apache's (only its items `keys`, when given: a scenario whose outcome
    two tests share); the message names each differing item."""
    out = outcomes.of(scenario)
    oracle, seen = out["apache"], out[world]
    assert "error" not in oracle, f"the oracle failed: {oracle['error']}"
    assert "error" in seen or keys is None or set(keys) <= oracle.keys(), f"no such items: {keys}"
    compared = sorted(oracle.keys() | seen.keys()) if keys is None or "error" in seen else sorted(keys)
    diffs = [f"{k}: Apache {oracle.get(k)!r} / {world} {seen.get(k)!r}" for k in compared
             if oracle.get(k) != seen.get(k)]
    assert not diffs, f"{world} differs from Apache:\n" + "\n".join(diffs)


def worlds_but(**xfails: str) -> list[Any]:
    """OTHERS as parameters, those named (mixed_2= for mixed-2) marked strict xfail with the reason given."""
    return [pytest.param(w, marks=pytest.mark.xfail(strict=True, reason=xfails[w.replace("-", "_")]))
            if w.replace("-", "_") in xfails else w for w in OTHERS]
