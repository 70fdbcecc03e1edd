"""Apache's gRPC client for Java (rocketmq-client-java 5.0.8) through `mq proxy` and Apache's rocketmq-proxy 5.5.0,
Apache's proxy over Apache's broker the oracle.

The four worlds of proxyworlds.py (one set per session, shared with test_proxy_on_apache's Python client): each
scenario runs in all four at once, driving our gRPC harness (tests/reference/java-grpc: `produce`,
`simple-receive`, `push`, one JVM run each) against the world's proxy, and reduces what the client saw to an
outcome free of message ids, times and addresses; each other world's outcome must equal Apache's.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from javaclient import GrpcJavaClient, JavaRun, run_grpc_java
from proxyworlds import Outcomes, World, like_apache, worlds_but
from refsupport import make_group, name

pytestmark = pytest.mark.timeout(300)

#: The consumers' long poll and the invisible duration of a receive that acks what it gets (ms).
AWAIT_MS = "2000"
INVISIBLE_MS = "20000"

#: How long a consumer receives, at most (ms): what a scenario awaits comes long before.
TIMEOUT_MS = "30000"

#: What the client shows of a message but which differs from world to world and run to run.
VARYING = {"event", "t", "messageId", "bornTimestamp", "deliveryTimestamp", "action", "result", "receiptHandle"}
CHECK_TIMES = "TRANSACTION_CHECK_TIMES"


@pytest.fixture(scope="module")
def outcomes(proxy_worlds: dict[str, World]) -> Outcomes:
    return Outcomes(proxy_worlds)


# ------------------------------------------------------------------------------------------------ the client


def produce(world: World, topic: str, bodies: list[str], *args: str) -> JavaRun:
    """One message per body through the world's proxy; the run (its sends, failures and checks)."""
    return run_grpc_java("produce", world.proxy, "--topic", topic, "--bodies", ",".join(bodies), *args, ok=(0, 2))


def receive_args(topic: str, group: str | None, *args: str) -> tuple[str, ...]:
    """A simple consumer's arguments: `group`, else a new one, on `topic` (see mqgrpc.SimpleReceive for `args`)."""
    return ("--topic", topic, "--group", group or name("JgGroup"), "--await-ms", AWAIT_MS, "--invisible-ms",
            INVISIBLE_MS, "--timeout-ms", TIMEOUT_MS, *args)


def receive(world: World, topic: str, *args: str, group: str | None = None) -> JavaRun:
    """A simple consumer's run to its end (`--expect` acked, `--until-tag` seen, or its timeout)."""
    return run_grpc_java("simple-receive", world.proxy, *receive_args(topic, group, *args))


def sent(run: JavaRun) -> dict[str, Any]:
    """What a producer run did: the bodies sent and the errors of those that were not."""
    return {"sent": sorted(e["body"] for e in run.of("sent")),
            "send_failed": sorted(f"{e['body']}: {e['error'].split(',')[0]}" for e in run.of("send_failed"))}


def seen(event: dict[str, Any], topic: str) -> dict[str, Any]:
    """What the client saw of a message, without ids and times: the topic as `T` when it is ours, a property
    holding the message's own id as `<messageId>`, and without TRANSACTION_CHECK_TIMES (whether and how often a
    broker checked a half message is a matter of timing: Apache's broker records ended transactions in batches,
    every 3 s, and may check one the producer ended; see `transaction`)."""
    out = {k: v for k, v in event.items() if k not in VARYING}
    out["topic"] = "T" if out["topic"] == topic else out["topic"]
    out["properties"] = {k: "<messageId>" if v == event["messageId"] else v
                         for k, v in out["properties"].items() if k != CHECK_TIMES}
    return out


def by_body(events: list[dict[str, Any]], topic: str) -> list[dict[str, Any]]:
    return sorted((seen(e, topic) for e in events), key=lambda s: (s["body"], s["attempt"]))


def unique_views(events: list[dict[str, Any]], topic: str) -> list[str]:
    """The distinct views of the messages (a transaction's message may be checked, and then delivered, twice)."""
    return sorted({repr(seen(e, topic)) for e in events})


def errors(run: JavaRun, kind: str) -> list[str]:
    """The errors of a consumer's acks or changes of invisible duration (none when all were answered OK)."""
    return [f"{e.get('body', '')}: {e['error']}" for e in run.of(kind) if "error" in e]


# ------------------------------------------------------------------------------------------------ scenarios


def normal(world: World) -> dict[str, Any]:
    """Sync sends with tags, keys and a user property; every one received once, as sent."""
    topic = world.topic("JgNormal", "NORMAL")
    bodies = [f"normal-{i}" for i in range(3)]
    out = sent(produce(world, topic, bodies, "--tags", "Tag0,Tag1", "--keys-prefix", "key-", "--props", "color=red"))
    got = receive(world, topic, "--expect", "3")
    return {**out, "received": by_body(got.of("received"), topic), "acks": errors(got, "acked"),
            "complete": got.done["complete"]}


