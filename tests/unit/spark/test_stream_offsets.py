"""The stream reader's latestOffset over queue bounds that lack a set (its master gone, no node answering): the
positions the query has there are kept, never moved back."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from mqtools.client.errors import TopicNotExistError
from mqtools.remoting.codes import ResponseCode
from mqtools.spark.stream import RocketMQStreamReader


def reader(bounds: dict[tuple[str, int], tuple[int, int]]) -> RocketMQStreamReader:
    r = RocketMQStreamReader({"namesrv": "127.0.0.1:9876", "topic": "T"},
                             {"fail_on_data_loss": True, "security": None}, 1)
    r._bounds = lambda **_: dict(bounds)  # type: ignore[method-assign]
    return r


START: dict[str, Any] = {"broker-a": {"0": 7}, "broker-b": {"0": 4}}


def test_a_set_that_cannot_be_read_keeps_its_position(caplog: pytest.LogCaptureFixture) -> None:
    r = reader({("broker-a", 0): (0, 10)})
    with caplog.at_level("WARNING", logger="mqtools.spark.stream"):
        assert r.latestOffset(START, ReadAllAvailable()) == {"broker-a": {"0": 10}, "broker-b": {"0": 4}}
        r.latestOffset(START, ReadAllAvailable())
    said = "T: 1 queue(s) cannot be read now (broker-b:0); their positions are kept and read from once they answer again"
    assert [m for m in caplog.messages if "cannot be read now" in m] == [said]


def test_available_now_leaves_a_set_missing_at_its_start_where_it_was() -> None:
    r = reader({("broker-a", 0): (0, 10), ("broker-b", 0): (0, 9)})
    r.until = {"broker-a": {"0": 10}}  # broker-b could not be read when the query started
    assert r.latestOffset(START, ReadAllAvailable()) == {"broker-a": {"0": 10}, "broker-b": {"0": 4}}
    assert r.latestOffset({"broker-a": {"0": 7}}, ReadAllAvailable()) == {"broker-a": {"0": 10},
                                                                          "broker-b": {"0": 0}}


def test_the_driver_keeps_one_admin_session_for_the_query(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each micro-batch's planning asked through a new admin session, so a hung set cost every micro-batch an admin
    timeout (5 s) before its positions were kept; the kept session leaves it alone for a while after one. The
    session does not travel with a pickled copy, and stop() closes it."""
    import pickle

    from mqtools.client.admin import sync

    made: list[Any] = []

    class Session:
        def __init__(self, namesrv: str, **_: Any) -> None:
            self.closed = False
            self.queue_offsets = self
            made.append(self)

        def queue_bounds(self, topic: str, *, readable_only: bool = False) -> dict[Any, tuple[int, int]]:
            return {}

        def close(self) -> None:
            self.closed = True

    monkeypatch.setattr(sync, "SyncMQAdmin", Session)
    r = RocketMQStreamReader({"namesrv": "127.0.0.1:9876", "topic": "T"}, {"fail_on_data_loss": True, "security": None}, 1)
    for _ in range(3):
        r.latestOffset(START, ReadAllAvailable())
    assert len(made) == 1
    assert pickle.loads(pickle.dumps(r))._session is None
    r.stop()
    assert made[0].closed and r._session is None


def ranges(r: RocketMQStreamReader, start: dict[str, Any], end: dict[str, Any]) -> list[tuple[str, int, int, int]]:
    return [(q.broker, q.queue_id, q.start, q.end) for p in r.partitions(start, end) for q in p.ranges]  # type: ignore[attr-defined]


def test_a_queue_without_a_position_is_read_from_its_minimum() -> None:
    """A set out of the route when the query started comes back after retention removed its first 500 offsets:
    read from 0 every micro-batch failed with DataLossError (or read past maxOffsetsPerTrigger), as counted it
    starts at its minimum, as Spark's Kafka source starts a new partition at earliest."""
    r = reader({("broker-a", 0): (0, 100), ("broker-b", 0): (500, 800)})
    start = {"broker-a": {"0": 90}}
    end = r.latestOffset(start, ReadAllAvailable())
    assert ranges(r, start, end) == [("broker-a", 0, 90, 100), ("broker-b", 0, 500, 800)]
    capped = r.latestOffset(start, ReadMaxRows(100))
    assert 0 < sum(e - s for _, _, s, e in ranges(r, start, capped)) <= 100  # maxOffsetsPerTrigger holds
    # planned again after a restart (no latestOffset first), or with the set gone again since latestOffset
    assert ranges(reader({("broker-b", 0): (500, 800)}), start, end)[1] == ("broker-b", 0, 500, 800)
    r._bounds = lambda **_: {("broker-a", 0): (0, 100)}  # type: ignore[method-assign]
    assert ranges(r, start, end)[1] == ("broker-b", 0, 500, 800)


def test_partitions_ask_the_brokers_only_for_new_queues() -> None:
    r = reader({})
    r._bounds = lambda **_: pytest.fail("asked the brokers")  # type: ignore[method-assign]
    assert ranges(r, {"broker-a": {"0": 3}}, {"broker-a": {"0": 5}}) == [("broker-a", 0, 3, 5)]


def test_a_topic_without_a_route_keeps_the_positions(caplog: pytest.LogCaptureFixture) -> None:
    """The topic's only set went away (its master gone, no slave): the name servers have no route for it. The query
    keeps its positions and goes on, as with a set of several that left; only a query without positions fails."""
    r = reader({})

    def no_route(**_: Any) -> dict[tuple[str, int], tuple[int, int]]:
        raise TopicNotExistError(ResponseCode.TOPIC_NOT_EXIST, "No topic route info in name server for the topic: T")

    r._bounds = no_route  # type: ignore[method-assign]
    with caplog.at_level("WARNING", logger="mqtools.spark.stream"):
        assert r.latestOffset(START, ReadAllAvailable()) == START
        assert r.latestOffset(START, ReadMaxRows(10)) == START
    assert len([m for m in caplog.messages if "cannot be read now" in m]) == 1
    with pytest.raises(TopicNotExistError):
        r.latestOffset({}, ReadAllAvailable())
    with pytest.raises(TopicNotExistError):
        r.initialOffset()
