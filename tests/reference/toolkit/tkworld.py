"""The toolkit's world on one side: the same topics, groups, live consumer and backlog, made by Apache's Java
client, on Apache's 2m-2s SYNC cluster and on mq's.

Topic TkTopic (4 queues on each master) holds SENT + LAGGING keyed, tagged messages; group TkLive is a
Java push consumer that keeps running and has consumed them all; group TkLag consumed the first SENT
and stopped, so it lags by LAGGING; a KV entry. Figures then differ between the sides only where they
legitimately may (addresses, times, ids, how the sends spread over the queues).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from javaclient import JavaClient, run_java
from refsupport import CLUSTER, make_topic

from mqtools.client.admin.models.configs import SubscriptionGroupConfig
from mqtools.client.admin.sync import SyncMQAdmin

TOPIC = "TkTopic"
LIVE = "TkLive"
LAG = "TkLag"
PRODUCERS = "TkProducers"
SENT = 40
LAGGING = 12
KV_NAMESPACE = "TK_NS"


@dataclass
class World:
    """One side's name server and what the toolkit tests look at on it."""

    side: str
    namesrv: str
    brokers: dict[str, str]
    """Broker name -> master address."""
    msg_id: str
    """A message's offset message id (what queryMsgById takes)."""
    unique_key: str
    key: str
    consumer: JavaClient
    sent: list[dict] = field(default_factory=list)

    @property
    def values(self) -> dict[str, str]:
        """What catalogue templates take: {ns}, {addr} (broker-a's master), {cluster}, {msg}, {uniq}."""
        return {"ns": self.namesrv, "addr": self.brokers["broker-a"], "cluster": CLUSTER, "msg": self.msg_id,
                "uniq": self.unique_key}


def produce(namesrv: str, count: int, start: int = 0) -> list[dict]:
    run = run_java("produce", namesrv, "--topic", TOPIC, "--group", PRODUCERS, "--count", str(count),
                   "--tag", "TagA", "--keys-prefix", f"tk-{start}-")
    assert run.done["sent"] == count, run.describe()
    return run.of("sent")


def make_world(side: str, namesrv: str) -> World:
    make_topic(namesrv, TOPIC)
    with SyncMQAdmin(namesrv) as admin:
        for group in (LIVE, LAG):
            admin.create_subscription_group(SubscriptionGroupConfig(group), cluster=CLUSTER)
        admin.put_kv(KV_NAMESPACE, "k1", "v1")
        brokers = {name: data.master_addr() for name, data in sorted(admin.cluster_info().broker_addr_table.items())}
    sent = produce(namesrv, SENT)
    run_java("consume", namesrv, "--topic", TOPIC, "--group", LAG, "--expect", str(SENT), "--timeout-s", "60")
    consumer = JavaClient("consume", namesrv, "--topic", TOPIC, "--group", LIVE, "--expect", "0",
                          "--timeout-s", "900", "--quiet")
    consumer.wait_for(lambda events: any(e.get("event") == "started" for e in events), 60, "the live consumer")
    sent += produce(namesrv, LAGGING, SENT)
    settled(namesrv)
    first = sent[0]
    return World(side, namesrv, brokers, first["offsetMsgId"], first["msgId"], "tk-0-0", consumer, sent)


def settled(namesrv: str, timeout: float = 30.0) -> None:
    """Until the live group has committed every message (the Java consumer commits every 5 s), so both
    sides show the same lag: LAGGING for TkLag, none for TkLive."""
    deadline = time.monotonic() + timeout
    with SyncMQAdmin(namesrv) as admin:
        while admin.consumer_progress(LIVE).total_diff != 0:
            assert time.monotonic() < deadline, f"{LIVE} never caught up on {namesrv}"
            time.sleep(0.2)
