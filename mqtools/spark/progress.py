"""A progress line on the driver while a spark-load job runs: tasks done and messages so far.

Tasks come from Spark's StatusTracker (the job group's stages); messages from a counter the caller
passes, polled from the same thread (for produce: what the brokers have stored since the start, which
is live, where an accumulator would only move when a whole task ends). Off when stdout is not a
terminal or the output is JSON, so pipes and scripts see only the report.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

from mqtools.client.errors import MQClientError

POLL_S = 0.5


class JobProgress:
    """`with JobProgress(spark, tasks, counter, enabled): run the job` (the job must run in this thread)."""

    def __init__(self, spark: Any, tasks: int, counter: Callable[[], int | None] | None, enabled: bool,
                 label: str) -> None:
        self.spark = spark
        self.tasks = tasks
        self.counter = counter
        self.enabled = enabled
        self.label = label
        self.group = f"mq-spark-load-{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        if self.enabled:
            self.spark.sparkContext.setJobGroup(self.group, self.label)
            self._thread = threading.Thread(target=self._run, name="mq-spark-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self.spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # later jobs are not ours

    def done_tasks(self) -> int:
        """Completed tasks over the job group's stages (a stage Spark no longer retains counts as none)."""
        tracker = self.spark.sparkContext.statusTracker()
        done = 0
        for job in tracker.getJobIdsForGroup(self.group):
            info = tracker.getJobInfo(job)
            for stage in info.stageIds if info is not None else ():
                stage_info = tracker.getStageInfo(stage)
                done += stage_info.numCompletedTasks if stage_info is not None else 0
        return min(done, self.tasks)

    def _run(self) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        columns = [TextColumn("{task.description}"), BarColumn(), TextColumn("tasks {task.completed:.0f}/{task.total:.0f}"),
                   TextColumn("{task.fields[messages]}"), TimeElapsedColumn()]
        with Progress(*columns, transient=True) as bar:
            task = bar.add_task(self.label, total=self.tasks, messages="")
            while not self._stop.wait(POLL_S):
                bar.update(task, completed=self.done_tasks(), messages=self._messages())

    def _messages(self) -> str:
        if self.counter is None:
            return ""
        try:
            count = self.counter()
        except MQClientError:  # a failed poll must not end the job; the next one may work
            count = None
        return "messages n/a" if count is None else f"{count:,} messages"
