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
