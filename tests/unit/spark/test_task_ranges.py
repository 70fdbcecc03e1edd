"""What each read task of the data source reads: small queue ranges together until a task has minRowsPerPartition
rows (Spark's cost per Python task outweighed a micro-batch's rows), minPartitions splitting as before."""

from __future__ import annotations

import pytest

from mqtools.spark.offsets import QueueRange, task_ranges


def _ranges(*sizes: int) -> list[QueueRange]:
    return [QueueRange("T", f"broker-{'ab'[i % 2]}", i // 2, 100, 100 + n) for i, n in enumerate(sizes)]


def _offsets(tasks: list[list[QueueRange]]) -> list[tuple[str, int, int]]:
    return sorted((r.broker, r.queue_id, o) for task in tasks for r in task for o in range(r.start, r.end))


def test_small_ranges_are_read_together_until_a_task_has_its_rows() -> None:
    ranges = _ranges(*[2_500] * 8)  # a micro-batch of 20,000 rows over 8 queues
    tasks = task_ranges(ranges, None, 10_000)
    assert [len(t) for t in tasks] == [4, 4]
    assert [r for t in tasks for r in t] == ranges  # in order, each once


def test_ranges_large_enough_stay_one_a_task_and_empty_ones_ride_along() -> None:
    ranges = _ranges(25_000, 0, 30_000, 10_000)
    assert task_ranges(ranges, None, 10_000) == [[ranges[0]], [ranges[1], ranges[2]], [ranges[3]]]


def test_min_partitions_splits_one_range_a_task_and_a_minimum_of_one_turns_grouping_off() -> None:
    ranges = _ranges(2_500, 2_500)
    split = task_ranges(ranges, 4, 10_000)
    assert len(split) == 4 and all(len(t) == 1 for t in split)
    assert _offsets(split) == _offsets([ranges])
    assert task_ranges(ranges, None, 1) == [[ranges[0]], [ranges[1]]]
    assert task_ranges([], None, 10_000) == []


def test_offsets_naming_a_queue_the_route_has_not_fail_clearly() -> None:
    """A broker set out of the route (its master gone, no slave) or a wrong name: not fewer rows without a word."""
    import json

    from mqtools.spark.offsets import UnknownQueuesError, parse_spec, plan_ranges

    bounds = {("broker-a", 0): (0, 5)}
    start = parse_spec(json.dumps({"broker-a": {"0": 1}, "broker-b": {"0": 3, "1": 0}}), "earliest")
    with pytest.raises(UnknownQueuesError, match="broker-b:0, broker-b:1, which the topic's route does not have"):
        plan_ranges("T", bounds, start, parse_spec("latest", "latest"))
    end = parse_spec(json.dumps({"broker-a": {"0": 4}}), "latest")
    assert [(r.start, r.end) for r in plan_ranges("T", bounds, parse_spec("earliest", "earliest"), end)] == [(0, 4)]
