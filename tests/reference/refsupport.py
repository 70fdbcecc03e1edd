"""Helpers shared by the reference tests: topics and groups made through mq's admin API on either side,
running a scenario on both sides, and reducing what a client saw to an outcome to compare."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apache import ApacheCluster
from javaclient import JavaRun, run_java
from support.presetcluster import PresetCluster, wait_for

from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.client.errors import MQClientError
from mqtools.client.sync import SyncProducer
from mqtools.common.message import Message
from mqtools.remoting.bodies import MessageQueue, SubscriptionGroupConfig, TopicConfig
from mqtools.remoting.errors import RemotingError

#: Every delay level one second on both brokers, so retries and delayed messages come back fast.
FAST_DELAY_LEVELS = " ".join(["1s"] * 18)
CLUSTER = "RefCluster"
QUEUES = 4

ACL_ACCOUNT = ("RocketMQRef", "ref-secret-1234")
ACL_CLUSTER = "AclCluster"

#: The same plain ACL file for both sides: one admin account, everything allowed with a valid signature.
PLAIN_ACL = f"""globalWhiteRemoteAddresses: []
accounts:
- accessKey: {ACL_ACCOUNT[0]}
  secretKey: '{ACL_ACCOUNT[1]}'
  whiteRemoteAddress:
  admin: true
  defaultTopicPerm: PUB|SUB
  defaultGroupPerm: PUB|SUB
"""

#: broker.properties both sides' brokers share: fast delay levels, the trace topic, and transaction
#: checks quick enough for a test (a half message is checked 3 s after it was stored, every second).
#: waitTimeMillsInSendQueue: a send queued longer is refused SYSTEM_BUSY by both brokers' fast failure, 200 ms by
#: default; beside the suite's other workers Apache's refused an async send after 363 ms (CI at fddd43a). The same
#: on both sides.
BROKER_PROPS = {"messageDelayLevel": FAST_DELAY_LEVELS, "traceTopicEnable": "true",
                "transactionTimeOut": "3000", "transactionCheckInterval": "1000", "waitTimeMillsInSendQueue": "1000"}


def make_topic(namesrv: str, topic: str, queues: int = QUEUES, *, order: bool = False,
               cluster: str = CLUSTER) -> None:
    """The topic on every master of `cluster`, created through the name server's cluster table."""
    with SyncMQAdmin(namesrv) as admin:
        admin.topics.create_topic(TopicConfig(topic, read_queue_nums=queues, write_queue_nums=queues, order=order),
                           cluster=cluster)


def wait_stored(namesrv: str, topic: str, count: int, timeout: float = 10.0) -> None:
    """Until the topic's queues hold `count` messages: Apache's broker answers SEND_OK before it dispatches a
    message to its consume queue and index (1 ms apart when idle; CI once read 3 of 4 sent at once)."""
    with SyncMQAdmin(namesrv) as admin:
        wait_for(lambda: sum(hi - lo for lo, hi in admin.queue_offsets.queue_bounds(topic).values()) == count, timeout,
                 f"{count} messages stored in {topic}")


def slaves_in_sync(namesrv: str, probe: str, brokers: list[str]) -> None:
    """Wait until each SYNC_MASTER of `brokers` has a slave that acknowledges: a SYNC send to a queue of
    `probe` (a topic on those masters) answers SLAVE_NOT_AVAILABLE until the master has a slave, and times
    out until that slave has reported its offset (Apache's HAClient connects and first reports up to 5 s
    after it starts; either master then waits for it, as Apache's does)."""
    def acked(producer: SyncProducer, broker: str) -> bool:
        try:
            result = producer.send(Message(probe, b"probe"), queue=MessageQueue(probe, broker, 0))
            return result.status.name == "SEND_OK"
        except (MQClientError, RemotingError):  # a pinned send does not wrap the transport's timeout
            return False

    with SyncProducer(name("PGPROBE"), namesrv=namesrv) as producer:
        for broker in brokers:
            wait_for(lambda b=broker: acked(producer, b), 40, f"a SYNC send to {broker} answered SEND_OK")


def make_group(namesrv: str, group: str, *, retries: int = 16, orderly: bool = False) -> None:
    with SyncMQAdmin(namesrv) as admin:
        admin.groups.create_subscription_group(
            SubscriptionGroupConfig(group, retry_max_times=retries, consume_message_orderly=orderly),
            cluster=CLUSTER)


def name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def on_both(pair: dict[str, str], scenario: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """Run `scenario(namesrv)` on Apache first, then on mq; their outcomes by side."""
    return {side: scenario(ns) for side, ns in pair.items()}


def assert_same(out: dict[str, Any]) -> None:
    """mq's outcome equals Apache's; the message names each differing item (sets: what each side lacks)."""
    diffs = []
    for key in sorted(out["apache"].keys() | out["mq"].keys()):
        a, m = out["apache"].get(key), out["mq"].get(key)
        if a == m:
            continue
        if isinstance(a, set) and isinstance(m, set):
            diffs.append(f"{key}: only Apache {sorted(a - m)}, only mq {sorted(m - a)}")
        else:
            diffs.append(f"{key}: Apache {a!r} / mq {m!r}")
    assert not diffs, "mq differs from Apache:\n" + "\n".join(diffs)


def sent_outcome(run: JavaRun, *, queues: bool = True) -> dict[str, Any]:
    """Send statuses, failures and, where the client's queue choice is deterministic (not with async
    sends, whose retries and completions interleave), how the sends spread over the queues (the counts:
    the round robin starts at a random queue)."""
    sent = run.of("sent")
    out = {"statuses": Counter(e["status"] for e in sent), "failed": len(run.of("send_failed"))}
    if queues:
        out["spread"] = sorted(Counter(e.get("queueId") for e in sent).values())
    return out


def consume_all(ns: str, topic: str, expect: int, *args: str, group: str | None = None,
                client: str = "harness") -> list[dict[str, Any]]:
    run = run_java("consume", ns, "--topic", topic, "--group", group or name("CG"), "--expect", str(expect),
                   "--timeout-s", "60", *args, client=client)
    return run.of("received")


@dataclass
class Clusters2m2s:
    """Both 2m-2s SYNC_MASTER clusters: Apache's JVMs by name, and mq's preset (its state dir and nodes)."""

    apache: ApacheCluster
    mq: PresetCluster

    @property
    def namesrvs(self) -> dict[str, str]:
        return {"apache": self.apache.addr, "mq": self.mq.namesrv}
