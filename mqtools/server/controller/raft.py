"""The controllers' replicated log: pysyncobj's Raft carrying ReplicasInfoManager events.

pysyncobj runs its own thread (ticks, sockets, applying committed entries). Applying takes `lock`, and
readers on the asyncio side take it too, so they never see a half-applied batch. `replicate` is awaited
on the event loop: it resolves when the entries are committed and applied here, or fails when they
cannot be (not leader, no quorum in time) or were dropped when applied (checked against a state that moved
on meanwhile). The log and a periodic snapshot live in the store directory, so a restarted controller comes
back with its metadata.
"""

from __future__ import annotations

import _socket
import asyncio
import os
import socket
import threading
from pathlib import Path

from pysyncobj import FAIL_REASON, SyncObj, SyncObjConf, SyncObjConsumer, replicated
from pysyncobj.syncobj import _RAFT_STATE

from mqtools.server.controller.replicas_info import Event, ReplicasInfoManager

if os.name != "nt":
    # pysyncobj's win_inet_pton puts a Windows-only inet_ntop (WSAAddressToStringA) into the socket module on every
    # OS when it is imported: anything else in the process that formats an address with it (psutil's connections of
    # a process, ...) then raises TypeError. pysyncobj does not call it off Windows.
    socket.inet_ntop = _socket.inet_ntop

_LEADER = _RAFT_STATE.LEADER
#: Seconds without a majority after which a leader steps down.
LEADER_FALLBACK_S = 2.0


class ReplicationError(Exception):
    """Events that were not committed, or committed but dropped as stale: this controller is not (or no
    longer) the leader, or no quorum."""


class _Metadata(SyncObjConsumer):
    """What Raft snapshots: the manager (attributes set after SyncObjConsumer.__init__ are its state)."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        super().__init__()
        self.manager = ReplicasInfoManager()

    @replicated
    def apply_events(self, events: list[Event]) -> int:
        """How many of the events were dropped as stale (see ReplicasInfoManager.apply)."""
        with self._lock:
            return sum(not self.manager.apply(event) for event in events)


class ControllerRaft:
    def __init__(self, self_addr: str, partner_addrs: list[str], store: Path, password: str = "") -> None:
        store.mkdir(parents=True, exist_ok=True)
        self.lock = threading.Lock()
        self._metadata = _Metadata(self.lock)
        conf = SyncObjConf(
            journalFile=str(store / "raft.journal"), fullDumpFile=str(store / "raft.dump"),
            # elections within about a second of a controller's death; snapshots keep the journal short
            raftMinTimeout=0.4, raftMaxTimeout=1.0, appendEntriesPeriod=0.1, connectionTimeout=3.5,
            # an election's entry goes out when it is submitted, not at the next tick: batching (the default)
            # leaves it in the queue up to a tick, and a lone controller commits it only at the tick after,
            # 50-100 ms added to a master's failover in about a third of the runs
            appendEntriesUseBatch=False, autoTickPeriod=0.02,
            # a leader cut off from the majority steps down within 2 s (pysyncobj's default: 30 s), so it
            # does not go on telling brokers and tools that it leads (the partition-controller-leader drill)
            leaderFallbackTimeout=LEADER_FALLBACK_S,
            logCompactionMinEntries=5000, logCompactionMinTime=300, dynamicMembershipChange=False,
            onStateChanged=self._on_state_changed, password=password or None,
        )
        #: The term whose first entry of ours this node has applied as leader (see is_leader).
        self._ready_term = -1
        self._sync = SyncObj(self_addr, partner_addrs, conf=conf, consumers=[self._metadata])

    @property
    def manager(self) -> ReplicasInfoManager:
        return self._metadata.manager

    def is_leader(self) -> bool:
        """Leader, and caught up with the log it inherited: an entry of its own term is applied, so every
        entry an earlier leader committed is applied here too (Raft commits those only with one of the new
        term), and checks see all of them."""
        return self._sync._isLeader() and self._ready_term == self._sync._getTerm()

    def _on_state_changed(self, _old: int, new: int) -> None:
        """pysyncobj's thread, on becoming leader: replicate an empty batch and note its term once applied."""
        if new != _LEADER:
            return
        term = self._sync._getTerm()

        def applied(_result: object, error: int) -> None:
            if error == FAIL_REASON.SUCCESS:
                self._ready_term = term

        self._metadata.apply_events([], callback=applied)

    def leader(self) -> str | None:
        """The leader's Raft address, None while there is none."""
        node = self._sync._getLeader()
        return None if node is None else str(node.address if hasattr(node, "address") else node)

    async def replicate(self, events: list[Event], timeout: float = 5.0) -> None:
        if not events:
            return
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def callback(dropped: object, error: int) -> None:
            def settle() -> None:
                if done.done():
                    return
                if error != FAIL_REASON.SUCCESS:
                    done.set_exception(ReplicationError(_REASONS.get(error, f"pysyncobj error {error}")))
                elif dropped:  # the answer was made from a state the log had left: it must not be given
                    done.set_exception(ReplicationError(f"{dropped} event(s) dropped when applied: checked "
                                                        f"against a state that changed before they committed"))
                else:
                    done.set_result(None)
            loop.call_soon_threadsafe(settle)

        self._metadata.apply_events(events, callback=callback)
        try:
            await asyncio.wait_for(done, timeout)
        except TimeoutError:
            raise ReplicationError(f"not committed within {timeout:g} s (no quorum?)") from None

    def destroy(self) -> None:
        self._sync.destroy()


_REASONS = {
    FAIL_REASON.QUEUE_FULL: "the replication queue is full",
    FAIL_REASON.MISSING_LEADER: "no controller leader",
    FAIL_REASON.DISCARDED: "discarded by a new leader",
    FAIL_REASON.NOT_LEADER: "this controller is not the leader",
    FAIL_REASON.LEADER_CHANGED: "the leader changed",
    FAIL_REASON.REQUEST_DENIED: "denied",
}
