"""The message store facade: commitlog + consume queues + index, with flushing, recovery and retention.

Final API (what the broker and HA code call)::

    store = MessageStore(config, clock=time.time, disk_ratio=cleanup.disk_used_ratio)
    await store.start()            # lock, load + recover in a worker thread, start flush/clean tasks
    await store.shutdown()         # flush everything, checkpoint, remove abort marker, release lock
    await store.put_message(MessageExtBrokerInner) -> PutMessageResult
    await store.put_messages(MessageExtBatch) -> PutMessageResult   # one write, one queue
    store.get_message(group, topic, queue_id, offset, max_msg_nums, tag_filter=None,
                      max_total_bytes=None) -> GetMessageResult      # buffers are zero-copy memoryviews
    store.get_max_offset_in_queue / get_min_offset_in_queue(topic, queue_id) -> int
    store.get_offset_in_queue_by_time(topic, queue_id, ts_ms) -> int
    store.get_earliest_message_time(topic, queue_id) -> int         # -1 when unknown
    store.get_message_store_timestamp(topic, queue_id, cq_offset) -> int  # -1 when unknown
    store.get_commit_log_offset_in_queue(topic, queue_id, cq_offset) -> int  # 0 when unknown
    store.look_message_by_offset(phy_offset, size=None) -> MessageExt | None
    store.select_one_message_by_offset(phy_offset, size=None) -> bytes | None
    store.query_message(topic, key, max_num, begin_ts, end_ts) -> list[MessageExt]  # hash hits only
    store.max_phy_offset / store.min_phy_offset
    store.get_commit_log_data(offset) -> memoryview | None          # rest of that file (HA transfer)
    store.append_to_commit_log(start_offset, data) -> bool          # slave; dispatches complete entries
    store.add_arrival_listener(cb(topic, queue_id, logic_offset_after, tags_code, store_ts))
    store.delete_topics(topics) ; store.topic_queue_ids(topic) -> list[int]
    store.runtime_info() -> dict[str, str]
    store.is_disk_full / store.is_os_page_cache_busy() ; store.ha_hook (see below)
    await store.clean_once(now=None)   # one retention pass (also run every cleanResourceInterval)

``ha_hook``: an object with ``async wait_for_slave(end_offset, timeout_s) -> PutMessageStatus``;
on a SYNC_MASTER every put whose WAIT property is not "false" awaits it after the flush.

Results: ``PutMessageResult(status, append, remark)`` (``remark`` explains refusals, e.g. the disk
full text); ``AppendMessageResult`` adds ``phys_offsets`` / ``store_host`` and a ``msg_ids``
property (every offset id of a batch). ``GetMessageResult.buffers`` are memoryviews into the
mapping: they stay valid after the file is deleted (the mapping lives until they are released).

Differences from RocketMQ worth knowing: the index is also flushed (and its time recorded in the
checkpoint) by the periodic consume-queue thorough flush, and abnormal recovery always starts
from the oldest of the commitlog/consume-queue/index checkpoint times, so the index is rebuilt
without gaps (RocketMQ does that only with messageIndexSafe=true). A truncated *last* commitlog
file is padded back to full size instead of refusing to start. OS_PAGE_CACHE_BUSY is never
returned: appends hold no lock across an await.

Master puts encode straight into the commitlog mapping and dispatch (consume queue unit, index
keys, arrival listeners) in the same synchronous step; a slave's replicated bytes and abnormal
recovery go through ``_reput``, which parses the commitlog and dispatches the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import fcntl
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqtools.server.store import recovery
from mqtools.server.store.checkpoint import StoreCheckpoint
from mqtools.server.store.cleanup import CleanCommitLogService, disk_used_ratio
from mqtools.server.store.commitlog import CommitLog, EntryTooLarge
from mqtools.server.store.config import MessageStoreConfig
from mqtools.server.store.consume_queue import UNIT, UNIT_SIZE, ConsumeQueue
from mqtools.server.store.flush import GroupCommitService, interval_loop, wait_flushed
from mqtools.server.store.index import IndexService

from mqtools.common import properties as P
from mqtools.common.codec import (
    HEADERS,
    MAX_PROPERTIES_LEN,
    CorruptMessageError,
    EntryInfo,
    batch_items,
    body_crc,
    decode_stored,
    host_flags,
    magic_for,
    stored_size,
    topic_props_tail,
    write_stored,
)
from mqtools.common.hashing import tags_code as java_tags_code
from mqtools.common.ids import create_offset_msg_id, host_address_bytes
from mqtools.common.message import MessageExt, MessageExtBatch, MessageExtBrokerInner
from mqtools.common.sysflag import TRANSACTION_MASK, TRANSACTION_ROLLBACK_TYPE, is_consumable

log = logging.getLogger(__name__)

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
BLANK_UNIT_SIZE = 0x7FFFFFFF
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


class PutMessageStatus(enum.Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPPED_FILE_FAILED = "CREATE_MAPPED_FILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGE_CACHE_BUSY = "OS_PAGE_CACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


@dataclass(slots=True)
class AppendMessageResult:
    wrote_offset: int
    wrote_bytes: int
    msg_id: str
    store_timestamp: int
    logics_offset: int
    msg_num: int = 1
    #: Physical offset of every message of a batch (empty for a single put).
    phys_offsets: list[int] = field(default_factory=list)
    store_host: tuple[str, int] | None = None

    @property
    def end_offset(self) -> int:
        return self.wrote_offset + self.wrote_bytes

    @property
    def msg_ids(self) -> list[str]:
        """Offset message id of every message (built on demand: a batch response needs them joined)."""
        if not self.phys_offsets or self.store_host is None:
            return [self.msg_id]
        return [create_offset_msg_id(self.store_host, p) for p in self.phys_offsets]


@dataclass(slots=True)
class PutMessageResult:
    status: PutMessageStatus
    append: AppendMessageResult | None = None
    remark: str = ""

    @property
    def ok(self) -> bool:
        return self.status is PutMessageStatus.PUT_OK


class GetMessageStatus(enum.Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


@dataclass(slots=True)
class GetMessageResult:
    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    buffers: list = field(default_factory=list)
    message_count: int = 0
    buffer_total_size: int = 0
    suggest_pulling_from_slave: bool = False


class StoreLockedError(RuntimeError):
    """Another process holds the store directory."""


DISK_FULL_REMARK = ("service not available now, maybe disk full [CL: {cl:.2f}], messages are put to the slave, "
                    "or the message store has been shut down")


def _delay_table(spec: str) -> list[int]:
    out = []
    for token in spec.split():
        unit = token[-1:].lower()
        if unit in _UNIT_MS and token[:-1].isdigit():
            out.append(int(token[:-1]) * _UNIT_MS[unit])
    return out


def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 << 30


class MessageStore:
    def __init__(self, config: MessageStoreConfig, *, clock: Callable[[], float] = time.time,
                 disk_ratio: Callable[[Path], float] = disk_used_ratio) -> None:
        self.config = config
        self.clock = clock
        self.commitlog = CommitLog(config.commit_log_dir, config.mapped_file_size_commit_log)
        self.index = IndexService(config.index_dir, config.max_hash_slot_num, config.max_index_num, clock)
        self.cleaner = CleanCommitLogService(config, disk_ratio)
        self.checkpoint: StoreCheckpoint | None = None
        self.ha_hook: Any = None
        self.consume_queues: dict[str, dict[int, ConsumeQueue]] = {}
        self._next_offset: dict[tuple[str, int], int] = {}
        self._listeners: list[Callable[[str, int, int, int, int | None], None]] = []
        self._delays = _delay_table(config.message_delay_level)
        self._group_commit: GroupCommitService | None = None
        self._tasks: list[asyncio.Task] = []
        self._lock_fd = -1
        self._running = False
        self.reput_offset = 0
        self.last_store_ts = 0
        self.last_dispatch_ts = 0
        self._in_disk_bytes = _total_memory() * config.access_message_in_memory_max_ratio // 100
        self.stats = {"put_times": 0, "put_size": 0, "put_failures": 0, "get_times": 0, "get_found": 0}
        self._tps_samples: list[tuple[float, int, int]] = []
        self.loaded_abnormally = False
        self._last_thorough = 0.0

    # ================================================================== lifecycle

    async def start(self) -> None:
        self._acquire_lock()
        try:
            await asyncio.to_thread(self._load_and_recover)
        except BaseException:
            self._release_lock()
            raise
        if self.config.sync_flush:
            self._group_commit = GroupCommitService(self._sync_flush, lambda: self.commitlog.max_offset)
            self._group_commit.start(self.commitlog.flushed_where)
        else:
            self._spawn(interval_loop(self.config.flush_interval_commit_log / 1000, self._async_flush,
                                      "commitlog flush"), "commitlog-flush")
        self._spawn(self._cq_flush_loop(), "consume-queue-flush")
        self._spawn(self._clean_loop(), "store-clean")
        self._spawn(self._tps_loop(), "store-tps")
        (self.config.root / "abort").touch()
        self._running = True

    def _spawn(self, coro, name: str) -> None:
        self._tasks.append(asyncio.create_task(coro, name=name))

    async def shutdown(self) -> None:
        if self._lock_fd < 0:
            return
        self._running = False
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._group_commit is not None:
            await self._group_commit.flush_once()
            await self._group_commit.stop()
        await asyncio.to_thread(self._flush_all)
        if not self.cleaner.disk_full and self.reput_offset >= self.commitlog.max_offset:
            with contextlib.suppress(FileNotFoundError):
                (self.config.root / "abort").unlink()
        self._close_files()
        self._release_lock()

    def _acquire_lock(self) -> None:
        root = self.config.root
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(root / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreLockedError(f"store directory {root} is locked by another process "
                                   "(is another broker running on it?)") from None
        os.pwrite(fd, b"lock", 0)
        self._lock_fd = fd

    def _release_lock(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    def _close_files(self) -> None:
        self.commitlog.close()
        for queues in self.consume_queues.values():
            for cq in queues.values():
                cq.close()
        self.index.close()
        if self.checkpoint is not None:
            self.checkpoint.close()

    # ================================================================== load and recovery

    def _load_and_recover(self) -> None:
        cfg = self.config
        abnormal = (cfg.root / "abort").exists()
        self.loaded_abnormally = abnormal
        self.commitlog.load()
        self._load_consume_queues()
        self.checkpoint = StoreCheckpoint(cfg.root / "checkpoint")
        self.index.load(abnormal, self.checkpoint.index_msg_timestamp)
        for cq in self._all_cqs():
            cq.recover()
        if abnormal:
            cp = self.checkpoint
            min_ts = cp.min_timestamp_index if cfg.message_index_enable else cp.min_timestamp
            end = recovery.recover_abnormally(self.commitlog, cfg.check_crc_on_recover, min_ts,
                                              self._dispatch_entry)
        else:
            end = recovery.recover_normally(self.commitlog, cfg.check_crc_on_recover)
        if not self.commitlog.queue.files:
            for cq in self._all_cqs():
                cq.destroy()
            self.consume_queues.clear()
        for cq in self._all_cqs():
            if cq.max_physic_offset > end:
                cq.truncate_dirty(end)
        self.index.truncate_beyond(end)
        max_cq_phy = max((cq.max_physic_offset for cq in self._all_cqs()), default=0)
        self.reput_offset = max(min(max_cq_phy, end), self.commitlog.min_offset)
        self._reput()
        self._rebuild_offset_table()
        min_phy = self.commitlog.min_offset
        for cq in self._all_cqs():
            cq.correct_min_offset(min_phy)

    def _load_consume_queues(self) -> None:
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

    def _rebuild_offset_table(self) -> None:
        self._next_offset = {(cq.topic, cq.queue_id): cq.max_offset for cq in self._all_cqs()}

    def _all_cqs(self) -> list[ConsumeQueue]:
        return [cq for queues in self.consume_queues.values() for cq in queues.values()]

    # ================================================================== dispatch

    def _cq(self, topic: str, queue_id: int, create: bool = False) -> ConsumeQueue | None:
        queues = self.consume_queues.get(topic)
        cq = queues.get(queue_id) if queues is not None else None
        if cq is None and create:
            cq = ConsumeQueue(self.config.consume_queue_dir, topic, queue_id,
                              self.config.mapped_file_size_consume_queue)
            self.consume_queues.setdefault(topic, {})[queue_id] = cq
        return cq

    def _schedule_tags(self, props: dict[str, str], store_ts: int) -> int:
        """Tag code of a SCHEDULE_TOPIC_XXXX unit: when the message becomes due."""
        try:
            level = int(props.get(P.DELAY, "0"))
        except ValueError:
            level = 0
        if self._delays and level > 0:
            return store_ts + self._delays[min(level, len(self._delays)) - 1]
        return store_ts + 1000

    def _dispatch(self, topic: str, queue_id: int, queue_offset: int, phys: int, size: int, sys_flag: int,
                  store_ts: int, tags: int, keys: str | None, uniq: str | None) -> None:
        """Consume queue unit, index keys and arrival notification for one stored message."""
        if is_consumable(sys_flag):
            cq = self._cq(topic, queue_id, create=True)
            if cq.put(phys, size, tags, queue_offset):
                self.last_dispatch_ts = store_ts
                if self._listeners:
                    self._notify(topic, queue_id, queue_offset + 1, tags, store_ts)
        if ((keys or uniq) and self.config.message_index_enable
                and sys_flag & TRANSACTION_MASK != TRANSACTION_ROLLBACK_TYPE):
            self.index.build(topic, keys, uniq, phys, store_ts)

    def _notify(self, topic: str, queue_id: int, offset_after: int, tags: int, store_ts: int) -> None:
        """Arrival listeners run after the message is stored; one failing must not fail the put."""
        for cb in self._listeners:
            try:
                cb(topic, queue_id, offset_after, tags, store_ts)
            except Exception:
                log.exception("arrival listener %r failed", cb)

    def _dispatch_entry(self, e: EntryInfo) -> None:
        tags = self._schedule_tags(e.properties, e.store_timestamp) if e.topic == SCHEDULE_TOPIC else e.tags_code
        self._dispatch(e.topic, e.queue_id, e.queue_offset, e.phys_offset, e.size, e.sys_flag,
                       e.store_timestamp, tags, e.keys, e.uniq_key)
        if is_consumable(e.sys_flag):
            key = (e.topic, e.queue_id)
            if self._next_offset.get(key, 0) <= e.queue_offset:
                self._next_offset[key] = e.queue_offset + 1
        self.last_store_ts = e.store_timestamp

    def _reput(self) -> int:
        """Dispatch every complete entry from ``reput_offset`` to the commitlog end."""
        count = 0
        cl = self.commitlog
        while self.reput_offset < cl.max_offset:
            result, mf = cl.scan(self.reput_offset, False)
            if isinstance(result, EntryInfo):
                self._dispatch_entry(result)
                self.reput_offset += result.size
                count += 1
                if count % 1024 == 0:
                    self.index.write_header()
            elif result == 0 and mf is not None or mf is not None and mf.wrote == mf.size and self.reput_offset >= mf.start + mf.size:
                self.reput_offset = cl.next_file_start(self.reput_offset)
            else:
                break
        self.index.write_header()
        return count

    # ================================================================== put

    def _check_service(self) -> PutMessageResult | None:
        if not self._running or self.config.is_slave:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, None,
                                    "message store is not running" if not self._running
                                    else "the broker is a slave")
        if self.cleaner.disk_full:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, None,
                                    DISK_FULL_REMARK.format(cl=self.cleaner.last_ratio))
        return None

    def _illegal(self, status: PutMessageStatus, remark: str) -> PutMessageResult:
        self.stats["put_failures"] += 1
        return PutMessageResult(status, None, remark)

    async def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """Stamp, encode into the commitlog, dispatch, then wait for flush / slave as configured."""
        bad = self._check_service()
        if bad is not None:
            return bad
        cfg = self.config
        topic_b = msg.topic.encode()
        props_b = msg.encoded_properties().encode()
        if len(topic_b) > 255 or len(topic_b) == 0:
            return self._illegal(PutMessageStatus.MESSAGE_ILLEGAL, f"topic length {len(topic_b)} is illegal")
        if len(props_b) > MAX_PROPERTIES_LEN:
            return self._illegal(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
                                 f"properties length {len(props_b)} exceeds {MAX_PROPERTIES_LEN}")
        if len(msg.body) > cfg.max_message_size:
            return self._illegal(PutMessageStatus.MESSAGE_ILLEGAL,
                                 f"message body size {len(msg.body)} exceeds {cfg.max_message_size}")
        store_host = msg.store_host or cfg.store_host
        sys_flag = (msg.sys_flag & ~0x30) | host_flags(msg.born_host, store_host)
        total = stored_size(sys_flag, len(msg.body), len(topic_b), len(props_b))
        store_ts = int(self.clock() * 1000)
        consumable = is_consumable(sys_flag)
        key = (msg.topic, msg.queue_id)
        qoff = self._next_offset.get(key, 0) if consumable else 0
        try:
            mf, pos = self.commitlog.reserve(total)
        except EntryTooLarge as exc:
            return self._illegal(PutMessageStatus.MESSAGE_ILLEGAL, str(exc))
        except OSError as exc:
            log.error("cannot create a commitlog file: %s", exc)
            return self._illegal(PutMessageStatus.CREATE_MAPPED_FILE_FAILED, str(exc))
        phys = mf.start + pos
        write_stored(mf.mm, pos, msg, total=total, sys_flag=sys_flag, queue_offset=qoff, phys_offset=phys,
                     store_timestamp=store_ts, store_host=store_host, topic=topic_b, properties=props_b)
        mf.wrote = pos + total
        if consumable:
            self._next_offset[key] = qoff + 1
        # dispatch values come from the stored properties bytes, exactly as a slave or recovery sees them
        tag_value, keys, uniq = P.dispatch_values(props_b)
        if msg.topic == SCHEDULE_TOPIC:
            tags = self._schedule_tags(P.string_to_properties(props_b.decode()), store_ts)
        else:
            tags = java_tags_code(tag_value)
        self._dispatch(msg.topic, msg.queue_id, qoff, phys, total, sys_flag, store_ts, tags, keys, uniq)
        self.reput_offset = phys + total
        self.last_store_ts = store_ts
        self.index.write_header()
        msg.store_timestamp, msg.queue_offset, msg.commit_log_offset = store_ts, qoff, phys
        msg.msg_id = create_offset_msg_id(store_host, phys)
        self.stats["put_times"] += 1
        self.stats["put_size"] += total
        append = AppendMessageResult(phys, total, msg.msg_id, store_ts, qoff, 1)
        return PutMessageResult(await self._after_append(append, msg.properties.get(P.WAIT) != "false"), append)

    async def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        """A SEND_BATCH_MESSAGE body: all messages in one write to one file, consecutive queue offsets."""
        bad = self._check_service()
        if bad is not None:
            return bad
        cfg = self.config
        if len(batch.body) > cfg.max_message_size:
            return self._illegal(PutMessageStatus.MESSAGE_ILLEGAL,
                                 f"batch body size {len(batch.body)} exceeds {cfg.max_message_size}")
        topic_b = batch.topic.encode()
        if len(topic_b) > 255 or len(topic_b) == 0:
            return self._illegal(PutMessageStatus.MESSAGE_ILLEGAL, f"topic length {len(topic_b)} is illegal")
        store_host = batch.store_host or cfg.store_host
        sys_flag = (batch.sys_flag & ~0x30) | host_flags(batch.born_host, store_host)
        try:
            items = batch_items(batch.body)
        except ValueError as exc:
            return self._illegal(PutMessageStatus.MESSAGE_ILLEGAL, f"bad batch body: {exc}")
        if not items:
            return self._illegal(PutMessageStatus.MESSAGE_ILLEGAL, "empty batch")
        fixed = stored_size(sys_flag, 0, len(topic_b), 0)
        sizes = [fixed + len(b) + len(p) for _, b, p in items]
        total = sum(sizes)
        try:
            mf, pos = self.commitlog.reserve(total)
        except EntryTooLarge as exc:
            return self._illegal(PutMessageStatus.MESSAGE_ILLEGAL, str(exc))
        except OSError as exc:
            return self._illegal(PutMessageStatus.CREATE_MAPPED_FILE_FAILED, str(exc))
        return await self._write_batch(batch, topic_b, sys_flag, store_host, items, sizes, mf, pos)

    async def _write_batch(self, batch: MessageExtBatch, topic_b: bytes, sys_flag: int, store_host,
                           items, sizes, mf, pos: int) -> PutMessageResult:
        store_ts = int(self.clock() * 1000)
        topic, qid = batch.topic, batch.queue_id
        key = (topic, qid)
        first_qoff = self._next_offset.get(key, 0)
        first_phys = mf.start + pos
        units = self._encode_batch(batch, topic_b, sys_flag, store_host, items, sizes, mf, pos, store_ts,
                                   first_qoff)
        phys = first_phys + sum(sizes)
        mf.wrote = pos + (phys - first_phys)
        self._next_offset[key] = first_qoff + len(items)
        self._dispatch_batch(topic, qid, first_qoff, sys_flag, store_ts, units)
        self.reput_offset = phys
        self.last_store_ts = store_ts
        self.stats["put_times"] += len(items)
        self.stats["put_size"] += phys - first_phys
        append = AppendMessageResult(first_phys, phys - first_phys, create_offset_msg_id(store_host, first_phys),
                                     store_ts, first_qoff, len(items), [u[0] for u in units], store_host)
        return PutMessageResult(await self._after_append(append, batch.properties.get(P.WAIT) != "false"), append)

    def _encode_batch(self, batch: MessageExtBatch, topic_b: bytes, sys_flag: int, store_host, items, sizes,
                      mf, pos: int, store_ts: int, qoff: int) -> list[tuple]:
        """Pack every message of a batch into the mapping; returns per message
        (phys, size, tag code, KEYS, UNIQ_KEY) for dispatch."""
        header = HEADERS[sys_flag & 0x30]
        pack, hsize = header.pack_into, header.size
        magic = magic_for(len(topic_b))
        born_ip, born_port = host_address_bytes(batch.born_host[0]), batch.born_host[1]
        store_ip, store_port = host_address_bytes(store_host[0]), store_host[1]
        born_ts, reconsume, qid = batch.born_timestamp, batch.reconsume_times, batch.queue_id
        tail_head = topic_props_tail(topic_b, b"")[:-2]
        schedule = batch.topic == SCHEDULE_TOPIC
        mm = mf.mm
        phys = mf.start + pos
        units = []
        for (flag, body, props_b), size in zip(items, sizes, strict=True):
            blen = len(body)
            pack(mm, pos, size, magic, body_crc(body), qid, flag, qoff, phys, sys_flag, born_ts, born_ip,
                 born_port, store_ts, store_ip, store_port, reconsume, 0, blen)
            b = pos + hsize
            mm[b:b + blen] = body
            tail = tail_head + len(props_b).to_bytes(2, "big") + props_b
            mm[b + blen:b + blen + len(tail)] = tail
            tag_value, keys, uniq = P.dispatch_values(props_b)
            if schedule:
                tags = self._schedule_tags(P.string_to_properties(props_b.decode()), store_ts)
            else:
                tags = java_tags_code(tag_value)
            units.append((phys, size, tags, keys, uniq))
            pos += size
            phys += size
            qoff += 1
        return units

    def _dispatch_batch(self, topic: str, qid: int, first_qoff: int, sys_flag: int, store_ts: int,
                        units: list[tuple]) -> None:
        """Consume queue units and index keys of a batch; listeners hear about the batch once."""
        if is_consumable(sys_flag):
            self._cq(topic, qid, create=True).put_run(units, first_qoff)
            self.last_dispatch_ts = store_ts
            if self._listeners:
                self._notify(topic, qid, first_qoff + len(units), units[-1][2], store_ts)
        if self.config.message_index_enable and sys_flag & TRANSACTION_MASK != TRANSACTION_ROLLBACK_TYPE:
            self.index.build_many(topic, [(keys, uniq, phys, store_ts) for phys, _, _, keys, uniq in units])
            self.index.write_header()

    async def _after_append(self, append: AppendMessageResult, wait: bool) -> PutMessageStatus:
        """SYNC_FLUSH group commit, then SYNC_MASTER replication (both only when the producer waits)."""
        status = PutMessageStatus.PUT_OK
        gc = self._group_commit
        if gc is not None:
            if wait:
                fut = gc.request(append.end_offset)
                if not fut.done() and not await wait_flushed(fut, self.config.sync_flush_timeout / 1000):
                    log.warning("flush to %d not done within %d ms", append.end_offset,
                                self.config.sync_flush_timeout)
                    status = PutMessageStatus.FLUSH_DISK_TIMEOUT
            else:
                gc.wake()
        if wait and self.config.broker_role == "SYNC_MASTER" and self.ha_hook is not None:
            ha_status = await self.ha_hook.wait_for_slave(append.end_offset, self.config.slave_timeout / 1000)
            if ha_status is not PutMessageStatus.PUT_OK:
                status = ha_status
        return status

    # ================================================================== flush tasks

    def _sync_flush(self) -> int:
        ts = self.last_store_ts
        flushed = self.commitlog.flush(0)
        if flushed >= self.commitlog.max_offset and self.checkpoint is not None:
            self.checkpoint.physic_msg_timestamp = max(self.checkpoint.physic_msg_timestamp, ts)
        return flushed

    def _async_flush(self) -> None:
        cfg = self.config
        now_ms = self.clock() * 1000
        thorough = now_ms - self._last_thorough >= cfg.flush_commit_log_thorough_interval
        if thorough:
            self._last_thorough = now_ms
        if thorough:
            self._sync_flush()
        else:
            self.commitlog.flush(cfg.flush_commit_log_least_pages)

    async def _cq_flush_loop(self) -> None:
        cfg = self.config
        last_thorough = self.clock()
        while True:
            await asyncio.sleep(cfg.flush_interval_consume_queue / 1000)
            thorough = self.clock() - last_thorough >= cfg.flush_consume_queue_thorough_interval / 1000
            if thorough:
                last_thorough = self.clock()
            cqs = self._all_cqs()
            ts = self.last_dispatch_ts
            try:
                await asyncio.to_thread(self._flush_cqs, cqs, thorough, ts)
            except Exception:  # a file closed under the flush (topic deleted) must not end the loop
                log.exception("consume queue flush failed")

    def _flush_cqs(self, cqs: list[ConsumeQueue], thorough: bool, logics_ts: int) -> None:
        least = 0 if thorough else self.config.flush_consume_queue_least_pages
        for cq in cqs:
            cq.flush(least)
        if thorough and self.checkpoint is not None:
            self.checkpoint.logics_msg_timestamp = max(self.checkpoint.logics_msg_timestamp, logics_ts)
            self.checkpoint.index_msg_timestamp = max(self.checkpoint.index_msg_timestamp, self.index.flush())
            self.checkpoint.flush()

    def _flush_all(self) -> None:
        """Shutdown: everything durable and the checkpoint up to date."""
        ts = self.last_store_ts
        self.commitlog.flush(0)
        dispatch_ts = self.last_dispatch_ts
        for cq in self._all_cqs():
            cq.flush(0)
        index_ts = self.index.flush()
        if self.checkpoint is not None:
            cp = self.checkpoint
            cp.physic_msg_timestamp = max(cp.physic_msg_timestamp, ts)
            cp.logics_msg_timestamp = max(cp.logics_msg_timestamp, dispatch_ts)
            cp.index_msg_timestamp = max(cp.index_msg_timestamp, index_ts)
            cp.flush()

    # ================================================================== retention

    async def _clean_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.clean_resource_interval / 1000)
            try:
                await self.clean_once()
            except Exception:  # keep cleaning on later passes
                log.exception("store cleaning failed")

    async def clean_once(self, now: float | None = None) -> int:
        """One retention pass: commitlog files by age / disk usage, then consume queues and index."""
        now = self.clock() if now is None else now
        before = self.commitlog.min_offset
        deleted = self.cleaner.run(self.commitlog.queue, now)
        min_phy = self.commitlog.min_offset
        if min_phy > before:
            for cq in self._all_cqs():
                cq.delete_expired(min_phy)
                cq.correct_min_offset(min_phy)
            self.index.delete_expired(min_phy)
        return deleted

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
        cq = self._cq(topic, queue_id)
        return cq.max_offset if cq is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self._cq(topic, queue_id)
        return cq.min_offset if cq is not None else 0

    def topic_queue_ids(self, topic: str) -> list[int]:
        return sorted(self.consume_queues.get(topic, {}))

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, cq_offset: int) -> int:
        cq = self._cq(topic, queue_id)
        unit = cq.unit(cq_offset) if cq is not None else None
        return unit[0] if unit is not None else 0

    def _store_ts_at(self, phys: int) -> int:
        head = self.commitlog.slice(phys, 76)
        if head is None:
            return -1
        sys_flag = int.from_bytes(head[36:40], "big")
        pos = recovery.STORE_TS_V6 if sys_flag & 0x10 else recovery.STORE_TS_V4
        return int.from_bytes(head[pos:pos + 8], "big", signed=True)

    def get_message_store_timestamp(self, topic: str, queue_id: int, cq_offset: int) -> int:
        cq = self._cq(topic, queue_id)
        unit = cq.unit(cq_offset) if cq is not None else None
        return self._store_ts_at(unit[0]) if unit is not None else -1

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        cq = self._cq(topic, queue_id)
        if cq is None or cq.max_offset <= cq.min_offset:
            return -1
        return self.get_message_store_timestamp(topic, queue_id, cq.min_offset)

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """First queue offset whose store time is >= ``timestamp_ms`` (max offset if none)."""
        cq = self._cq(topic, queue_id)
        if cq is None:
            return 0
        lo, hi = cq.min_offset, cq.max_offset
        while lo < hi:
            mid = (lo + hi) // 2
            ts = self.get_message_store_timestamp(topic, queue_id, mid)
            if 0 <= ts < timestamp_ms:
                lo = mid + 1
            else:
                hi = mid
        return lo

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
        for phys in sorted(self.index.query(topic, key, max_num, begin_ts, end_ts)):
            msg = self.look_message_by_offset(phys)
            if msg is not None:
                out.append(msg)
        return out

    def get_message(self, group: str, topic: str, queue_id: int, offset: int, max_msg_nums: int,
                    tag_filter: Callable[[int], bool] | None = None,
                    max_total_bytes: int | None = None) -> GetMessageResult:
        """Read up to ``max_msg_nums`` messages of a queue from ``offset`` (RocketMQ's getMessage)."""
        self.stats["get_times"] += 1
        cq = self._cq(topic, queue_id)
        if cq is None:
            return GetMessageResult(GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, self._correct(offset, 0), 0, 0)
        lo, hi = cq.min_offset, cq.max_offset
        if hi == 0:
            return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, self._correct(offset, 0), lo, hi)
        if offset < lo:
            return GetMessageResult(GetMessageStatus.OFFSET_TOO_SMALL, self._correct(offset, lo), lo, hi)
        if offset == hi:
            return GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, offset, lo, hi)
        if offset > hi:
            return GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_BADLY,
                                    self._correct(offset, lo if lo == 0 else hi), lo, hi)
        units = cq.units(offset, max(16000 // UNIT_SIZE, max_msg_nums))
        if units is None:
            per_file = cq.file_size // UNIT_SIZE
            return GetMessageResult(GetMessageStatus.OFFSET_FOUND_NULL,
                                    self._correct(offset, offset + per_file - offset % per_file), lo, hi)
        result = self._read_units(units, offset, max_msg_nums, tag_filter, max_total_bytes)
        result.min_offset, result.max_offset = lo, hi
        if result.message_count:
            self.stats["get_found"] += result.message_count
        return result

    def _correct(self, old: int, new: int) -> int:
        """Offset corrections are not applied on a slave unless offsetCheckInSlave."""
        if self.config.is_slave and not self.config.offset_check_in_slave:
            return old
        return new

    def _read_units(self, units: memoryview, offset: int, max_msg_nums: int,
                    tag_filter: Callable[[int], bool] | None, max_total_bytes: int | None) -> GetMessageResult:
        cfg = self.config
        cl = self.commitlog
        max_phy = cl.max_offset
        min_phy = cl.min_offset
        status = GetMessageStatus.NO_MATCHED_MESSAGE
        buffers: list = []
        total = 0
        next_phy_file_start = 0
        in_disk = False
        scanned = 0
        mem_bytes = cfg.max_transfer_bytes_on_message_in_memory
        mem_count = cfg.max_transfer_count_on_message_in_memory
        for phys, size, tags in UNIT.iter_unpack(units):
            if size == BLANK_UNIT_SIZE or phys < next_phy_file_start or phys < min_phy:
                scanned += 1
                continue
            in_disk = max_phy - phys > self._in_disk_bytes
            count = len(buffers)
            if count:
                limit_bytes, limit_count = ((cfg.max_transfer_bytes_on_message_in_disk,
                                             cfg.max_transfer_count_on_message_in_disk) if in_disk
                                            else (mem_bytes, mem_count))
                if (count >= max_msg_nums or count >= limit_count or total + size > limit_bytes
                        or (max_total_bytes is not None and total + size > max_total_bytes)):
                    break
            scanned += 1
            if tag_filter is not None and not tag_filter(tags):
                if not buffers:
                    status = GetMessageStatus.NO_MATCHED_MESSAGE
                continue
            buf = cl.slice(phys, size)
            if buf is None:
                if not buffers:
                    status = GetMessageStatus.MESSAGE_WAS_REMOVING
                next_phy_file_start = cl.next_file_start(phys)
                continue
            buffers.append(buf)
            total += size
        if buffers:
            status = GetMessageStatus.FOUND
        return GetMessageResult(status, offset + scanned, 0, 0, buffers, len(buffers), total, in_disk)

    # ================================================================== HA

    def get_commit_log_data(self, offset: int) -> memoryview | None:
        return self.commitlog.data_from(offset)

    def append_to_commit_log(self, start_offset: int, data) -> bool:
        """Slave: append replicated bytes at exactly the current end, then dispatch complete entries."""
        was_empty = not self.commitlog.queue.files
        if not self.commitlog.append_raw(start_offset, data):
            return False
        if was_empty:
            self.reput_offset = start_offset
        self._reput()
        return True

    def add_arrival_listener(self, cb: Callable[[str, int, int, int, int | None], None]) -> None:
        self._listeners.append(cb)

    # ================================================================== admin

    def delete_topics(self, topics: set[str]) -> None:
        for topic in topics:
            for qid, cq in self.consume_queues.pop(topic, {}).items():
                cq.destroy()
                self._next_offset.pop((topic, qid), None)
            with contextlib.suppress(OSError):
                (self.config.consume_queue_dir / topic).rmdir()

    async def _tps_loop(self) -> None:
        while True:
            self._tps_samples.append((self.clock(), self.stats["put_times"], self.stats["get_found"]))
            del self._tps_samples[:-601]
            await asyncio.sleep(1.0)

    def _tps(self, window_s: float, index: int) -> float:
        samples = self._tps_samples
        if len(samples) < 2:
            return 0.0
        last = samples[-1]
        first = next((s for s in samples if last[0] - s[0] <= window_s), samples[0])
        span = last[0] - first[0]
        return (last[index] - first[index]) / span if span > 0 else 0.0

    def runtime_info(self) -> dict[str, str]:
        cl = self.commitlog
        ratio = self.cleaner.last_ratio if self.cleaner.last_ratio else disk_used_ratio(self.config.root)
        put = " ".join(f"{self._tps(w, 1):.2f}" for w in (10, 60, 600))
        get = " ".join(f"{self._tps(w, 2):.2f}" for w in (10, 60, 600))
        return {
            "commitLogMinOffset": str(cl.min_offset),
            "commitLogMaxOffset": str(cl.max_offset),
            "commitLogDiskRatio": f"{max(ratio, 0.0):.2f}",
            "consumeQueueDiskRatio": f"{max(ratio, 0.0):.2f}",
            "dispatchBehindBytes": str(max(cl.max_offset - self.reput_offset, 0)),
            "putMessageTimesTotal": str(self.stats["put_times"]),
            "putMessageSizeTotal": str(self.stats["put_size"]),
            "putMessageFailedTimes": str(self.stats["put_failures"]),
            "getMessageTimesTotalFound": str(self.stats["get_found"]),
            "putTps": put,
            "getFoundTps": get,
            "pageCacheLockTimeMills": "0",
            "remainHowManyDataToFlush": str(max(cl.max_offset - cl.flushed_where, 0)),
            "commitLogFlushedOffset": str(cl.flushed_where),
        }


