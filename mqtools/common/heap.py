"""The cyclic garbage collector's settings for mq's long-lived processes.

CPython collects its youngest generation every 700 net new container objects. A broker under load
allocates that many in well under a millisecond (commands, futures, results), so with the defaults a
SYNC_MASTER under 64 Java-style senders spent about 5% of its CPU in the collector: some 2,200 young
collections and 17 full ones in 11 s, each full one a pause of the event loop across every object the
broker holds (topic tables, queues, configs). Nearly all of those objects die by reference counting; the
collector is there for the few cycles, which can wait longer.
"""

from __future__ import annotations

import gc

#: Collect the young generation every 50,000 net new containers instead of 700, the middle one every 20
#: of those, the old one every 100 of the middle's (and only when it has grown by a quarter, CPython's own
#: rule).
GC_THRESHOLDS = (50_000, 20, 100)


def settle_heap() -> None:
    """For a server that has loaded its state and is about to serve: what it holds now lives as long as the
    process, so it is collected once and frozen (never scanned again), and later collections are rarer."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
