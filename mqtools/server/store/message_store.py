"""The message store facade: commitlog + consume queues + index, with flushing, recovery and retention.

Final API (what the broker and HA code call)::

    store = MessageStore(config, clock=time.time, disk_ratio=cleanup.disk_used_ratio)
    await store.start()            # lock, load + recover in a worker thread, start flush/clean tasks
    await store.shutdown()         # flush everything, checkpoint, remove abort marker, release lock
    await store.put_message(MessageExtBrokerInner) -> PutMessageResult
    await store.put_messages(MessageExtBatch) -> PutMessageResult   # one write, one queue
    store.put_message_inline(msg) / put_messages_inline(batch)      # the result, or an awaitable when
                                                                    # a flush or slave is waited for
    store.get_message(group, topic, queue_id, offset, max_msg_nums, tag_filter=None,
                      max_total_bytes=None, per_message=True) -> GetMessageResult  # zero-copy memoryviews
    store.get_max_offset_in_queue / get_min_offset_in_queue(topic, queue_id) -> int
    store.get_offset_in_queue_by_time(topic, queue_id, ts_ms) -> int
    store.get_earliest_message_time(topic, queue_id) -> int         # -1 when unknown
    store.get_message_store_timestamp(topic, queue_id, cq_offset) -> int  # -1 when unknown
    store.get_commit_log_offset_in_queue(topic, queue_id, cq_offset) -> int  # 0 when unknown
    store.check_in_disk_by_consume_offset(topic, queue_id, cq_offset) -> bool  # False when unknown
    store.look_message_by_offset(phy_offset, size=None) -> MessageExt | None
    store.select_one_message_by_offset(phy_offset, size=None) -> bytes | None
    store.query_message(topic, key, max_num, begin_ts, end_ts) -> list[MessageExt]  # hash hits only
    store.max_phy_offset / store.min_phy_offset
    store.get_commit_log_data(offset) -> memoryview | None          # rest of that file (HA transfer)
    store.append_to_commit_log(start_offset, data) -> bool          # slave; then dispatch_appended()
    store.add_arrival_listener(cb(topic, queue_id, logic_offset_after, tags_code, store_ts), watching=None)
    store.delete_topics(topics) ; store.topic_queue_ids(topic) -> list[int]
    store.runtime_info() -> dict[str, str]
    store.is_disk_full / store.is_os_page_cache_busy() ; store.ha_hook (see below)
    await store.clean_once(now=None)   # one retention pass (also run every cleanResourceInterval)

``ha_hook`` (a ReplicationHook): a SYNC_MASTER put is first offered to ``refuse_put()`` (controller
mode's minInSyncReplicas), then, unless WAIT is "false", waits through ``when_replicated`` after the flush.
Controller mode also uses ``dispatch_limit``, ``truncate_commit_log`` and ``truncate_torn_tail``.

Results and statuses are in ``results``; the pieces behind the facade: ``dispatch`` (consume
queues, index, listeners, reput), ``encoding`` (put size rules, batch packing), ``put_waits`` (a put's
flush and slave waits), ``store_stats``,
``store_lock``, ``delay_levels``, ``flush``, ``cleanup``, ``recovery``.

Differences from RocketMQ worth knowing: the index is also flushed (and its time recorded in the
checkpoint) by the periodic consume-queue thorough flush, and abnormal recovery always starts
from the oldest of the commitlog/consume-queue/index checkpoint times, so the index is rebuilt
without gaps (RocketMQ does that only with messageIndexSafe=true). A truncated *last* commitlog
file is padded back to full size instead of refusing to start. OS_PAGE_CACHE_BUSY is never
returned: appends hold no lock across an await.

Master puts encode into the commitlog mapping and dispatch (consume queue unit, index keys, arrival
listeners) in the same step; a slave's bytes, controller mode and recovery go through
``DispatchService.reput``, which parses the commitlog and dispatches the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from mqtools.common import properties as P
from mqtools.common import speedups
from mqtools.common.brokerrole import BrokerRole
from mqtools.common.codec import (
    CorruptMessageError,
    batch_entries,
    batch_props_growth,
    decode_stored,
    host_flags,
)
from mqtools.common.message import MessageExt, MessageExtBatch, MessageExtBrokerInner
from mqtools.common.periodic import every, every_in_thread
from mqtools.common.sysflag import HOST_V6_FLAGS, is_consumable
from mqtools.common.topics import SCHEDULE_TOPIC
from mqtools.server.lifecycle import cancel_and_wait
from mqtools.server.store import encoding, recovery
from mqtools.server.store.checkpoint import StoreCheckpoint
from mqtools.server.store.cleanup import CleanCommitLogService, clean_store, disk_used_ratio
from mqtools.server.store.commitlog import CommitLog, EntryTooLarge
from mqtools.server.store.config import MessageStoreConfig
from mqtools.server.store.delay_levels import DelayLevelTable
from mqtools.server.store.dispatch import ArrivalListener, DispatchService, Watching
from mqtools.server.store.flush import GroupCommitService, StoreFlusher, failures
from mqtools.server.store.index import IndexService
from mqtools.server.store.put_waits import PutWaits, ReplicationHook
from mqtools.server.store.reader import QueueReader
from mqtools.server.store.results import (
    DISK_FULL_REMARK,
    GetMessageResult,
    PutMessageResult,
    PutMessageStatus,
)
from mqtools.server.store.store_lock import StoreDirectoryLock
from mqtools.server.store.store_stats import StoreStatsService
from mqtools.server.store.warmer import MappedFileWarmer

log = logging.getLogger(__name__)
#: A master's plain put compiled (_cput.pyx), when it was built and the pure path is not asked for.
_compiled = speedups.compiled("mqtools.server.store._cput")


class MessageStore(PutWaits):
    def __init__(self, config: MessageStoreConfig, *, clock: Callable[[], float] = time.time,
                 disk_ratio: Callable[[Path], float] = disk_used_ratio) -> None:
        self.config = config
        self.clock = clock
        self.commitlog = CommitLog(config.commit_log_dir, config.mapped_file_size_commit_log)
        self.index = IndexService(config.index_dir, config.max_hash_slot_num, config.max_index_num, clock)
        self.dispatcher = DispatchService(config, self.commitlog, self.index,
                                          DelayLevelTable(config.message_delay_level))
        self.reader = QueueReader(config, self.commitlog, self.dispatcher)
        self.cleaner = CleanCommitLogService(config, disk_ratio)
        self.stats = StoreStatsService(clock)
        self.checkpoint: StoreCheckpoint | None = None
        self.flusher: StoreFlusher | None = None
        self.ha_hook: ReplicationHook | None = None
        #: Controller mode's master: the confirm offset, which the consume queues are built up to, so no
        #: consumer reads what an election may lose (RocketMQ 5's readUnCommitted=false).
        self.dispatch_limit: Callable[[], int] | None = None
        self._lock = StoreDirectoryLock(config.root)
        self._group_commit: GroupCommitService | None = None
        self._tasks: list[asyncio.Task] = []
        self._running = False
        self.loaded_abnormally = False

    # ================================================================== lifecycle

    async def start(self) -> None:
        self._lock.acquire()
        try:
            checkpoint = await asyncio.to_thread(self._load_and_recover)
        except BaseException:
            self._lock.release()
            raise
        flusher = self.flusher = StoreFlusher(self.config, self.commitlog, self.dispatcher, self.index,
                                              checkpoint, self.clock)
        if self.config.sync_flush:
            self._group_commit = GroupCommitService(flusher.sync_flush, lambda: self.commitlog.max_offset)
            self._group_commit.start(self.commitlog.flushed_where)
        else:
            self._spawn(every_in_thread(self.config.flush_interval_commit_log / 1000, flusher.async_flush,
                                        "commitlog flush", failures), "commitlog-flush")
        if self.config.warm_mapped_file_enable:
            self.commitlog.warmer = MappedFileWarmer.start_if_supported()
        self._spawn(flusher.consume_queue_loop(), "consume-queue-flush")
        self._spawn(every(self.config.clean_resource_interval / 1000, self.clean_once, "store cleaning", failures),
                    "store-clean")
        self._spawn(self.stats.sample_loop(), "store-tps")
        (self.config.root / "abort").touch()
        self._running = True

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        self._tasks.append(asyncio.create_task(coro, name=name))

    async def shutdown(self) -> None:
        if not self._lock.held:
            return
        self._running = False
        await cancel_and_wait(*self._tasks)
        self._tasks = []
        warmer, self.commitlog.warmer = self.commitlog.warmer, None
        if warmer is not None:
            await asyncio.to_thread(warmer.stop)
        if self._group_commit is not None:
            await self._group_commit.flush_once()
            await self._group_commit.shutdown()
        self.index.write_header()  # waiting single messages indexed here, on the loop's thread
        if self.flusher is not None:
            await asyncio.to_thread(self.flusher.flush_all)
        if not self.cleaner.disk_full and self.dispatcher.reput_offset >= self.commitlog.max_offset:
            with contextlib.suppress(FileNotFoundError):
                (self.config.root / "abort").unlink()
        self._close_files()
        self._lock.release()

    def _close_files(self) -> None:
        self.commitlog.close()
        for cq in self.dispatcher.all_cqs():
            cq.close()
        self.index.close()
        if self.checkpoint is not None:
            self.checkpoint.close()

    # ================================================================== load and recovery

    def _load_and_recover(self) -> StoreCheckpoint:
        """Abnormal when the ``abort`` marker of a run that did not shut down cleanly is still there."""
        abnormal = self.loaded_abnormally = (self.config.root / "abort").exists()
        cp = self.checkpoint = StoreCheckpoint(self.config.root / "checkpoint")
        recovery.load_and_recover(self.config, self.commitlog, self.dispatcher, self.index, cp, abnormal)
        return cp

    # ================================================================== put

    def _check_service(self) -> PutMessageResult | None:
        if not self._running or self.config.is_slave:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, None,
                                    "message store is not running" if not self._running
                                    else "the broker is a slave")
        if self.cleaner.disk_full:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, None,
                                    DISK_FULL_REMARK.format(cl=self.cleaner.last_ratio))
        if self.ha_hook is not None and self.config.broker_role == BrokerRole.SYNC_MASTER:
            why = self.ha_hook.refuse_put()
            if why is not None:
                return PutMessageResult(PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH, None, why)
        return None

    def _illegal(self, status: PutMessageStatus, remark: str) -> PutMessageResult:
        self.stats.put_failures += 1
        return PutMessageResult(status, None, remark)

    def _reserve_failed(self, exc: Exception) -> PutMessageResult:
        """The refusal for a commitlog that could not make room (too large, or no new file)."""
        if isinstance(exc, EntryTooLarge):
            return self._illegal(PutMessageStatus.MESSAGE_ILLEGAL, str(exc))
        self.commitlog.no_room.error("append", "no room in the commitlog: %s", exc)
        return self._illegal(PutMessageStatus.CREATE_MAPPED_FILE_FAILED, str(exc))

    async def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """Stamp, encode into the commitlog, dispatch, then wait for flush / slave as configured."""
        put = self.put_message_inline(msg)
        return put if isinstance(put, PutMessageResult) else await put

    async def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        """A SEND_BATCH_MESSAGE body: all messages in one write to one file, consecutive queue offsets."""
        put = self.put_messages_inline(batch)
        return put if isinstance(put, PutMessageResult) else await put

    def put_message_inline(self, msg: MessageExtBrokerInner) -> PutMessageResult | Awaitable[PutMessageResult]:
        """put_message's append, done now; its result, or what is left to wait for (flush, slave) as an
        awaitable. The send path answers inline without a coroutine per message when nothing waits."""
        if _compiled is not None:
            put = _compiled.put_message(self, msg)  # a running master's plain put (_cput.pyx), else None
            if put is not None:
                return put
        bad = self._check_service()
        if bad is not None:
            return bad
        cfg = self.config
        d = self.dispatcher
        topic_b = msg.topic.encode()
        props_b = msg.encoded_properties().encode()
        refusal = encoding.check_message(topic_b, props_b, len(msg.body), cfg.max_message_size)
        if refusal is not None:
            return self._illegal(*refusal)
        store_host = msg.store_host or cfg.store_host
        sys_flag = (msg.sys_flag & ~HOST_V6_FLAGS) | host_flags(msg.born_host, store_host)
        store_ts = int(self.clock() * 1000)
        if is_consumable(sys_flag) and (why := d.ready(msg.topic, msg.queue_id, 1)):
            return self._illegal(PutMessageStatus.CREATE_MAPPED_FILE_FAILED, why)
        try:
            append = self.commitlog.append_message(msg, topic_b, props_b, sys_flag, store_host, store_ts,
                                                   d.next_offset)
        except (EntryTooLarge, OSError) as exc:
            return self._reserve_failed(exc)
        if self.dispatch_limit is not None:
            self.dispatch_confirmed()
        else:
            tags, keys, uniq = d.unit_values(msg.topic == SCHEDULE_TOPIC, props_b, store_ts)
            d.dispatch(msg.topic, msg.queue_id, append.logics_offset, append.wrote_offset, append.wrote_bytes,
                       sys_flag, store_ts, tags, keys, uniq)
            d.reput_offset = append.end_offset
            d.last_store_ts = store_ts
        msg.store_timestamp, msg.queue_offset, msg.commit_log_offset = store_ts, append.logics_offset, \
            append.wrote_offset
        msg.msg_id = append.msg_id
        self.stats.put_times += 1
        self.stats.put_size += append.wrote_bytes
        return self._settle(append, msg.properties.get(P.WAIT) != "false")

    def put_messages_inline(self, batch: MessageExtBatch, *,
                            defer_dispatch: bool = False) -> PutMessageResult | Awaitable[PutMessageResult]:
        """put_messages as put_message_inline is put_message; `defer_dispatch`: DispatchService.put_batch's later."""
        bad = self._check_service()
        if bad is not None:
            return bad
        topic_b = batch.topic.encode()
        refusal = encoding.check_batch(topic_b, len(batch.body), self.config.max_message_size)
        if refusal is not None:
            return self._illegal(*refusal)
        store_host = batch.store_host or self.config.store_host
        sys_flag = (batch.sys_flag & ~HOST_V6_FLAGS) | host_flags(batch.born_host, store_host)
        try:
            entries = batch_entries(batch.body)
        except ValueError as exc:
            return self._illegal(PutMessageStatus.MESSAGE_ILLEGAL, f"bad batch body: {exc}")
        if not entries:
            return self._illegal(PutMessageStatus.MESSAGE_ILLEGAL, "empty batch")
        # The batch's own properties (CLUSTER and the header's), appended to every message's.
        batch_props = batch.encoded_properties().encode()
        try:
            growth = batch_props_growth(batch.body, entries, len(batch_props))
        except ValueError as exc:
            return self._illegal(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, str(exc))
        total = encoding.batch_stored_size(len(batch.body), len(entries), sys_flag, len(topic_b), growth)
        d = self.dispatcher
        store_ts = int(self.clock() * 1000)
        topic, qid = batch.topic, batch.queue_id
        if is_consumable(sys_flag) and (why := d.ready(topic, qid, len(entries))):
            return self._illegal(PutMessageStatus.CREATE_MAPPED_FILE_FAILED, why)
        try:
            append, units = self.commitlog.append_batch(
                batch, topic_b, sys_flag, store_host, entries, batch_props, total, store_ts, d.next_offset,
                d.unit_values if topic == SCHEDULE_TOPIC else None)
        except (EntryTooLarge, OSError) as exc:
            return self._reserve_failed(exc)
        if self.dispatch_limit is not None:
            self.dispatch_confirmed()
        else:
            d.put_batch(topic, qid, append.logics_offset, sys_flag, store_ts, units, append.end_offset,
                        later=defer_dispatch)
        self.stats.put_times += len(entries)
        self.stats.put_size += total
        return self._settle(append, batch.properties.get(P.WAIT) != "false")

    # ================================================================== retention

    async def clean_once(self, now: float | None = None) -> int:
        """One retention pass (cleanup.clean_store): commitlog files by age / disk usage, then queues and index;
        how many commitlog files went. The disk is measured and the files unmapped and unlinked in a worker
        thread, deleteCommitLogFilesInterval apart as Apache's: on the loop a pass of ten 1 GiB files held every
        request for about 2.5 s."""
        ratio = await asyncio.to_thread(self.cleaner.disk_ratio, self.config.commit_log_dir)
        gone = clean_store(self.cleaner, self.commitlog, self.dispatcher.all_cqs, self.index,
                           self.clock() if now is None else now, ratio)
        for i, mf in enumerate(gone):
            if i:
                await asyncio.sleep(self.config.delete_commit_log_files_interval / 1000)
            await asyncio.to_thread(mf.destroy)
        return len(gone)

    @property
    def is_disk_full(self) -> bool:
        return self.cleaner.disk_full

    def is_os_page_cache_busy(self) -> bool:
        """Appends never hold a lock across an await here, so the page cache is never 'busy'."""
        return False

    # ================================================================== read

    @property
    def max_phy_offset(self) -> int:
        return self.commitlog.max_offset

    @property
    def min_phy_offset(self) -> int:
        return self.commitlog.min_offset

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.dispatcher.cq(topic, queue_id)
        return cq.max_offset if cq is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.dispatcher.cq(topic, queue_id)
        return cq.min_offset if cq is not None else 0

    def topic_queue_ids(self, topic: str) -> list[int]:
        return sorted(self.dispatcher.consume_queues.get(topic, {}))

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, cq_offset: int) -> int:
        cq = self.dispatcher.cq(topic, queue_id)
        unit = cq.unit(cq_offset) if cq is not None else None
        return unit[0] if unit is not None else 0

    def check_in_disk_by_consume_offset(self, topic: str, queue_id: int, cq_offset: int) -> bool:
        return self.reader.check_in_disk_by_consume_offset(topic, queue_id, cq_offset)

    def get_message_store_timestamp(self, topic: str, queue_id: int, cq_offset: int) -> int:
        return self.reader.message_store_timestamp(topic, queue_id, cq_offset)

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        return self.reader.earliest_message_time(topic, queue_id)

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """First queue offset whose store time is >= ``timestamp_ms`` (max offset if none)."""
        return self.reader.offset_in_queue_by_time(topic, queue_id, timestamp_ms)

    def select_one_message_by_offset(self, phy_offset: int, size: int | None = None) -> bytes | None:
        buf = self.commitlog.entry(phy_offset) if size is None else self.commitlog.slice(phy_offset, size)
        return bytes(buf) if buf is not None else None

    def look_message_by_offset(self, phy_offset: int, size: int | None = None) -> MessageExt | None:
        buf = self.commitlog.entry(phy_offset) if size is None else self.commitlog.slice(phy_offset, size)
        if buf is None:
            return None
        try:
            return decode_stored(buf)
        except CorruptMessageError:
            return None

    def query_message(self, topic: str, key: str, max_num: int, begin_ts: int, end_ts: int) -> list[MessageExt]:
        """Messages whose index key hash matches ``topic#key`` in the time range, oldest first."""
        max_num = min(max_num, self.config.max_msgs_num_batch)
        out = []
        for phys in sorted(set(self.index.query(topic, key, max_num, begin_ts, end_ts))):
            msg = self.look_message_by_offset(phys)
            if msg is not None:
                out.append(msg)
        return out

    def get_message(self, group: str, topic: str, queue_id: int, offset: int, max_msg_nums: int,
                    tag_filter: Callable[[int], bool] | None = None,
                    max_total_bytes: int | None = None, per_message: bool = True) -> GetMessageResult:
        """Read up to ``max_msg_nums`` messages of a queue from ``offset`` (RocketMQ's getMessage);
        ``group`` is the caller's consumer group, kept for RocketMQ's signature; ``per_message=False``
        gives the spans alone (QueueReader.get_message)."""
        self.stats.get_times += 1
        result = self.reader.get_message(topic, queue_id, offset, max_msg_nums, tag_filter, max_total_bytes,
                                         per_message)
        self.stats.get_found += result.message_count
        return result

    # ================================================================== HA

    def get_commit_log_data(self, offset: int) -> memoryview | None:
        return self.commitlog.data_from(offset)

    def append_to_commit_log(self, start_offset: int, data: bytes | memoryview) -> bool:
        """Slave: append replicated bytes at exactly the current end; dispatch_appended dispatches them."""
        was_empty = not self.commitlog.queue.files
        if not self.commitlog.append_raw(start_offset, data):
            return False
        if was_empty:
            self.dispatcher.reput_offset = start_offset
        return True

    def dispatch_appended(self) -> None:
        """Slave: the consume queues and index of every complete entry appended (HAClient: after its report)."""
        self.dispatcher.reput()

    def dispatch_confirmed(self) -> int:
        """Build the consume queues and index up to the dispatch limit (everything without one)."""
        limit = self.dispatch_limit() if self.dispatch_limit is not None else None
        return 0 if limit is not None and limit <= self.dispatcher.reput_offset else self.dispatcher.reput(limit)

    def truncate_torn_tail(self) -> int:
        """Cut a last entry that is not whole (a slave's copy ends where its master's last frame did)."""
        end = recovery.scan(self.commitlog, self.dispatcher.reput_offset, False, None)
        return self.truncate_commit_log(end)

    def truncate_commit_log(self, offset: int) -> int:
        """Cut the log at entry boundary `offset`, queues and index with it (recovery.truncate); the bytes
        dropped."""
        return recovery.truncate(self.commitlog, self.dispatcher, self.index, offset)

    def add_arrival_listener(self, cb: ArrivalListener, watching: Watching = None) -> None:
        """`cb` after every message dispatched; with `watching`, only those to the queues in it need the call
        when the put ran on the event loop (the listener still filters a call from elsewhere itself)."""
        self.dispatcher.listeners.append(cb)
        self.dispatcher.watching.append(watching)

    # ================================================================== admin

    def delete_topics(self, topics: set[str]) -> None:
        self.dispatcher.delete_topics(topics)

    def runtime_info(self) -> dict[str, str]:
        ratio = self.cleaner.last_ratio if self.cleaner.last_ratio else disk_used_ratio(self.config.root)
        return self.stats.runtime_info(self.commitlog, self.dispatcher.reput_offset, ratio)
