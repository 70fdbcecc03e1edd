"""Failover under the official RocketMQ 5 Python client (rocketmq-python-client 5.1.2) sending and receiving
through `mq proxy`, on the SYNC_MASTER preset and (in make soak) on the controller preset, each with two proxies
(issue 45's failover proof).

The client is given both proxies (`a;b`, as a user gives a proxy fleet; gRPC then uses one and moves on
when it fails). One run, two faults, as the drills judge them:
- broker-a's master SIGKILLed while the client sends and while it holds messages it received and did not
  acknowledge: sends recover within the drills' RTO bound (on the controller preset, through a slave the controllers
  elect); the killed broker is started again, and in the end every acknowledged message is received and the
  unacknowledged ones come again with their delivery attempt counted;
- the proxy the client uses SIGKILLed: the client's sends move to the other one within the same bound (the
  preset's proxies answer routes with the client's own access points, useEndpointPortFromRequest), and nothing
  it had acknowledged is lost.

The proxies' shortest long poll is 1 s here (Apache's 5 s by default): the 5.1.2 SimpleConsumer picks a random
master queue for each receive (it builds a new round-robin selector with a random start every time), so once one
broker is drained, about half its receives wait out a long poll there, with Apache's proxy as with ours.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from rocketmq.v5.client import ClientConfiguration, Credentials
from rocketmq.v5.consumer import SimpleConsumer
from rocketmq.v5.model import FilterExpression
from rocketmq.v5.producer import Producer
from support.adminsupport import mq_here
from support.presetcluster import PresetCluster, preset_cluster, wait_for
from support.proxyclient import new_message

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.client.errors import MQClientError
from mqtools.common.exitcodes import EXIT_OK, EXIT_PARTIAL
from mqtools.drills.scenarios import DEFAULT_MAX_RTO
from mqtools.remoting.bodies import TopicConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

TOPIC = "PxFailover"
GROUP = "PxFailoverGroup"
HELD = 4
"""Messages of broker-a received and not acknowledged when its master dies (with those of broker-b beside)."""
INVISIBLE_S = 10
PACE_S = 0.02
"""Between sends: fifty a second show a gap to a few tens of milliseconds, and leave little to consume."""


#: The controller preset's run is a soak (make soak): the same faults in another deployment, the master's successor
#: elected by the controllers; the controller drills prove the election in make test, this the proxies beside it.
@pytest.fixture(scope="module", params=["2m-2s-sync", pytest.param("2m-2s-controller", marks=pytest.mark.soak)])
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PresetCluster]:
    with preset_cluster(tmp_path_factory.mktemp("proxy-failover"), request.param, "mappedFileSizeCommitLog=4194304",
                        proxies=2, proxy_props=("grpcClientConsumerMinLongPollingTimeoutMillis=1000",)) as running:
        with SyncMQAdmin(running.namesrv) as admin:
            # on every replica, as the drills make theirs: a slave then serves it before its metadata sync
            for data in admin.cluster_info().broker_addr_table.values():
                for addr in data.broker_addrs.values():
                    admin.topics.create_topic(TopicConfig(TOPIC, 4, 4), broker_addr=addr)
            wait_for(lambda: len(routed(admin)) == 2, 30, f"{TOPIC} on both masters")
        yield running


def routed(admin: SyncMQAdmin) -> set[str]:
    """The broker sets the name server routes TOPIC to (none while it has no route)."""
    try:
        return {q.broker_name for q in admin.topics.topic_route(TOPIC).queue_datas}
    except MQClientError:
        return set()


@dataclass
class Sends:
    """What the client was told about each send: acknowledged (with when) or failed (with why)."""

    acked: dict[str, float] = field(default_factory=dict)
    """Message id -> monotonic time the receipt came."""
    where: dict[str, str] = field(default_factory=dict)
    """Message id -> `broker.topic.queue@offset` its receipt named."""
    failed: list[tuple[float, str]] = field(default_factory=list)

    def failing_for(self, since: float, until: float) -> tuple[int, float]:
        """How many sends failed between `since` and `until`, and how long after `since` the last of them."""
        times = [t - since for t, _ in self.failed if since <= t < until]
        return len(times), max(times, default=0.0)

    def longest_gap(self, since: float) -> float:
        """The longest time after `since` without an acknowledged send: the client's RTO for a fault at `since`."""
        times = sorted(t for t in self.acked.values() if t >= since)
        assert times, f"no send was acknowledged after the fault; failures: {self.failed[-3:]}"
        return max(b - a for a, b in zip([since, *times], times, strict=False))


def send_while(producer: Producer, sends: Sends, fault: Callable[[], None], after_s: float) -> float:
    """Send one message after another; a second in, run `fault` in a thread, and go on for `after_s` seconds
    after it returned. Returns when the fault was started."""
    done = threading.Event()
    at: list[float] = []

    def run() -> None:
        at.append(time.monotonic())
        try:
            fault()
        finally:
            done.set()

    worker = threading.Thread(target=run, daemon=True)
    start_at = time.monotonic() + 1.0
    i = len(sends.acked) + len(sends.failed)
    end = None
    while end is None or time.monotonic() < end:
        if not at and time.monotonic() >= start_at:
            worker.start()
            while not at:
                time.sleep(0.001)
        if done.is_set() and end is None:
            end = time.monotonic() + after_s
        try:
            receipt = producer.send(new_message(TOPIC, f"fo-{i}".encode()))
            sends.acked[receipt.message_id] = time.monotonic()
            sends.where[receipt.message_id] = f"{receipt.message_queue}@{receipt.offset}"
        except Exception as exc:  # noqa: BLE001 - the client's errors are what the test counts
            sends.failed.append((time.monotonic(), repr(exc)[:200]))
        i += 1
        time.sleep(PACE_S)
    worker.join(30)
    return at[0]


