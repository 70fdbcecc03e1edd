"""`mq top` in an outage: a view whose read left a broker set out says so, marks what a slave gave, and shows no
trend of a lag that leaves a set out (a partial lag read after whole ones looked like a shrinking backlog)."""

from __future__ import annotations

from mqtools.client.admin.models.groups import ConsumerProgress, GroupSummary, QueueProgress
from mqtools.client.admin.models.live import TopicLine, TopicOverview
from mqtools.client.admin.models.topics import QueueStats, TopicStatus
from mqtools.common.presentation import Unreachable
from mqtools.live import views
from mqtools.live.collect import GroupDetail, TopicDetail
from mqtools.live.state import LiveState, Outcome
from mqtools.remoting.bodies import BrokerData, MessageQueue, QueueData, TopicRouteData

GONE = Unreachable("broker-a", "a0:10911", "timed out; slave a1:10911: timed out")


def state_with(**values: object) -> LiveState:
    state = LiveState()
    for i, (key, value) in enumerate(values.items()):
        state.apply(Outcome(key.replace("__", ":"), value, None, 1000.0 + i, 10.0 + i))
    return state


def test_the_topics_view_names_a_set_it_could_not_read_and_marks_one_read_from_a_slave() -> None:
    overview = TopicOverview([TopicLine("T", "normal", ["broker-b", "broker-c"], 8, 8, 6, 100, 1.0)], [GONE],
                             ["broker-c"])
    table = views.topics(state_with(topics=overview), 20.0)
    assert any(n.startswith("partial: could not read broker-a a0:10911") and "leave it out" in n for n in table.notes)
    assert any("read from a slave" in n and "broker-c" in n for n in table.notes)
    assert table.rows[0].cells[-1].text == "broker-b,broker-c*"


def test_the_topic_drill_down_gives_a_floor_and_names_the_set_left_out() -> None:
    route = TopicRouteData(queue_datas=[QueueData("broker-b", 1, 1)],
                           broker_datas=[BrokerData("C", "broker-b", {1: "b1:10911"})])
    status = TopicStatus("T", [QueueStats(MessageQueue("T", "broker-b", 0), 0, 60, None, "slave")], None, [GONE])
    table = views.topic_detail(state_with(topic__T=TopicDetail(route, status)), "T", 20.0, 0.0)
    assert "at least 60 messages" in table.info[-1]
    assert any(n.startswith("partial: could not read broker-a") for n in table.notes)
    assert table.rows[0].cells[0].text == "broker-b*"


def test_the_group_drill_down_gives_a_floor_of_the_lag() -> None:
    progress = ConsumerProgress("G", [QueueProgress(MessageQueue("T", "broker-b", 0), 60, 0, None)], None, [GONE])
    table = views.group_detail(state_with(group__G=GroupDetail(progress, None)), "G", 20.0, 0.0)
    assert any(line.startswith("lag at least 60") for line in table.info)
    assert any(n.startswith("partial: could not read broker-a") for n in table.notes)


def test_no_lag_trend_across_a_partial_read() -> None:
    whole = GroupSummary("G", 1, None, None, None, None, 120)
    partial = GroupSummary("G", 1, None, None, None, None, 60, unreachable=[GONE])
    state = LiveState()
    state.apply(Outcome("groups", [whole], None, 1000.0, 10.0))
    state.apply(Outcome("groups", [partial], None, 1005.0, 15.0))
    assert state.series_of("lag:G").values() == [120]  # the partial 60 is no point of the series
    trend = views.groups(state, 16.0).value(views.groups(state, 16.0).rows[0], "lagTrend")
    assert trend is None
    state.apply(Outcome("groups", [GroupSummary("G", 1, None, None, None, None, 130)], None, 1010.0, 20.0))
    table = views.groups(state, 21.0)
    assert table.value(table.rows[0], "lagTrend") == 1.0  # whole again: (130 - 120) over 10 s