def fifo(world: World) -> dict[str, Any]:
    """Two message groups interleaved into a FIFO topic, read by an orderly group: each group's order."""
    topic = world.topic("JgFifo", "FIFO")
    group = name("JgGroupFifo")
    make_group(world.namesrv, group, orderly=True)
    bodies = [f"g{i % 2}:{i}" for i in range(8)]
    out = sent(produce(world, topic, bodies, "--mode", "fifo", "--message-groups", "g0,g1"))
    got = receive(world, topic, "--expect", "8", group=group)
    order: dict[str, list[str]] = {}
    for e in got.of("received"):
        order.setdefault(e["group"], []).append(e["body"])
    return {**out, "order": order, "attempts": sorted({e["attempt"] for e in got.of("received")}),
            "acks": errors(got, "acked")}


def timer(world: World) -> dict[str, Any]:
    """A message due 3 s after it is sent, to a consumer already waiting: not delivered before its time, and
    within Apache's timer precision (1 s: a time is rounded to its wheel's slot) and 1 s of slack after it.

    The delivery time is a millisecond timestamp the client converts properly (unlike the Python client 5.1.2),
    chosen by the producer when it sends, so the JVM's start does not count; the times compared are both taken
    on this machine's clock."""
    topic = world.topic("JgTimer", "DELAY")
    consumer = GrpcJavaClient("simple-receive", world.proxy, *receive_args(topic, None, "--expect", "1"))
    try:
        consumer.wait_for(lambda ev: any(e["event"] == "started" for e in ev), 60, "the consumer started")
        run = produce(world, topic, ["later"], "--mode", "timer", "--deliver-after-ms", "3000")
        consumer.wait_for(lambda ev: any(e["event"] in ("done", "error") for e in ev), 60, "the consumer's end")
    finally:
        got = consumer.close(10)  # it exits once done; killed when the scenario failed before
    deliver_at = [e["deliverAt"] for e in run.of("sent")]
    late = [e["t"] - deliver_at[0] for e in got.of("received")] if deliver_at else []
    return {**sent(run), "received": by_body(got.of("received"), topic), "not_early": all(ms >= 0 for ms in late),
            "on_time": all(ms < 2000 for ms in late),
            "delivery_timestamp": [e["deliveryTimestamp"] in deliver_at for e in got.of("received")]}


def tag_filter(world: World) -> dict[str, Any]:
    """TagA and TagB into one queue, a consumer of `TagA || TagC`: only the TagA ones, in order (the last one,
    TagC, marks the end, so nothing is awaited)."""
    topic = world.topic("JgTag", "NORMAL", queues=1)
    tags = ["TagA", "TagB", "TagA", "TagB", "TagC"]
    out = sent(produce(world, topic, [f"{tag}-{i}" for i, tag in enumerate(tags)], "--tags", ",".join(tags)))
    got = receive(world, topic, "--expr", "TagA || TagC", "--until-tag", "TagC")
    return {**out, "received": [(e["body"], e["tag"]) for e in got.of("received")], "complete": got.done["complete"]}


def popped_at(event: dict[str, Any]) -> int:
    """When the broker popped the message (ms): the receipt handle's second field, `startOffset popTime ...`."""
    return int(event["receiptHandle"].split(" ")[1])


def redelivery(world: World) -> dict[str, Any]:
    """Received with 1 s of invisibility and not acked: it comes back, one delivery attempt more, popped again no
    sooner than its invisible time after the broker first popped it (the brokers' own pop times, from the receipt
    handles: the time a message takes from the broker to the client varies with the machine's load)."""
    topic = world.topic("JgAgain", "NORMAL")
    out = sent(produce(world, topic, ["again"]))
    got = receive(world, topic, "--invisible-ms", "1000", "--leave", "1", "--expect", "1")
    received = got.of("received")
    return {**out, "received": [(e["body"], e["attempt"], e["action"]) for e in received],
            "views": by_body(received, topic),
            "back_after_invisible": [popped_at(b) - popped_at(a) >= 1000 for a, b in pairwise(received)],
            "acks": errors(got, "acked")}


def change_invisible(world: World) -> dict[str, Any]:
    """Received for 20 s, changed to 1 s: back well before 20 s; its next handle changed again (to 30 s) and acked
    with the handle that change gave: not back in the 3 s after."""
    topic = world.topic("JgChange", "NORMAL")
    out = sent(produce(world, topic, ["change"]))
    got = receive(world, topic, "--leave", "1", "--change-ms", "1000", "--rechange-ms", "30000", "--expect", "1",
                  "--linger-ms", "3000")
    received = got.of("received")
    return {**out, "received": [(e["body"], e["attempt"], e["action"]) for e in received],
            "back_within_10s": [b["t"] - a["t"] < 10_000 for a, b in pairwise(received)],
            "changes": [e["ms"] for e in got.of("changed") if "error" not in e],
            "change_errors": errors(got, "changed"), "acks": errors(got, "acked")}


