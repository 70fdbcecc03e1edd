"""Topic table (auto-create rules, persistence, data version), hold table, stats."""

from __future__ import annotations

from pathlib import Path

from mqtools.common.perm import PERM_INHERIT, PERM_READ, PERM_RW, PERM_WRITE
from mqtools.remoting.bodies import TopicConfig
from mqtools.server.broker.config import BrokerConfig
from mqtools.server.broker.long_polling import HeldPull, HoldTable
from mqtools.server.broker.stats import BrokerStats
from mqtools.server.broker.topic_config import TopicConfigManager


class Clock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_system_topics_and_auto_create(tmp_path: Path) -> None:
    cfg = BrokerConfig(broker_name="b1", default_topic_queue_nums=8)
    mgr = TopicConfigManager(tmp_path, cfg, Clock())
    tbw = mgr.select("TBW102")
    assert tbw is not None and tbw.perm == PERM_INHERIT | PERM_RW and tbw.write_queue_nums == 8
    assert mgr.select("b1").perm == PERM_INHERIT | PERM_RW and mgr.select("DefaultCluster").perm == 7
    assert mgr.select("DefaultCluster").write_queue_nums == 16 and mgr.is_system_topic("b1")
    off = TopicConfigManager(tmp_path, BrokerConfig(broker_name="b1", cluster_topic_enable=False), Clock())
    assert off.select("DefaultCluster").perm == PERM_INHERIT
    assert mgr.select("SCHEDULE_TOPIC_XXXX").read_queue_nums == 18
    changes = []
    mgr.on_change = lambda: changes.append(1)
    tc = mgr.create_topic_in_send_message_method("T1", "TBW102", 4)
    assert tc is not None and tc.write_queue_nums == 4 and tc.perm == PERM_RW
    big = mgr.create_topic_in_send_message_method("T2", "TBW102", 64)
    assert big.write_queue_nums == 8  # capped at the template's queues
    assert changes == [1, 1] and mgr.data_version.counter == 2
    assert mgr.create_topic_in_send_message_method("T3", "NoSuchTemplate", 4) is None
    mgr.update(TopicConfig("plain", 2, 2, perm=PERM_RW))
    assert mgr.create_topic_in_send_message_method("T4", "plain", 4) is None  # template lacks INHERIT


def test_auto_create_disabled_has_no_template(tmp_path: Path) -> None:
    mgr = TopicConfigManager(tmp_path, BrokerConfig(auto_create_topic_enable=False), Clock())
    assert mgr.select("TBW102") is None
    assert mgr.create_topic_in_send_message_method("T1", "TBW102", 4) is None


def test_persist_and_reload(tmp_path: Path) -> None:
    cfg = BrokerConfig(broker_name="b1")
    mgr = TopicConfigManager(tmp_path, cfg, Clock())
    mgr.update(TopicConfig("Orders", 3, 3))
    mgr.create_topic_in_send_message_back_method("%RETRY%g", 1, PERM_READ | PERM_WRITE)
    mgr.delete("Orders")
    mgr.update(TopicConfig("Kept", 5, 5))
    again = TopicConfigManager(tmp_path, cfg, Clock())
    assert again.load()
    assert again.select("Kept").write_queue_nums == 5 and again.select("Orders") is None
    assert again.select("%RETRY%g") is not None
    assert again.data_version.same(mgr.data_version)
    (tmp_path / "topics.json").write_bytes(b"{torn")
    third = TopicConfigManager(tmp_path, cfg, Clock())
    assert third.load()  # falls back to topics.json.bak
    assert third.select("%RETRY%g") is not None


def held(topic: str, qid: int, offset: int, deadline: float, tags=None, waker=None, latest=False) -> HeldPull:
    return HeldPull(conn=object(), request=None, topic=topic, queue_id=qid, offset=offset, deadline=deadline,
                    tag_filter=tags, waker=waker, latest=latest)


