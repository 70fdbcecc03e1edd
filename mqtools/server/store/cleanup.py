"""Retention: which commitlog files to delete, and the disk-full flag (RocketMQ's
CleanCommitLogService); then the queue units and index files below what is left
(its CleanConsumeQueueService), in ``clean_store``.

Decisions take ``now`` (seconds) and a disk-usage function explicitly so tests drive them with a
fake clock and a fake disk. Files are deleted oldest first, never the last one, and the walk stops
at the first file that is not expired, so the commitlog never gets holes.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from mqtools.common.log_limiter import LimitedLog
from mqtools.server.store.config import MessageStoreConfig
from mqtools.server.store.mapped_file import MappedFile, MappedFileQueue

if TYPE_CHECKING:
    from mqtools.server.store.commitlog import CommitLog
    from mqtools.server.store.consume_queue import ConsumeQueue
    from mqtools.server.store.index import IndexService

log = logging.getLogger(__name__)
#: a disk that cannot be measured stays so for a while: a line a minute
_unmeasured = LimitedLog(log)


def disk_used_ratio(path: Path) -> float:
    """used / (used + available) of the partition holding ``path``, rounded up to a whole percent."""
    try:
        return used_ratio(os.statvfs(path))
    except OSError:
        return -1.0


def used_ratio(st: os.statvfs_result) -> float:
    """RocketMQ's UtilAll.getDiskPartitionSpaceUsedPercent: used / (used + what an unprivileged user may still
    write), rounded up to a whole percent; blocks reserved for root count in neither (-1 for an empty file system)."""
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    avail = st.f_bavail * st.f_frsize
    if used + avail <= 0:
        return -1.0
    return math.ceil(used * 100 / (used + avail)) / 100


def is_time_to_delete(delete_when: str, now: float) -> bool:
    hour = datetime.fromtimestamp(now).hour
    for token in delete_when.split(";"):
        token = token.strip()
        if token.isdigit() and int(token) == hour:
            return True
    return False


class CleanCommitLogService:
    def __init__(self, config: MessageStoreConfig, disk_ratio: Callable[[Path], float]) -> None:
        self.config = config
        #: The partition's used ratio, -1 when it cannot be measured; a stat, so the store calls it off the loop.
        self.disk_ratio = disk_ratio
        self.disk_full = False
        self.last_ratio = 0.0

    def check_disk(self, ratio: float) -> bool:
        """Update the disk-full flag from the measured `ratio`; True when files must go whatever their age: above
        diskSpaceCleanForciblyRatio (or the warning level, which also refuses puts) with cleanFileForciblyEnable,
        as Apache's cleanAtOnce. A ratio that could not be measured (-1) forces nothing: only expired files go,
        as Apache's (a vanished or unmounted directory deleted every young file but the last before)."""
        cfg = self.config
        self.last_ratio = ratio
        if ratio < 0:
            _unmeasured.warning(str(cfg.commit_log_dir), "cannot measure the disk usage of %s: deleting expired "
                                "commitlog files only", cfg.commit_log_dir)
            return False
        if ratio > cfg.disk_space_warning_level_ratio / 100:
            if not self.disk_full:
                log.error("disk usage %.0f%% is above %d%%: refusing puts", ratio * 100,
                          cfg.disk_space_warning_level_ratio)
            self.disk_full = True
            return cfg.clean_file_forcibly_enable
        if self.disk_full:
            log.info("disk usage back to %.0f%%: accepting puts", ratio * 100)
        self.disk_full = False
        return ratio > cfg.disk_space_clean_forcibly_ratio / 100 and cfg.clean_file_forcibly_enable

    def run(self, queue: MappedFileQueue, now: float, ratio: float) -> list[MappedFile]:
        """One pass: take the expired commitlog files out of the queue (the caller destroys them, off the loop)."""
        cfg = self.config
        immediately = self.check_disk(ratio)
        space = ratio < 0 or ratio > cfg.disk_max_used_space_ratio / 100
        if not (is_time_to_delete(cfg.delete_when, now) or space or immediately):
            return []
        reserved_s = cfg.file_reserved_time * 3600
        gone: list[MappedFile] = []
        while len(queue.files) > 1 and len(gone) < cfg.delete_file_batch_max:
            mf = queue.files[0]
            try:
                mtime = mf.path.stat().st_mtime
            except FileNotFoundError:
                mtime = 0.0
            if not (now >= mtime + reserved_s or immediately):
                break
            log.info("deleting commitlog file %s", mf.path.name)
            gone.append(queue.pop_first())
        return gone


def clean_store(cleaner: CleanCommitLogService, commitlog: CommitLog, cqs: Callable[[], Iterable[ConsumeQueue]],
                index: IndexService, now: float, ratio: float) -> list[MappedFile]:
    """One retention pass: CleanCommitLogService's (commitlog files by age / disk usage), then RocketMQ's
    CleanConsumeQueueService's (the queue units and index files below the commitlog's new minimum offset);
    the commitlog files taken out, for the caller to destroy."""
    before = commitlog.min_offset
    gone = cleaner.run(commitlog.queue, now, ratio)
    min_phy = commitlog.min_offset
    if min_phy > before:
        for cq in cqs():
            cq.delete_expired(min_phy)
            cq.correct_min_offset(min_phy)
        index.delete_expired(min_phy)
    return gone