def transaction(world: World) -> dict[str, Any]:
    """Committed, rolled back, and two left open that the broker checks (through the proxy, 3 s after they were
    stored): the checker commits one and rolls back the other. The committed ones are delivered, the rolled back
    ones never (a consumer lingers 3 s for them); the checker may be asked about an ended one too (Apache's broker
    records ends in batches, and a check answered COMMIT commits again: the message is then delivered twice, the
    second time with TRANSACTION_CHECK_TIMES), so only the open ones' checks are compared, and what was delivered
    as a set."""
    topic = world.topic("JgTx", "TRANSACTION")
    outcomes = ["commit", "rollback", "unknown-commit", "unknown-rollback"]
    run = produce(world, topic, outcomes, "--mode", "transaction", "--outcomes", ",".join(outcomes),
                  "--wait-check-ms", "40000")
    got = receive(world, topic, "--expect", "2", "--linger-ms", "3000")
    checked = [e for e in run.of("checked") if e["body"].startswith("unknown-")]
    received = got.of("received")
    return {**sent(run), "checked_all": run.done["checked_all"],
            "checked": sorted({(e["body"], e["answer"], CHECK_TIMES in e["properties"]) for e in checked}),
            "received": sorted({(e["body"], e["attempt"]) for e in received}), "acks": errors(got, "acked"),
            "checked_views": unique_views(checked, topic), "received_views": unique_views(received, topic)}


#: The items of the transaction scenario's outcome that say what the checker and the consumer saw of the messages.
TX_VIEWS = ("checked_views", "received_views")


PUSH_TIMING = "failed_back_within_10s"


def push(world: World) -> dict[str, Any]:
    """Async sends, a push consumer that fails two messages the first time: those come back (made invisible for the
    group's first retry delay, 1 s) with delivery attempt 2, within 10 s; each consumed once with SUCCESS, nothing
    more in the 2 s after."""
    topic = world.topic("JgPush", "NORMAL")
    bodies = [f"push-{i}" for i in range(6)]
    out = sent(produce(world, topic, bodies, "--mode", "async", "--keys-prefix", "key-"))
    # 45 s: six messages, two of them back after their retry delay, on a machine twice as slow
    got = run_grpc_java("push", world.proxy, "--topic", topic, "--group", name("JgGroupPush"), "--expect", "6",
                        "--fail", "push-1,push-4", "--timeout-ms", "45000", "--linger-ms", "2000")
    consumed = got.of("consumed")
    failed_at = {e["body"]: e["t"] for e in consumed if e["result"] == "FAILURE"}
    return {**out, "consumed": sorted((e["body"], e["attempt"], e["result"]) for e in consumed),
            "views": by_body(consumed, topic), "complete": got.done["complete"],
            PUSH_TIMING: sorted((e["body"], e["t"] - failed_at[e["body"]] < 10_000) for e in consumed
                                if e["attempt"] > 1 and e["body"] in failed_at)}


# ------------------------------------------------------------------------------------------------ the tests


@pytest.mark.parametrize("world", worlds_but())
def test_sync_send_and_simple_receive(outcomes: Outcomes, world: str) -> None:
    like_apache(outcomes, normal, world)


@pytest.mark.parametrize("world", worlds_but())
def test_fifo_order_per_message_group(outcomes: Outcomes, world: str) -> None:
    like_apache(outcomes, fifo, world)


@pytest.mark.parametrize("world", worlds_but())
def test_timer_message_on_time(outcomes: Outcomes, world: str) -> None:
    like_apache(outcomes, timer, world)


@pytest.mark.parametrize("world", worlds_but())
def test_tag_filter(outcomes: Outcomes, world: str) -> None:
    like_apache(outcomes, tag_filter, world)


@pytest.mark.parametrize("world", worlds_but())
def test_unacked_message_comes_back(outcomes: Outcomes, world: str) -> None:
    like_apache(outcomes, redelivery, world)


@pytest.mark.parametrize("world", worlds_but())
def test_change_invisible_duration(outcomes: Outcomes, world: str) -> None:
    like_apache(outcomes, change_invisible, world)


@pytest.mark.parametrize("world", worlds_but())
def test_transactions_with_checker(outcomes: Outcomes, world: str) -> None:
    """Which transactions were checked, answered how, and which messages were delivered."""
    like_apache(outcomes, transaction, world, [k for k in outcomes.of(transaction)["apache"] if k not in TX_VIEWS])


@pytest.mark.parametrize("world", worlds_but())
def test_transactional_messages_as_checked_and_delivered(outcomes: Outcomes, world: str) -> None:
    """All the checker and the consumer saw of the transactions' messages."""
    like_apache(outcomes, transaction, world, TX_VIEWS)


@pytest.mark.parametrize("world", worlds_but())
def test_push_consumer_redelivers_failed(outcomes: Outcomes, world: str) -> None:
    """What was consumed, how often, with which result, and all the listener saw of it."""
    like_apache(outcomes, push, world, [k for k in outcomes.of(push)["apache"] if k != PUSH_TIMING])


@pytest.mark.parametrize("world", worlds_but())
def test_push_consumer_gets_failed_back_soon(outcomes: Outcomes, world: str) -> None:
    """A failed message is made invisible for the group's first retry delay (1 s); the revive then puts it into
    the group's retry topic, which wakes the group's long-polling receive: back in seconds, not after 20."""
    like_apache(outcomes, push, world, [PUSH_TIMING])
