"""The stream reader's latestOffset over queue bounds that lack a set (its master gone, no node answering): the
positions the query has there are kept, never moved back."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

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
