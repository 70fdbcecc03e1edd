"""The commitlog: every message of every topic, appended to one mapped-file queue.

`append_message` and `append_batch` write entries straight into the mapping (RocketMQ's
CommitLog.putMessage with its DefaultAppendMessageCallback): `reserve` finds room (writing
RocketMQ's end-of-file blank record and rolling to a new file when the entry plus 8 spare bytes
does not fit), the entry is packed there, the file's write position advances and the queue
offset comes from, and advances, the topic-queue table the caller passes. The result says where
each message went; the store dispatches from it. Everything runs on the event loop between two
awaits, which is what RocketMQ's append lock guarantees.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from mqtools.common.codec import (
    BLANK,
    BLANK_MAGIC,
    END_FILE_MIN_BLANK_LENGTH,
    INT,
    stored_size,
    write_stored,
)
from mqtools.common.entry_check import EntryInfo, check_entries, check_entry, walk_sizes
from mqtools.common.ids import create_offset_msg_id
from mqtools.common.log_limiter import LimitedLog
from mqtools.common.message import Host, MessageExtBatch, MessageExtBrokerInner
from mqtools.common.sysflag import is_consumable
from mqtools.server.store import encoding
from mqtools.server.store.encoding import BatchUnit, UnitValues
from mqtools.server.store.mapped_file import MappedFile, MappedFileQueue
from mqtools.server.store.results import AppendMessageResult
from mqtools.server.store.warmer import MappedFileWarmer

#: The topic-queue table: (topic, queue id) -> the next queue offset (RocketMQ's topicQueueTable).
QueueOffsets = dict[tuple[str, int], int]

log = logging.getLogger(__name__)


#: The commitlog's blocks are allocated this far ahead of its appends (MappedFile.ensure): a filesystem call per
#: 4 MiB of messages.
RESERVE_CHUNK = 4 << 20
#: Appends are refused (CREATE_MAPPED_FILE_FAILED, ENOSPC) once the commitlog's filesystem would be left with less
#: than this: room for the consume queue and index pages the messages written meanwhile need (a few percent of
#: their bytes), whose writes have no check of their own.
KEEP_FREE = 64 << 20


class EntryTooLarge(ValueError):
    """The entry can never fit in one commitlog file."""


class CommitLog:
    def __init__(self, directory: Path, file_size: int) -> None:
        self.queue = MappedFileQueue(directory, file_size)
        self.file_size = file_size
        self.warmer: MappedFileWarmer | None = None
        """Set while the store runs where pages can be populated ahead of the appends."""
        self.no_room = LimitedLog(log)
        """A full disk refuses every append: a line a minute of each kind says so, not one a message."""

    def load(self) -> None:
        self.queue.load()

    # ------------------------------------------------------------------ offsets

    @property
    def max_offset(self) -> int:
        return self.queue.max_offset

    @property
    def min_offset(self) -> int:
        return self.queue.min_offset

    @property
    def flushed_where(self) -> int:
        return self.queue.flushed_where

    # ------------------------------------------------------------------ append

    def reserve(self, total: int) -> tuple[MappedFile, int]:
        """(file, position) where ``total`` bytes can be written; rolls with a blank record if needed."""
        if total + END_FILE_MIN_BLANK_LENGTH > self.file_size:
            raise EntryTooLarge(f"entry of {total} bytes cannot fit a {self.file_size}-byte commitlog file")
        mf = self.queue.last_writable()
        free = mf.free()
        if total + END_FILE_MIN_BLANK_LENGTH > free:
            mf.ensure(mf.wrote + BLANK.size, RESERVE_CHUNK, KEEP_FREE)
            BLANK.pack_into(mf.mm, mf.wrote, free, BLANK_MAGIC)
            mf.wrote = mf.size
            mf = self.queue.last_writable()
        pos = mf.wrote
        mf.ensure(pos + total, RESERVE_CHUNK, KEEP_FREE)
        self._warm(mf, pos)
        return mf, pos

    def _warm(self, mf: MappedFile, pos: int) -> None:
        """Ask the warmer for the pages ahead of `pos` once the write passes its mark (one comparison)."""
        warmer = self.warmer
        if warmer is not None and (pos > warmer.due or mf is not warmer.file):
            warmer.request(mf, pos)

    def append_message(self, msg: MessageExtBrokerInner, topic_b: bytes, props_b: bytes, sys_flag: int,
                       store_host: Host, store_ts: int, queue_offsets: QueueOffsets) -> AppendMessageResult:
        """One entry at the end; a message consumers never see (a prepared or rolled-back transaction
        half) takes no queue offset. EntryTooLarge or OSError when no room can be made."""
        total = stored_size(sys_flag, len(msg.body), len(topic_b), len(props_b))
        consumable = is_consumable(sys_flag)
        key = (msg.topic, msg.queue_id)
        qoff = queue_offsets.get(key, 0) if consumable else 0
        mf, pos = self.reserve(total)
        phys = mf.start + pos
        write_stored(mf.mm, pos, msg, total=total, sys_flag=sys_flag, queue_offset=qoff, phys_offset=phys,
                     store_timestamp=store_ts, store_host=store_host, topic=topic_b, properties=props_b)
        mf.wrote = pos + total
        if consumable:
            queue_offsets[key] = qoff + 1
        return AppendMessageResult(phys, total, create_offset_msg_id(store_host, phys), store_ts, qoff, 1)

    def append_batch(self, batch: MessageExtBatch, topic_b: bytes, sys_flag: int, store_host: Host,
                     entries: list[tuple[int, int, int, int]], batch_props: bytes, total: int, store_ts: int,
                     queue_offsets: QueueOffsets, schedule_values: Callable[[bool, bytes, int], UnitValues] | None
                     ) -> tuple[AppendMessageResult, list[BatchUnit]]:
        """A batch body's messages in one write to one file, consecutive queue offsets; what dispatch
        needs of each message comes back with the result."""
        mf, pos = self.reserve(total)
        first_phys = mf.start + pos
        key = (batch.topic, batch.queue_id)
        first_qoff = queue_offsets.get(key, 0)
        units = encoding.encode_batch(mf.mm, pos, first_phys, batch, topic_b, sys_flag, store_host, entries,
                                      store_ts, first_qoff, batch_props, schedule_values)
        mf.wrote = pos + total
        queue_offsets[key] = first_qoff + len(entries)
        return AppendMessageResult(first_phys, total, create_offset_msg_id(store_host, first_phys), store_ts,
                                   first_qoff, len(entries), [u[0] for u in units], store_host), units

    def append_raw(self, start_offset: int, data) -> bool:
        """Replicated bytes from a master: accepted only at exactly the current end, or, for an empty
        commitlog, at a file boundary (a new slave starts at the master's last file). False when refused, or when
        no room can be made (a full disk: what was copied before stays, the HA connection closes and the slave asks
        again from its end)."""
        try:
            return self._append_raw(start_offset, data)
        except OSError as exc:
            self.no_room.error("replica", "cannot append replicated data at %d: %s", start_offset, exc)
            return False

    def _append_raw(self, start_offset: int, data) -> bool:
        empty = not self.queue.files
        if empty and start_offset % self.file_size == 0:
            self.queue.create_file(start_offset)
        elif start_offset != self.max_offset:
            log.warning("replicated data at %d but commitlog ends at %d: rejected", start_offset, self.max_offset)
            return False
        mv = memoryview(data)
        while len(mv):
            mf = self.queue.last_writable(start_offset)
            self._warm(mf, mf.wrote)  # a slave's appends fault as a master's would: off its loop too
            n = min(len(mv), mf.free())
            mf.ensure(mf.wrote + n, RESERVE_CHUNK, KEEP_FREE)
            mf.mm[mf.wrote:mf.wrote + n] = mv[:n]
            mf.wrote += n
            mv = mv[n:]
        return True

    # ------------------------------------------------------------------ read

    def slice(self, offset: int, size: int) -> memoryview | None:
        """Zero-copy view of ``size`` written bytes at ``offset`` (None if absent or not written)."""
        view = self.file_view(offset)
        if view is None:
            return None
        start, written, mv = view
        pos = offset - start
        if pos + size > written:
            return None
        return mv[pos:pos + size]

    def file_view(self, offset: int) -> tuple[int, int, memoryview] | None:
        """The file holding ``offset``: its start offset, its bytes written so far and its mapping. A pull
        reads its messages through one of these while they stay in the file, not a lookup per message."""
        mf = self.queue.find(offset)
        if mf is None or mf.closed:
            return None
        return mf.start, mf.wrote, mf.mv

    def entry(self, offset: int) -> memoryview | None:
        """The whole stored entry at ``offset``, using its TOTALSIZE."""
        head = self.slice(offset, 4)
        if head is None:
            return None
        size = INT.unpack_from(head)[0]
        if size <= 0:
            return None
        return self.slice(offset, size)

    def data_from(self, offset: int) -> memoryview | None:
        """Bytes from ``offset`` to the end of what is written in that file (HA transfer)."""
        mf = self.queue.find(offset)
        if mf is None or mf.closed:
            return None
        pos = offset - mf.start
        if pos >= mf.wrote:
            return None
        return mf.mv[pos:mf.wrote]

    def next_file_start(self, offset: int) -> int:
        return offset - offset % self.file_size + self.file_size

    def scan(self, offset: int, check_crc: bool):
        """Check the entry at ``offset``: (EntryInfo | 0 blank | -1 invalid, file or None)."""
        mf = self.queue.find(offset)
        if mf is None:
            return -1, None
        pos = offset - mf.start
        return check_entry(mf.mv[:mf.wrote] if mf.wrote < mf.size else mf.mv, pos, check_crc), mf

    def scan_run(self, offset: int, end: int, max_count: int) -> tuple[list[EntryInfo], int, int, MappedFile | None]:
        """Like scan, entry after entry within one file, the entries ending by ``end`` (entry_check.check_entries,
        no CRC check): those entries, where the walk stopped, check_entries' reason there, and the file."""
        mf = self.queue.find(offset)
        if mf is None:
            return [], offset, -1, None
        infos, stop, why = check_entries(mf.mv[:mf.wrote] if mf.wrote < mf.size else mf.mv, offset - mf.start,
                                         end - mf.start, False, max_count)
        return infos, mf.start + stop, why, mf

    def walk_sizes(self, offset: int, check_crc: bool) -> tuple[int, int, MappedFile | None]:
        """Like scan, entry after entry within one file, sizes only (normal recovery: nothing is dispatched):
        where the walk stopped, entry_check.walk_sizes' answer there (0 a blank record, -1 invalid or the end of what
        is written), and the file."""
        mf = self.queue.find(offset)
        if mf is None:
            return offset, -1, None
        end, result = walk_sizes(mf.mv[:mf.wrote] if mf.wrote < mf.size else mf.mv, offset - mf.start, check_crc)
        return mf.start + end, result, mf

    def flush(self, least_pages: int = 0) -> int:
        return self.queue.flush(least_pages)

    def close(self) -> None:
        self.queue.close()