def on_broker(received: dict, broker: str) -> list:
    """The messages whose receipt handle names `broker` (`... type broker queueId offset ...`)."""
    return [m for m in received.values() if m.receipt_handle.split(" ")[5] == broker]


def master_process(cluster: PresetCluster, broker: str) -> str:
    """The process name of `broker`'s master (in controller mode, whichever replica was elected)."""
    with SyncMQAdmin(cluster.namesrv) as admin:
        addr = admin.cluster_info().broker_addr_table[broker].master_addr()
    (name,) = [n for n in cluster.rows if n.startswith(broker) and cluster.addr(n) == addr]
    return name


def client_proxy(cluster: PresetCluster, proxies: list[str]) -> dict[str, str]:
    """Proxy process name -> the kinds of gRPC clients it lists for TOPIC/GROUP (`mq admin proxy clients`)."""
    remoting = {f"127.0.0.1:{cluster.rows[name]['remotingPort']}": name for name in proxies}
    args = [arg for addr in remoting for arg in ("-p", addr)]
    out = mq_here("admin", "proxy", "clients", "-n", cluster.namesrv, "-t", TOPIC, "-g", GROUP, *args, "-o", "json")
    assert out.returncode in (EXIT_OK, EXIT_PARTIAL), out.stdout + out.stderr  # partial: a proxy is down
    doc = json.loads(out.stdout)
    found: dict[str, str] = {}
    for client in doc["clients"]:
        found[remoting[client["proxy"]]] = found.get(remoting[client["proxy"]], "") + client["kind"][0]
    return found


def test_a_master_and_the_clients_proxy_killed_lose_nothing_acknowledged(cluster: PresetCluster) -> None:
    cluster.refresh()
    proxies = sorted(name for name in cluster.rows if name.startswith("proxy-"))
    endpoints = ";".join(f"127.0.0.1:{cluster.rows[name]['port']}" for name in proxies)
    config = ClientConfiguration(endpoints, Credentials(), request_timeout=5)
    producer = Producer(config, (TOPIC,))
    producer.startup()
    consumer = SimpleConsumer(config, GROUP, {TOPIC: FilterExpression()}, await_duration=2)
    consumer.startup()
    sends = Sends()
    try:
        for i in range(40):
            sends.acked[producer.send(new_message(TOPIC, f"before-{i}".encode())).message_id] = time.monotonic()
        held: dict = {}
        deadline = time.monotonic() + 30
        while len(on_broker(held, "broker-a")) < HELD and time.monotonic() < deadline:
            for m in consumer.receive(HELD, INVISIBLE_S):
                held[m.message_id] = m
        on_a = on_broker(held, "broker-a")
        assert len(on_a) >= HELD, f"received {len(held)}, {len(on_a)} of them from broker-a"
        master = master_process(cluster, "broker-a")
        master_killed = send_while(producer, sends, lambda: cluster.kill(master), 4.0)
        master_rto = sends.longest_gap(master_killed)
        master_failed = sends.failing_for(master_killed, time.monotonic())
        cluster.start(master)  # back before the second fault: the client's route refresh (30 s) finds it meanwhile

        users = wait_for(lambda: client_proxy(cluster, proxies), 30, "the proxies listing the clients")
        used = [name for name, kinds in users.items() if "P" in kinds]
        assert len(used) == 1, users
        proxy_killed = send_while(producer, sends, lambda: cluster.kill(used[0]), 4.0)
        proxy_rto = sends.longest_gap(proxy_killed)
        proxy_failed = sends.failing_for(proxy_killed, time.monotonic())
        # the other proxy serves the sends; the 5.1.2 client does not open its telemetry stream there again, so
        # that proxy does not list it among its producers (seen for 30 s)

        got: dict[str, int] = {}
        deadline = time.monotonic() + 90
        while not (set(sends.acked) | set(held)) <= set(got) and time.monotonic() < deadline:
            for m in consumer.receive(32, 20):
                got[m.message_id] = max(got.get(m.message_id, 0), m.delivery_attempt)
                consumer.ack(m)
        progress = mq_here("admin", "group", "progress", GROUP, "-n", cluster.namesrv).stdout
    finally:
        consumer.shutdown()
        producer.shutdown()
    lost = set(sends.acked) - set(got)
    print(f"\nsent {len(sends.acked)} acknowledged, {len(sends.failed)} failed; master killed: RTO {master_rto:.2f} s, "
          f"{master_failed[0]} failed within {master_failed[1]:.2f} s; proxy killed: RTO {proxy_rto:.2f} s, "
          f"{proxy_failed[0]} failed within {proxy_failed[1]:.2f} s; {len(on_a)} of {len(held)} held on broker-a")
    lost_at = sorted((sends.acked[m] - master_killed, sends.where.get(m, "?")) for m in lost)
    assert not lost, f"{len(lost)} acknowledged messages never received (s after the kill, where): {lost_at[:3]} " \
                     f"... {lost_at[-3:]}; progress {progress}"
    assert all(got[mid] >= 2 for mid in held), {mid: got.get(mid) for mid in held}
    assert master_rto <= DEFAULT_MAX_RTO, f"sends stopped {master_rto:.1f} s after the master's kill"
    assert proxy_rto <= DEFAULT_MAX_RTO, f"sends stopped {proxy_rto:.1f} s after the proxy's kill"
    logs = [Path(cluster.state) / name / f"{name}.log" for name in proxies]
    assert not any("Traceback" in log.read_text() for log in logs if log.exists())
