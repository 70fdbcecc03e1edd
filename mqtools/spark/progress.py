"""A progress line on the driver while a spark-load job runs: tasks done and messages so far.

Tasks come from Spark's StatusTracker (the job group's stages); messages from a counter the caller
passes, polled from the same thread (for produce: what the brokers have stored since the start, which
is live, where an accumulator would only move when a whole task ends: StoredCounter). Off when stdout is not a
terminal or the output is JSON, so pipes and scripts see only the report.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from mqtools.client.errors import MQClientError, UnreachableError

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.sync import LoopThread
    from mqtools.common.security import ClientSecurity
    from mqtools.remoting.bodies import MessageQueue

POLL_S = 0.5
BASELINE_WAIT_S = 1.0
"""How long the job's start waits for the queues' first reads (a healthy broker answers in milliseconds, and a
task sends only seconds after the job starts); one that answers later is counted from its first answer."""


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


class StoredCounter:
    """Messages the brokers stored in a topic since the counter started: each queue from its own first answer.

    Each queue's max offset is read in the background (one read in flight a queue, every POLL_S), and a call only
    adds up what the reads brought, so a hung master never holds up the job or the line: asked in line, its first
    read held the job's start for the admin timeout (5 s), and a read in flight when the job ended held its end up
    to as long. The count is None (n/a) while a counted queue's last read failed (a sum without it went down); a
    queue that has never answered (a master hung from the start) is not counted until it answers. Never below
    what it showed before (a store that went back, an unclean restart). `with StoredCounter(...) as count:`."""

    def __init__(self, namesrv: str, topic: str, security: ClientSecurity | None = None, *,
                 poll: float = POLL_S, baseline_wait: float = BASELINE_WAIT_S) -> None:
        self.namesrv = namesrv
        self.topic = topic
        self.security = security
        self.poll = poll
        self.baseline_wait = baseline_wait
        self._lock = threading.Lock()
        self._base: dict[MessageQueue, int] = {}
        self._latest: dict[MessageQueue, int] = {}
        self._failing: set[MessageQueue] = set()
        self._shown = 0
        self._thread: LoopThread | None = None
        self._admin: MQAdmin | None = None
        self._run: Future[None] | None = None

    def __enter__(self) -> Self:
        from mqtools.client.admin import MQAdmin
        from mqtools.client.sync import LoopThread

        async def make() -> MQAdmin:
            return MQAdmin(self.namesrv, security=self.security)

        self._thread = thread = LoopThread("mq-spark-count")
        try:
            self._admin = thread.run(make())
        except BaseException:
            thread.close()
            raise
        first = threading.Event()
        self._run = thread.submit(self._follow_all(self._admin, first))
        first.wait(self.baseline_wait)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Cancel the reads in flight (a hung broker's too) and close the admin session and its loop."""
        if self._thread is None:
            return
        thread, self._thread = self._thread, None
        if self._run is not None:
            self._run.cancel()  # cancels the task on the loop, before the close below runs there
        try:
            if self._admin is not None:
                thread.run(self._admin.close())
        finally:
            thread.close()

    def __call__(self) -> int | None:
        with self._lock:
            if not self._base or self._failing & self._base.keys():
                return None
            self._shown = max(self._shown, sum(self._latest[mq] - base for mq, base in self._base.items()))
            return self._shown

    async def _follow_all(self, admin: MQAdmin, first: threading.Event) -> None:
        """A reader for each of the topic's queues; the route is read again each period (a master elected at another
        address, a queue added), as the count read it with every poll before. `first` is set once every queue of
        the first route has answered or failed once (at once when the name servers give no route: n/a)."""
        readers: dict[MessageQueue, asyncio.Task[None]] = {}
        try:
            while True:
                try:
                    queues = await admin.queue_offsets.topic_queues(self.topic)
                except MQClientError:  # no route or no name server now: the job says what it finds
                    queues = []
                if not readers:
                    waiting = set(queues)
                    if not waiting:
                        first.set()
                for mq in queues:
                    if mq not in readers:
                        readers[mq] = asyncio.create_task(self._follow(admin, mq, waiting, first))
                await asyncio.sleep(self.poll)
        finally:
            for reader in readers.values():
                reader.cancel()

    async def _follow(self, admin: MQAdmin, mq: MessageQueue, waiting: set[MessageQueue],
                      first: threading.Event) -> None:
        """One queue's max offset, read again each period after the last read ended; its first read's end takes it
        out of `waiting`, the last one's sets `first`."""
        while True:
            try:
                high = await self._max_offset(admin, mq)
            except MQClientError:
                with self._lock:
                    self._failing.add(mq)
            else:
                with self._lock:
                    self._failing.discard(mq)
                    self._base.setdefault(mq, high)
                    self._latest[mq] = high
            if mq in waiting:
                waiting.discard(mq)
                if not waiting:
                    first.set()
            await asyncio.sleep(self.poll)

    @staticmethod
    async def _max_offset(admin: MQAdmin, mq: MessageQueue) -> int:
        """The queue's max offset from its master, or a slave when the master does not answer (a hung broker is
        not asked again for a while: the admin session's silence)."""
        from mqtools.remoting.codes import RequestCode

        failure: UnreachableError | None = None
        for addr in admin.instance.broker_nodes(mq.broker_name):
            try:
                return await admin.queue_offsets.offset_at(addr, mq, RequestCode.GET_MAX_OFFSET)
            except UnreachableError as exc:
                failure = exc
        raise failure or UnreachableError(f"broker {mq.broker_name} has no node in the route of {mq.topic}")
