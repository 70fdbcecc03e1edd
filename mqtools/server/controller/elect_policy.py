"""DefaultElectPolicy: which broker of a broker set becomes master.

Candidates are the alive members of the SyncStateSet (every registered replica too, with
enableElectUncleanMaster). A live old master stays (the caller answers MASTER_STILL_EXIST) unless an
admin named another; a named broker is taken only if it is a live candidate. Otherwise the replica with
the newest data wins: the highest epoch, then the highest max offset, then the lowest electionPriority
(then the lowest id, so the choice does not depend on table order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from mqtools.server.controller.heartbeat import BrokerLiveInfo

LiveInfo = Callable[[int], BrokerLiveInfo | None]
"""brokerId -> its live info, None when it is not alive."""


def elect(sync_state_set: Iterable[int], all_replicas: Iterable[int] | None, old_master: int | None,
          prefer: int | None, live: LiveInfo) -> int | None:
    chosen = _try_elect(sync_state_set, old_master, prefer, live)
    if chosen is None and all_replicas is not None:
        chosen = _try_elect(all_replicas, old_master, prefer, live)
    return chosen


def _try_elect(brokers: Iterable[int], old_master: int | None, prefer: int | None, live: LiveInfo) -> int | None:
    alive = {b: info for b in brokers if (info := live(b)) is not None}
    if not alive:
        return None
    if old_master in alive and (prefer is None or prefer == old_master):
        return old_master
    if prefer is not None:
        return prefer if prefer in alive else None
    return min(alive, key=lambda b: (-alive[b].epoch, -alive[b].max_offset, alive[b].election_priority, b))
