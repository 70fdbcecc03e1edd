"""The open-file limit of mq's servers, raised at start as the JVM raises Apache RocketMQ's.

A broker keeps a descriptor open for every commitlog, consume-queue and index file it has mapped, and one for each
connection, so a broker with a thousand queues in use needs more than the soft limit a login shell or a service
manager gives a process (1,024 on most Linux systems). HotSpot raises its soft limit to the hard one when it starts
(MaxFDLimit, on by default), so Apache's broker never meets the soft one; mq's servers do the same, and a broker
reports how many it holds against the limit in its runtime info, which `diagnose broker` judges.
"""

from __future__ import annotations

import errno
import logging
import os
import resource

log = logging.getLogger(__name__)

#: The soft limit asked for when the hard one is unlimited (Linux's default ceiling for a process, fs.nr_open).
UNLIMITED_TARGET = 1 << 20


def raise_open_files_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard one; the soft limit in force afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = UNLIMITED_TARGET if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:  # a hard limit above what the kernel allows a process
            log.warning("open files limit stays %d: raising it to %d failed: %s", soft, target, exc)
            return soft
        log.info("open files limit raised from %d to %d", soft, target)
        return target
    return soft


def descriptors() -> tuple[int, int] | None:
    """(descriptors open, soft limit) of this process; None where /proc does not say."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    limit = soft if soft != resource.RLIM_INFINITY else UNLIMITED_TARGET
    try:
        held = len(os.listdir("/proc/self/fd")) - 1  # less the one the listing itself opened
    except OSError as exc:
        # at the limit the listing cannot open the directory: that says how many are open
        return (limit, limit) if exc.errno == errno.EMFILE else None
    return held, limit
