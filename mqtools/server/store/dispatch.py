"""From stored commitlog entries to consume queue units, index keys and arrival notifications.

RocketMQ splits this between ReputMessageService (walks the commitlog behind the writer) and the
CommitLogDispatchers (BuildConsumeQueue, BuildIndex). Here a master's put dispatches in the same
synchronous step as its append, so the reput walk (``reput``) only runs for bytes that arrived
another way: a slave's replicated data and abnormal recovery. Both paths take the dispatch values
from the stored properties bytes, so they build identical queues and index.

``DispatchService`` also owns the consume queue table and the next queue offset of every queue
(RocketMQ's CommitLog.topicQueueTable), which the append reads and the dispatch advances.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Container

from mqtools.common import properties as P
from mqtools.common.codec import INT2, MAGIC_V1, MAGIC_V2
from mqtools.common.entry_check import EntryInfo
from mqtools.common.hashing import tags_code as java_tags_code
from mqtools.common.log_limiter import LimitedLog
from mqtools.common.sysflag import TRANSACTION_MASK, TRANSACTION_ROLLBACK_TYPE, is_consumable
from mqtools.common.topics import SCHEDULE_TOPIC
from mqtools.server.store.commitlog import CommitLog
from mqtools.server.store.config import MessageStoreConfig
from mqtools.server.store.consume_queue import ConsumeQueue
from mqtools.server.store.delay_levels import DelayLevelTable, delay_level_of
from mqtools.server.store.encoding import BatchUnit, UnitValues
from mqtools.server.store.index import IndexService

log = logging.getLogger(__name__)

#: The most entries reput takes from the commitlog at once (then the index header is written, as every 1,024).
REPUT_RUN = 1024

#: ``cb(topic, queue_id, logic_offset_after, tags_code, store_ts)`` after a message is dispatched.
ArrivalListener = Callable[[str, int, int, int, int | None], None]
#: The (topic, queue id) keys a listener wants to hear of from the event loop's own puts (the queues it holds
#: requests for, kept up to date by it), or None for every arrival. A put elsewhere calls it regardless.
Watching = Container[tuple[str, int]] | None


class DispatchService:
    def __init__(self, config: MessageStoreConfig, commitlog: CommitLog, index: IndexService,
                 delays: DelayLevelTable) -> None:
        self.config = config
        self.commitlog = commitlog
        self.index = index
        self.delays = delays
        self.consume_queues: dict[str, dict[int, ConsumeQueue]] = {}
        self.next_offset: dict[tuple[str, int], int] = {}
        self.listeners: list[ArrivalListener] = []
        #: Per listener, what it watches (Watching): the compiled put (_cput.pyx) calls them only when one wants
        #: the queue, which under a steady send with no consumer waiting is never.
        self.watching: list[Watching] = []
        #: Everything before this commitlog offset is dispatched.
        self.reput_offset = 0
        #: Where the last reput stopped on an entry that is invalid and not a torn tail still arriving (-1: it did
        #: not): a slave's replica that does not line up with its own log. The HA client stops on it.
        self.invalid_at = -1
        self.last_store_ts = 0
        self.last_dispatch_ts = 0
        #: Batch puts whose dispatch waits until their answer is written (put_batch's `later`).
        self._deferred: list[tuple[str, int, int, int, int, list[BatchUnit], int]] = []
        #: A queue that cannot take units (no file descriptor, no space): logged a line a minute, not one a put.
        self.stalled = LimitedLog(log)

    # ------------------------------------------------------------------ consume queue table

    def cq(self, topic: str, queue_id: int, create: bool = False) -> ConsumeQueue | None:
        queues = self.consume_queues.get(topic)
        cq = queues.get(queue_id) if queues is not None else None
        if cq is None and create:
            cq = ConsumeQueue(self.config.consume_queue_dir, topic, queue_id,
                              self.config.mapped_file_size_consume_queue)
            self.consume_queues.setdefault(topic, {})[queue_id] = cq
        return cq

    def ready(self, topic: str, queue_id: int, count: int) -> str | None:
        """ConsumeQueue.ready for the queue's next `count` units, before an append to it; what stopped it (the
        put's refusal remark), or None."""
        cq = self.cq(topic, queue_id, True)
        assert cq is not None
        try:
            cq.ready(self.next_offset.get((topic, queue_id), 0), count)
        except OSError as exc:
            self.stalled.error("ready", "consume queue %s-%d takes no message: %s", cq.topic, cq.queue_id, exc)
            return f"consume queue {cq.topic}-{cq.queue_id}: {exc}"
        return None

    def all_cqs(self) -> list[ConsumeQueue]:
        return [cq for queues in self.consume_queues.values() for cq in queues.values()]

    def load_consume_queues(self) -> None:
        root = self.config.consume_queue_dir
        if not root.is_dir():
            return
        for topic_dir in sorted(root.iterdir()):
            if not topic_dir.is_dir():
                continue
            for qdir in sorted(topic_dir.iterdir()):
                if qdir.is_dir() and qdir.name.lstrip("-").isdigit():
                    cq = ConsumeQueue(root, topic_dir.name, int(qdir.name),
                                      self.config.mapped_file_size_consume_queue)
                    cq.queue.load()
                    self.consume_queues.setdefault(topic_dir.name, {})[int(qdir.name)] = cq

    def rebuild_offset_table(self) -> None:
        self.next_offset = {(cq.topic, cq.queue_id): cq.max_offset for cq in self.all_cqs()}

    def delete_topics(self, topics: set[str]) -> None:
        for topic in topics:
            for qid, cq in self.consume_queues.pop(topic, {}).items():
                cq.destroy()
                self.next_offset.pop((topic, qid), None)
            with contextlib.suppress(OSError):
                (self.config.consume_queue_dir / topic).rmdir()

    # ------------------------------------------------------------------ dispatch

    def unit_values(self, schedule: bool, props_b: bytes, store_ts: int) -> UnitValues:
        """Tag code, KEYS and UNIQ_KEY from the stored properties bytes, as a slave or recovery
        parses them back; a SCHEDULE_TOPIC_XXXX unit's tag code is when the message becomes due."""
        tag_value, keys, uniq = P.dispatch_values(props_b)
        if schedule:
            props = P.string_to_properties(props_b.decode())
            return self.delays.deliver_timestamp(delay_level_of(props), store_ts), keys, uniq
        return java_tags_code(tag_value), keys, uniq

    def dispatch(self, topic: str, queue_id: int, queue_offset: int, phys: int, size: int, sys_flag: int,
                 store_ts: int, tags: int, keys: str | None, uniq: str | None) -> None:
        """Consume queue unit, index keys and arrival notification for one stored message."""
        if is_consumable(sys_flag):
            cq = self.cq(topic, queue_id, create=True)
            if cq.put(phys, size, tags, queue_offset):
                self.last_dispatch_ts = store_ts
                if self.listeners:
                    self._notify(topic, queue_id, queue_offset + 1, tags, store_ts)
        if ((keys or uniq) and self.config.message_index_enable
                and sys_flag & TRANSACTION_MASK != TRANSACTION_ROLLBACK_TYPE):
            self.index.build(topic, keys, uniq, phys, store_ts)

    def dispatch_batch(self, topic: str, qid: int, first_qoff: int, sys_flag: int, store_ts: int,
                       units: list[BatchUnit]) -> None:
        """Consume queue units and index keys of a batch; listeners hear about the batch once."""
        if is_consumable(sys_flag):
            self.cq(topic, qid, create=True).put_run(units, first_qoff)
            self.last_dispatch_ts = store_ts
            if self.listeners:
                self._notify(topic, qid, first_qoff + len(units), units[-1][2], store_ts)
        if self.config.message_index_enable and sys_flag & TRANSACTION_MASK != TRANSACTION_ROLLBACK_TYPE:
            self.index.build_many(topic, units, store_ts)
            self.index.write_header()

    def put_batch(self, topic: str, qid: int, first_qoff: int, sys_flag: int, store_ts: int, units: list[BatchUnit],
                  end_offset: int, *, later: bool = False) -> None:
        """Dispatch a master's batch put, which ends the commitlog at `end_offset`; `later`: when run_deferred is
        called, which the broker does once the answers of the read that carried the put are written. The
        producer then has its answer while the queue units and index keys (a third of a batch's work) are
        written, as Apache answers before its ReputMessageService dispatches; nothing reads the queues in
        between (the caller defers only the last request of a read, and the write comes next)."""
        if later:
            self._deferred.append((topic, qid, first_qoff, sys_flag, store_ts, units, end_offset))
            return
        self.dispatch_batch(topic, qid, first_qoff, sys_flag, store_ts, units)
        self.reput_offset = end_offset
        self.last_store_ts = store_ts

    def run_deferred(self) -> None:
        """Dispatch the puts put_batch was told to defer, in put order."""
        if not self._deferred:
            return
        work, self._deferred = self._deferred, []
        for item in work:
            try:
                self.put_batch(*item)
            except Exception:
                log.exception("dispatch of the batch put ending at %d failed", item[-1])

    def _notify(self, topic: str, queue_id: int, offset_after: int, tags: int, store_ts: int) -> None:
        """Arrival listeners run after the message is stored; one failing must not fail the put."""
        for cb in self.listeners:
            try:
                cb(topic, queue_id, offset_after, tags, store_ts)
            except Exception:
                log.exception("arrival listener %r failed", cb)

    def dispatch_entry(self, e: EntryInfo) -> None:
        """One entry parsed back from the commitlog (reput, abnormal recovery)."""
        if e.topic == SCHEDULE_TOPIC:
            tags = self.delays.deliver_timestamp(delay_level_of(e.properties), e.store_timestamp)
        else:
            tags = e.tags_code
        self.dispatch(e.topic, e.queue_id, e.queue_offset, e.phys_offset, e.size, e.sys_flag,
                      e.store_timestamp, tags, e.keys, e.uniq_key)
        if is_consumable(e.sys_flag):
            key = (e.topic, e.queue_id)
            if self.next_offset.get(key, 0) <= e.queue_offset:
                self.next_offset[key] = e.queue_offset + 1
        self.last_store_ts = e.store_timestamp

    def reput(self, limit: int | None = None, *, strict: bool = False) -> int:
        """Dispatch every complete entry from ``reput_offset`` to the commitlog end, or to ``limit`` (an entry
        that would end past it waits). An entry whose queue cannot take its unit stops the walk there until the
        next call; `strict` (recovery, which must finish before the store takes puts) raises the OSError."""
        count = 0
        cl = self.commitlog
        end = cl.max_offset if limit is None else min(cl.max_offset, limit)
        self.invalid_at = -1
        while self.reput_offset < end:
            infos, _, why, mf = cl.scan_run(self.reput_offset, end, REPUT_RUN)
            for info in infos:
                try:
                    self.dispatch_entry(info)
                except OSError as exc:  # a queue without a file or blocks: this entry waits for the next reput
                    if strict:
                        raise
                    self.stalled.error("reput", "dispatch stopped at commitlog offset %d: %s", info.phys_offset, exc)
                    self.index.write_header()
                    return count
                self.reput_offset += info.size
                count += 1
            if why == 1:
                if len(infos) < REPUT_RUN:
                    break  # the next entry ends past `end`: it waits
                self.index.write_header()
            elif mf is None:
                break
            elif why == 0 or (mf.wrote == mf.size and self.reput_offset >= mf.start + mf.size):
                # an end-of-file blank record, or the end of a full file: go on in the next file
                self.reput_offset = cl.next_file_start(self.reput_offset)
            else:
                if not _torn_tail(mf.mv, self.reput_offset - mf.start, mf.wrote, mf.size):
                    self.invalid_at = self.reput_offset
                break
        self.index.write_header()
        return count


def _torn_tail(buf: memoryview, pos: int, wrote: int, size: int) -> bool:
    """Whether the invalid entry at `pos` of a file (`wrote` of its `size` bytes written) is only the start of one
    whose rest has not arrived: the end of what is written, or a header whose length still fits the file. A
    replicated log ends so whenever the master's last frame did (frames are not aligned to messages)."""
    avail = wrote - pos
    if avail < INT2.size:
        return True
    total, magic = INT2.unpack_from(buf, pos)
    return magic in (MAGIC_V1, MAGIC_V2) and avail < total <= size - pos
