"""BrokerHeartbeatManager: which brokers of which broker sets are alive, from their BROKER_HEARTBEATs.

Sans-IO: times are passed in (ms) and channels are opaque objects. Every controller keeps its own table
(heartbeats go to all of them), so a new Raft leader knows at once who is alive. A broker is gone when
its connection closes (at once) or when it sends nothing for its own heartbeat timeout. A master this
table has no heartbeat from is judged dead only once the table has listened for its set's heartbeat timeout:
a controller that has just started, or that has just dropped brokers for expiry (one hung longer than the
timeout drops every broker at once when it resumes), may not have had the master's next heartbeat yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mqtools.remoting.controller import (
    DEFAULT_HEARTBEAT_TIMEOUT_MS,
    LOWEST_ELECTION_PRIORITY,
    BrokerHeartbeatRequestHeader,
)

#: (clusterName, brokerName, brokerId)
BrokerKey = tuple[str, str, int]


@dataclass(slots=True)
class BrokerLiveInfo:
    cluster_name: str
    broker_name: str
    broker_id: int
    broker_addr: str
    channel: Any
    last_update: int
    heartbeat_timeout_ms: int
    epoch: int = -1
    max_offset: int = -1
    confirm_offset: int = -1
    election_priority: int = LOWEST_ELECTION_PRIORITY

    @property
    def key(self) -> BrokerKey:
        return self.cluster_name, self.broker_name, self.broker_id

    def expired(self, now: int) -> bool:
        return now - self.last_update > self.heartbeat_timeout_ms


class BrokerHeartbeatManager:
    def __init__(self, started_ms: int) -> None:
        self._live: dict[BrokerKey, BrokerLiveInfo] = {}
        #: Since when every live broker has had its heartbeat timeout to be heard: the controller's start, or the
        #: last scan that dropped brokers for expiry.
        self.listening_since_ms = started_ms

    def on_heartbeat(self, header: BrokerHeartbeatRequestHeader, channel: Any, now: int) -> BrokerLiveInfo:
        """Record a heartbeat (brokerId must be set). The figures move forward only: a newer epoch, or a
        larger max offset in the same epoch, so a late heartbeat cannot make a replica look behind."""
        assert header.broker_id is not None
        key = (header.cluster_name, header.broker_name, header.broker_id)
        epoch = -1 if header.epoch is None else header.epoch
        max_offset = -1 if header.max_offset is None else header.max_offset
        confirm = -1 if header.confirm_offset is None else header.confirm_offset
        timeout = header.heartbeat_timeout_mills or DEFAULT_HEARTBEAT_TIMEOUT_MS
        priority = LOWEST_ELECTION_PRIORITY if header.election_priority is None else header.election_priority
        info = self._live.get(key)
        if info is None or info.channel is not channel:  # new, or back on another connection
            info = BrokerLiveInfo(*key, header.broker_addr, channel, now, timeout, epoch, max_offset, confirm, priority)
            self._live[key] = info
            return info
        info.last_update, info.heartbeat_timeout_ms, info.election_priority = now, timeout, priority
        if epoch > info.epoch or epoch == info.epoch and max_offset > info.max_offset:
            info.epoch, info.max_offset, info.confirm_offset = epoch, max_offset, confirm
        return info

    def is_active(self, cluster: str, broker_name: str, broker_id: int, now: int) -> bool:
        info = self._live.get((cluster, broker_name, broker_id))
        return info is not None and not info.expired(now)

    def live_info(self, cluster: str, broker_name: str, broker_id: int) -> BrokerLiveInfo | None:
        return self._live.get((cluster, broker_name, broker_id))

    def alive_in(self, cluster: str, broker_name: str, now: int) -> list[BrokerLiveInfo]:
        return [i for k, i in self._live.items() if k[:2] == (cluster, broker_name) and not i.expired(now)]

    def master_gone(self, cluster: str, broker_name: str, master_id: int, now: int) -> bool:
        """Whether a set's master is to be replaced: it is not alive while another member is, and this table
        has listened for longer than the longest heartbeat timeout of those (the master's own is not known when
        it never heartbeated here), so a master that was alive would have been heard from by now."""
        alive = self.alive_in(cluster, broker_name, now)
        if not alive or any(info.broker_id == master_id for info in alive):
            return False
        return now - self.listening_since_ms > max(info.heartbeat_timeout_ms for info in alive)

    def next_expiry(self) -> int | None:
        """The first time (ms) at which a broker tracked now would have timed out, if it sends nothing before."""
        return min((i.last_update + i.heartbeat_timeout_ms + 1 for i in self._live.values()), default=None)

    def scan(self, now: int) -> list[BrokerLiveInfo]:
        """Drop and return the brokers whose heartbeat timed out. Any drop restarts the listening: when this
        controller was hung (not they), its resumed scan drops live masters too, and their next heartbeat is
        still to come."""
        gone = [info for info in self._live.values() if info.expired(now)]
        for info in gone:
            del self._live[info.key]
        if gone:
            self.listening_since_ms = now
        return gone

    def on_channel_close(self, channel: Any) -> list[BrokerLiveInfo]:
        """Drop and return the brokers that heartbeated on this connection."""
        gone = [info for info in self._live.values() if info.channel is channel]
        for info in gone:
            del self._live[info.key]
        return gone

    def forget(self, broker_name: str, broker_ids: set[int] | None) -> None:
        """CLEAN_BROKER_DATA: no longer track these brokers (all of the set with None)."""
        for key in [k for k in self._live if k[1] == broker_name]:
            if broker_ids is None or key[2] in broker_ids:
                del self._live[key]