def test_hold_table_wakes_on_matching_arrival_only() -> None:
    table = HoldTable()
    a = held("T", 0, 5, 100.0)
    b = held("T", 0, 5, 100.0, tags={42}.__contains__)
    c = held("T", 1, 0, 100.0)
    for h in (a, b, c):
        table.add(h)
    assert table.wake("T", 0, 5, 42) == []  # offset not beyond the requested one
    assert table.wake("T", 0, 6, 7) == [a]  # b filters tag 7 out
    assert table.wake("T", 0, 7, 42) == [b]
    assert len(table) == 1
    assert table.expire(99.0) == []
    assert table.expire(100.0) == [c]
    assert len(table) == 0 and table.next_deadline() is None


def test_an_arrival_wakes_every_pull_but_one_pop_of_each_group_the_oldest_it_satisfies() -> None:
    table = HoldTable()
    pulls = [held("T", 0, 0, 100.0), held("T", 0, 0, 100.0)]
    a1, a2 = held("T", 0, 0, 100.0, {1}.__contains__, "A"), held("T", 0, 0, 100.0, waker="A")
    a3, b1 = held("T", 0, 0, 100.0, waker="A"), held("T", 0, 0, 100.0, waker="B")
    for h in (*pulls, a1, a2, a3, b1):
        table.add(h)
    assert table.wake("T", 0, 1, 7) == [*pulls, a2, b1]  # a1's filter refuses tag 7: a2 is the oldest it suits
    assert table.wake("T", 0, 2, 1) == [a1]
    assert table.wake("T", 0, 3, 1) == [a3] and len(table) == 0


def test_a_pop_woken_is_the_soonest_to_expire_and_a_notification_the_latest() -> None:
    """Apache's PopRequest order (deadline, then arrival): its POP service polls the first, its NOTIFICATION
    service (notifyLast) the last."""
    table = HoldTable()
    pops = [held("T", 0, 0, d, waker="P") for d in (30.0, 10.0, 20.0, 10.0)]
    notes = [held("T", 0, 0, d, waker="N", latest=True) for d in (30.0, 10.0, 30.0, 20.0)]
    for h in (*pops, *notes):
        table.add(h)
    assert table.wake("T", 0, 1, None) == [pops[1], notes[2]]
    assert table.wake("T", 0, 2, None) == [pops[3], notes[0]]
    assert table.wake("T", 0, 3, None) == [pops[2], notes[3]]


def test_expiry_sweeps_each_queue_once_of_the_expired_and_of_requests_answered_meanwhile() -> None:
    table = HoldTable()
    waits = [held("T", q, 0, 10.0) for q in range(3)]  # one request waiting on three queues
    late = held("T", 1, 0, 20.0)
    for h in (*waits, late):
        table.add(h)
    assert table.wake("T", 0, 1, None) == [waits[0]]
    table.finish(waits[2])  # answered through queue 0: its other waits are done, not left to wake it again
    assert len(table) == 2
    assert table.expire(10.0) == [waits[1]]
    assert set(table.by_queue) == {("T", 1)} and list(table.by_queue["T", 1].pulls.values()) == [late]


def test_hold_table_drop_connection() -> None:
    table = HoldTable()
    h = held("T", 0, 0, 10.0)
    table.add(h)
    table.drop_connection(h.conn)
    assert len(table) == 0 and table.expire(11.0) == []


def test_stats_rates_and_totals() -> None:
    clock = Clock(1000.0)
    stats = BrokerStats(clock)
    for i in range(10):
        clock.now = 1000.0 + i
        stats.on_put("T", 5, 500)
    stats.on_get("g", "T", 3, 300)
    stats.on_get("g", "T", 0, 0)
    clock.now = 1010.0
    info = stats.runtime_info()
    assert info["putTps"].split()[0] == "5.00"
    assert info["msgPutTotalTodayNow"] == "50" and info["msgGetTotalTodayNow"] == "3"
    assert info["putMessageSizeTotal"] == "5000" and info["putMessageTimesTotal"] == "10"
    assert info["runtime"].startswith("[ 0 days, 0 hours, 0 minutes, 10 seconds")
    assert stats.topic_put_tps("T") > 0 and stats.topic_put_tps("other") == 0.0


