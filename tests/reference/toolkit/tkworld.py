"""The toolkit's world on one side: the same topics, groups, live consumer and backlog, made by Apache's Java
client, on Apache's 2m-2s SYNC cluster and on mq's.

Topic TkTopic (4 queues on each master) holds SENT + LAGGING keyed, tagged messages; group TkLive is a
Java push consumer that keeps running and has consumed them all (it prints each delivery, so a test can
see redeliveries); group TkLag consumed the first SENT and stopped, so it lags by LAGGING; a KV entry. Figures then differ between the sides only where they
legitimately may (addresses, times, ids, how the sends spread over the queues).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from javaclient import JavaClient, run_java
from refsupport import CLUSTER, make_topic

from mqtools.client.admin.models.configs import SubscriptionGroupConfig
from mqtools.client.admin.sync import SyncMQAdmin
from mqtools.client.sync import SyncPullConsumer

TOPIC = "TkTopic"
LIVE = "TkLive"
LAG = "TkLag"
PRODUCERS = "TkProducers"
SENT = 40
LAGGING = 12
KV_NAMESPACE = "TK_NS"
LIVE_LIFETIME_S = 4 * 3600
"""The live consumer ends when the session closes its stdin; this bound only stops an orphan. It was 900 s,
which the reference phase outgrew (CI at 373f07f, 44 min): TkLive's Java consumer shut itself down mid-session
and the tests after that found no member ("TkLive's consumer never registered", `members 0`)."""


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
    lagging_since_ms: int
    """Store time of the first of the LAGGING messages: a reset to it moves a group back by LAGGING."""
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
            admin.groups.create_subscription_group(SubscriptionGroupConfig(group), cluster=CLUSTER)
        admin.namesrv.put_kv(KV_NAMESPACE, "k1", "v1")
        brokers = {name: data.master_addr() for name, data in sorted(admin.cluster_info().broker_addr_table.items())}
    sent = produce(namesrv, SENT)
    run_java("consume", namesrv, "--topic", TOPIC, "--group", LAG, "--expect", str(SENT), "--timeout-s", "60")
    commit_to_end(namesrv, LAG)
    consumer = JavaClient("consume", namesrv, "--topic", TOPIC, "--group", LIVE, "--expect", "0",
                          "--timeout-s", str(LIVE_LIFETIME_S))
    consumer.wait_for(lambda events: any(e.get("event") == "started" for e in events), 60, "the live consumer")
    sent += produce(namesrv, LAGGING, SENT)
    lagging = {f"tk-{SENT}-{i}" for i in range(LAGGING)}

    def all_lagging(events: list[dict]) -> list[dict]:
        """The live consumer's deliveries of the lagging messages, once it has every one (its committed lag
        alone can read 0 before its first commit of a queue)."""
        hits = [e for e in events if e.get("event") == "received" and e.get("keys") in lagging]
        return hits if {e["keys"] for e in hits} == lagging else []

    got = consumer.wait_for(all_lagging, 60, "the live consumer's lagging messages")
    settled(namesrv)
    lagging_since = min(e["storeTimestamp"] for e in got)
    first = sent[0]
    return World(side, namesrv, brokers, first["offsetMsgId"], first["msgId"], "tk-0-0", consumer, lagging_since,
                 sent)


def commit_to_end(namesrv: str, group: str) -> None:
    """The group's committed offsets at the end of every queue of TOPIC and of its retry topic, as its
    consumer's last commit leaves them: a Java consumer that stops right after its last message sometimes
    shuts down before committing one queue (seen once on Apache's side), or before its rebalance took one
    broker's retry queue (CI at 2a1830d: Apache's broker-a had no %RETRY%TkLag offset, mq's had), which
    would make the two sides' progress differ by a row. Every queue is committed, even one whose offset reads
    as its end already: a broker answers 0 for a queue the group never committed while its messages are all in
    memory, so an empty retry queue reads 0 = end with or without a commit (CI at a7e59fb: the same row again)."""
    with SyncPullConsumer(group, namesrv=namesrv) as consumer:
        for mq in consumer.fetch_queues(TOPIC) + consumer.fetch_queues(f"%RETRY%{group}"):
            consumer.commit_offset(mq, consumer.max_offset(mq))


def settled(namesrv: str, timeout: float = 30.0) -> None:
    """Until the live group has committed every message (the Java consumer commits every 5 s), so both
    sides show the same lag: LAGGING for TkLag, none for TkLive. Every queue of TOPIC must have a commit:
    a broker where the group never committed leaves its queues out of the group's progress, whose total is
    then 0 too early (CI at 59a4220: mq's broker-a had no TkLive offsets yet when the comparisons ran)."""
    deadline = time.monotonic() + timeout
    with SyncMQAdmin(namesrv) as admin:
        while (None in admin.offsets.committed_offsets(LIVE, TOPIC).values()
               or admin.groups.consumer_progress(LIVE).total_diff != 0):
            assert time.monotonic() < deadline, f"{LIVE} never caught up on {namesrv}"
            time.sleep(0.2)
