"""ConsumerOffsetManager, SubscriptionGroupManager, ConsumerManager, ProducerManager, locks."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mqtools.remoting.bodies import MessageQueue, SubscriptionData, SubscriptionGroupConfig
from mqtools.server.broker.clients import ClientChannelInfo, ConsumerManager, ProducerManager, enum_name
from mqtools.server.broker.consumer_offsets import ConsumerOffsetManager
from mqtools.server.broker.rebalance_lock import RebalanceLockManager
from mqtools.server.broker.subscription import SubscriptionGroupManager


class Clock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Chan:
    """A stand-in channel: only identity matters to the managers."""

    def __init__(self, name: str) -> None:
        self.name = name


# ------------------------------------------------------------------ offsets


def test_offsets_commit_query_and_persist_roundtrip(tmp_path: Path) -> None:
    mgr = ConsumerOffsetManager(tmp_path)
    assert mgr.query_offset("g", "T", 0) == -1
    mgr.commit_offset("1.2.3.4:5", "g", "T", 0, 12)
    mgr.commit_offset("1.2.3.4:5", "g", "T", 3, 5)
    mgr.commit_offset("1.2.3.4:5", "g2", "U", 1, 7)
    mgr.persist()
    again = ConsumerOffsetManager(tmp_path)
    assert again.load()
    assert again.query_offset("g", "T", 0) == 12
    assert again.query_offsets("g", "T") == {0: 12, 3: 5}
    assert again.topics_of_group("g") == {"T"}
    assert again.groups_of_topic("U") == {"g2"}


def test_offsets_read_fastjson_file(tmp_path: Path) -> None:
    (tmp_path / "consumerOffset.json").write_text('{\n\t"offsetTable":{\n\t\t"T@g":{0:12,1:5}\n\t}\n}')
    mgr = ConsumerOffsetManager(tmp_path)
    assert mgr.load()
    assert mgr.query_offsets("g", "T") == {0: 12, 1: 5}


def test_offsets_missing_file_and_removals(tmp_path: Path) -> None:
    mgr = ConsumerOffsetManager(tmp_path / "nowhere")
    assert not mgr.load()
    mgr.commit_offset("x", "g", "T", 0, 1)
    mgr.commit_offset("x", "h", "T", 0, 2)
    mgr.remove_group("g")
    assert mgr.query_offset("g", "T", 0) == -1 and mgr.query_offset("h", "T", 0) == 2
    mgr.remove_topic("T")
    assert mgr.offset_table == {}


async def test_offsets_flush_timer_and_shutdown_write(tmp_path: Path) -> None:
    mgr = ConsumerOffsetManager(tmp_path, flush_interval=0.05)
    await mgr.start()
    mgr.commit_offset("x", "g", "T", 0, 42)
    for _ in range(100):
        if (tmp_path / "consumerOffset.json").exists():
            break
        await asyncio.sleep(0.02)
    assert b'"T@g"' in (tmp_path / "consumerOffset.json").read_bytes()
    mgr.commit_offset("x", "g", "T", 0, 43)
    await mgr.shutdown()
    again = ConsumerOffsetManager(tmp_path)
    again.load()
    assert again.query_offset("g", "T", 0) == 43


# ------------------------------------------------------------------ groups


def test_groups_auto_create_update_delete_persisted(tmp_path: Path) -> None:
    clock = Clock()
    mgr = SubscriptionGroupManager(tmp_path, clock)
    assert mgr.find("TOOLS_CONSUMER") is not None
    before = mgr.data_version.counter
    cfg = mgr.find("cg")
    assert cfg is not None and cfg.retry_max_times == 16 and cfg.retry_queue_nums == 1
    assert mgr.data_version.counter == before + 1
    mgr.update(SubscriptionGroupConfig(group_name="cg2", retry_max_times=3))
    again = SubscriptionGroupManager(tmp_path, clock)
    assert again.load()
    assert again.find("cg2", create=False).retry_max_times == 3
    assert again.find("cg", create=False) is not None
    assert again.delete("cg") and not again.delete("cg")
    third = SubscriptionGroupManager(tmp_path, clock)
    third.load()
    assert third.find("cg", create=False) is None


def test_groups_no_auto_create(tmp_path: Path) -> None:
    mgr = SubscriptionGroupManager(tmp_path, auto_create=False)
    assert mgr.find("cg") is None
    assert not (tmp_path / "subscriptionGroup.json").exists()


def test_groups_read_java_file(tmp_path: Path) -> None:
    (tmp_path / "subscriptionGroup.json").write_text(
        '{"dataVersion":{"counter":7,"timestamp":1700000000000},"subscriptionGroupTable":{"cg":{'
        '"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,'
        '"groupName":"cg","notifyConsumerIdsChangedEnable":false,"retryMaxTimes":2,"retryQueueNums":1,'
        '"whichBrokerWhenConsumeSlowly":1,"groupRetryPolicy":{"type":"CUSTOMIZED"}}}}'
    )
    mgr = SubscriptionGroupManager(tmp_path)
    mgr.load()
    cfg = mgr.find("cg", create=False)
    assert cfg.retry_max_times == 2 and not cfg.notify_consumer_ids_changed_enable
    assert mgr.data_version.counter == 7


# ------------------------------------------------------------------ consumers and producers


def _info(chan: Chan, client_id: str, language: int = 0) -> ClientChannelInfo:
    return ClientChannelInfo(chan, client_id, language, 407, f"{chan.name}:1")


def test_consumer_register_notifies_members_on_change() -> None:
    clock = Clock()
    events: list[tuple[str, list[str]]] = []
    mgr = ConsumerManager(clock, on_ids_changed=lambda g, m: events.append((g, sorted(i.client_id for i in m))))
    a, b = Chan("a"), Chan("b")
    subs = [SubscriptionData(topic="T"), SubscriptionData(topic="%RETRY%cg")]
    assert mgr.register("cg", _info(a, "A"), 1, 1, 0, subs)
    assert events == [("cg", ["A"])]
    # a heartbeat that changes nothing notifies nobody
    assert not mgr.register("cg", _info(a, "A"), 1, 1, 0, subs)
    assert len(events) == 1
    assert mgr.register("cg", _info(b, "B"), "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET", subs)
    assert events[-1] == ("cg", ["A", "B"])
    assert sorted(mgr.find("cg").client_ids()) == ["A", "B"]
    assert mgr.groups_of_topic("T") == {"cg"}
    # C++ clients send ordinals; they become Java's names
    info = mgr.find("cg")
    assert (info.consume_type, info.message_model) == ("CONSUME_PASSIVELY", "CLUSTERING")
    assert mgr.channel_closed(a) == ["cg"]
    assert events[-1] == ("cg", ["B"])
    mgr.unregister("cg", b)
    assert mgr.find("cg") is None


def test_consumer_subscription_change_notifies() -> None:
    events: list[str] = []
    mgr = ConsumerManager(Clock(), on_ids_changed=lambda g, m: events.append(g))
    a = Chan("a")
    mgr.register("cg", _info(a, "A"), 1, 1, 0, [SubscriptionData(topic="T", sub_string="*", sub_version=1)])
    mgr.register("cg", _info(a, "A"), 1, 1, 0, [SubscriptionData(topic="T", sub_string="tagA", sub_version=2)])
    assert len(events) == 2
    assert mgr.find_subscription("cg", "T").sub_string == "tagA"
    mgr.register("cg", _info(a, "A"), 1, 1, 0, [SubscriptionData(topic="T", sub_string="tagA", sub_version=3)],
                 notify=False)
    mgr.register("cg", _info(a, "A"), 1, 1, 0, [SubscriptionData(topic="U")], notify=False)
    assert len(events) == 2


def test_a_members_older_subscription_does_not_replace_a_newer_one() -> None:
    """Two members heartbeat their own subVersion (broadcasting consumers, each rebalance bumps it): the broker
    keeps the newest, so neither member's pulls are refused SUBSCRIPTION_NOT_LATEST by the other's heartbeat."""
    events: list[str] = []
    mgr = ConsumerManager(Clock(), on_ids_changed=lambda g, m: events.append(g))
    a, b = Chan("a"), Chan("b")
    mgr.register("cg", _info(a, "A"), 1, 1, 0, [SubscriptionData(topic="T", sub_version=20)])
    mgr.register("cg", _info(b, "B"), 1, 1, 0, [SubscriptionData(topic="T", sub_version=10)])
    assert mgr.find_subscription("cg", "T").sub_version == 20
    assert not mgr.register("cg", _info(b, "B"), 1, 1, 0, [SubscriptionData(topic="T", sub_string="tagB",
                                                                             sub_version=15)])
    assert mgr.find_subscription("cg", "T").sub_string == "*"
    assert mgr.register("cg", _info(b, "B"), 1, 1, 0, [SubscriptionData(topic="T", sub_string="tagB",
                                                                         sub_version=30)])
    assert mgr.find_subscription("cg", "T").sub_string == "tagB"


def test_consumer_channel_expiry_uses_clock() -> None:
    clock = Clock()
    events: list[list[str]] = []
    mgr = ConsumerManager(clock, on_ids_changed=lambda g, m: events.append([i.client_id for i in m]))
    a, b = Chan("a"), Chan("b")
    mgr.register("cg", _info(a, "A"), 1, 1, 0, [])
    clock.now += 100
    mgr.register("cg", _info(b, "B"), 1, 1, 0, [])
    clock.now += 30
    assert [i.client_id for i in mgr.scan_not_active()] == ["A"]
    assert events[-1] == ["B"]
    clock.now += 89  # B silent for 119 s
    assert mgr.scan_not_active() == []
    clock.now += 2
    assert [i.client_id for i in mgr.scan_not_active()] == ["B"]
    assert mgr.find("cg") is None


def test_listener_failure_does_not_undo_registration() -> None:
    def boom(group: str, members: list) -> None:
        raise RuntimeError("listener bug")

    mgr = ConsumerManager(Clock(), on_ids_changed=boom)
    assert mgr.register("cg", _info(Chan("a"), "A"), 1, 1, 0, [])
    assert mgr.find("cg").client_ids() == ["A"]


def test_enum_names() -> None:
    names = ("X", "Y")
    assert enum_name(1, names, "X") == "Y"
    assert enum_name("Y", names, "X") == "Y"
    assert enum_name("7", names, "X") == "X"
    assert enum_name(None, names, "X") == "X"


def test_producer_manager() -> None:
    clock = Clock()
    mgr = ProducerManager(clock)
    a, b = Chan("a"), Chan("b")
    assert mgr.register("pg", _info(a, "A"))
    assert not mgr.register("pg", _info(a, "A"))
    mgr.register("pg", _info(b, "B"))
    assert sorted(i.client_id for i in mgr.connections("pg")) == ["A", "B"]
    assert mgr.channel_closed(a) == ["pg"]
    clock.now += 121
    assert [i.client_id for i in mgr.scan_not_active()] == ["B"]
    assert mgr.connections("pg") == []


# ------------------------------------------------------------------ locks


def test_rebalance_locks() -> None:
    clock = Clock()
    locks = RebalanceLockManager(clock)
    q0, q1 = MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)
    assert locks.try_lock_batch("cg", [q0, q1], "A") == {q0, q1}
    assert locks.try_lock_batch("cg", [q0, q1], "B") == set()
    assert locks.try_lock_batch("other", [q0], "B") == {q0}
    locks.unlock_batch("cg", [q1], "B")  # not B's lock: stays
    assert locks.is_locked("cg", q1, "A")
    locks.unlock_batch("cg", [q1], "A")
    assert locks.try_lock_batch("cg", [q1], "B") == {q1}
    clock.now += 59
    assert locks.try_lock_batch("cg", [q0], "A") == {q0}  # renewal
    clock.now += 59
    assert locks.try_lock_batch("cg", [q0], "B") == set()
    clock.now += 2
    assert locks.try_lock_batch("cg", [q0], "B") == {q0}
    assert not locks.is_locked("cg", q0, "A")


async def test_expiry_timer_closes_silent_channels() -> None:
    class Closable(Chan):
        closed = False

        def close(self) -> None:
            self.closed = True

    clock = Clock()
    consumers, producers = ConsumerManager(clock), ProducerManager(clock)
    chan = Closable("a")
    consumers.register("cg", _info(chan, "A"), 1, 1, 0, [])
    producers.register("pg", _info(chan, "A"))
    await consumers.start(interval=0.01)
    await producers.start(interval=0.01)
    try:
        await asyncio.sleep(0.05)
        assert not chan.closed and consumers.find("cg") is not None
        clock.now += 121
        for _ in range(100):
            if chan.closed and consumers.find("cg") is None and not producers.connections("pg"):
                break
            await asyncio.sleep(0.01)
        assert chan.closed and consumers.find("cg") is None and producers.connections("pg") == []
    finally:
        await consumers.shutdown()
        await producers.shutdown()

