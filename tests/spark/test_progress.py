"""spark-load's progress line counts the job group's finished tasks through Spark's StatusTracker."""

from __future__ import annotations

import time
from typing import Any

from mqtools.spark.progress import JobProgress


def eventually(read: Any, want: int, timeout: float = 30.0) -> int:
    """Spark's StatusTracker hears of finished tasks through its listener bus, after the action returns
    (CI at f0d7083 read 2 of 4 right after collect()): poll until it has, or give its last answer."""
    deadline = time.monotonic() + timeout
    while (got := read()) != want and time.monotonic() < deadline:
        time.sleep(0.05)
    return got


def test_progress_counts_the_jobs_tasks_and_leaves_later_jobs_alone(spark: Any) -> None:
    with JobProgress(spark, 4, lambda: 7, True, "progress test") as progress:
        assert progress.done_tasks() == 0
        rows = spark.range(0, 8, 1, 4).mapInArrow(lambda batches: batches, "id long").collect()  # as spark-load's
        assert sorted(r.id for r in rows) == list(range(8))
        assert eventually(progress.done_tasks, 4) == 4
    assert spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.parallelize(range(2), 2).count()
    assert len(tracker.getJobIdsForGroup(progress.group)) == 1