def test_stats_day_totals_roll_at_midnight() -> None:
    import time as _t

    noon = _t.mktime((2026, 3, 10, 12, 0, 0, 0, 0, -1))
    clock = Clock(noon)
    stats = BrokerStats(clock)
    stats.on_put("T", 7, 70)
    clock.now = noon + 86400  # next day, noon
    stats.on_put("T", 2, 20)
    info = stats.runtime_info()
    assert info["msgPutTotalTodayMorning"] == "7" and info["msgPutTotalTodayNow"] == "9"
    clock.now = noon + 2 * 86400
    info = stats.runtime_info()
    assert info["msgPutTotalYesterdayMorning"] == "7" and info["msgPutTotalTodayMorning"] == "9"


async def test_hold_service_wakes_from_other_threads_and_expires_on_its_timer() -> None:
    import asyncio
    import threading

    from mqtools.server.broker.long_polling import PullRequestHoldService

    answered: list[HeldPull] = []
    clock = Clock(1000.0)
    service = PullRequestHoldService(answered.append, clock)
    await service.start()
    try:
        a = held("T", 0, 3, 1010.0)
        b = held("T", 1, 0, 1000.05)
        service.suspend(a)
        service.suspend(b)
        thread = threading.Thread(target=service.arrival_listener, args=("T", 0, 4, 0, None))
        thread.start()
        thread.join()
        for _ in range(100):
            if a in answered:
                break
            await asyncio.sleep(0.01)
        assert answered == [a]
        clock.now = 1000.1  # b's deadline passed; the loop timer answers it
        for _ in range(100):
            if b in answered:
                break
            await asyncio.sleep(0.01)
        assert answered == [a, b] and len(service.table) == 0
    finally:
        await service.shutdown()


async def test_topic_writes_leave_the_loop_and_the_latest_table_lands(tmp_path: Path) -> None:
    import asyncio

    cfg = BrokerConfig(broker_name="b1")
    mgr = TopicConfigManager(tmp_path, cfg, Clock())
    for i in range(20):
        mgr.update(TopicConfig(f"T{i}", 1, 1))
    for _ in range(200):
        again = TopicConfigManager(tmp_path, cfg, Clock())
        if again.load() and again.select("T19") is not None:
            break
        await asyncio.sleep(0.01)
    assert all(again.select(f"T{i}") is not None for i in range(20))


def test_an_arrival_and_a_closed_connection_cost_what_they_touch_not_every_request_parked() -> None:
    """100,000 POPs parked (maxPopPollingSize) made every arrival scan them all (49 ms each) and every closed
    connection too (73 ms). Counted by the tag filter's calls: an arrival asks each group's first request."""
    table = HoldTable()
    asked = [0]

    def counting(tags: int) -> bool:
        asked[0] += 1
        return True

    groups, per = 20, 500
    parked = [held("T", 0, 0, 100.0 + i, counting, waker=f"G{g}") for g in range(groups) for i in range(per)]
    for h in parked:
        table.add(h)
    woken = table.wake("T", 0, 1, 7)
    assert len(woken) == groups and asked[0] == groups
    quiet = held("T", 0, 0, 100.0, waker="G0")
    table.add(quiet)
    asked[0] = 0
    table.drop_connection(quiet.conn)
    assert asked[0] == 0 and len(table) == groups * per - groups


def test_requests_answered_early_do_not_pile_up_behind_one_that_waits_long() -> None:
    """Behind one request waiting a day, every request woken before its deadline stayed in the deadline heap
    (20,000 woken POPs: 20,001 entries, 15 MB) until its own deadline."""
    table = HoldTable()
    table.add(held("T", 0, 0, 86_400.0, waker="idle"))
    for i in range(5_000):
        table.add(held("T", 1, i, 3_600.0, waker="busy"))
        assert table.wake("T", 1, i + 1, None)
    assert len(table) == 1 and len(table._deadlines) <= 2 * len(table) + 64
    assert len(table.by_queue) == 1
