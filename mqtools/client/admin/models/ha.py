"""Replication in human terms: typed results of `HAAdmin` and the pure computations behind them.

GET_BROKER_HA_STATUS gives a byte diff per slave connection and nothing else. From it, the master's
runtime figures and the slaves' own answers, these models derive what an operator asks: how many
messages the slave lacks, how long it needs to catch up, whether it is falling behind (whether stopping the
master now is safe: `ha_readiness`). The computations are plain functions so they can be tested alone
and reused by drills. As elsewhere, a figure nobody gave is None, never 0 or -1. Their documents are
rendered in `ha_views`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mqtools.client.admin.models.controller import ElectionEvent
from mqtools.client.admin.models.parse import opt_bool, opt_float, opt_int, opt_ms
from mqtools.common.presentation import Unreachable

HA_STATUS = "haStatus"
RUNTIME_INFO = "runtimeInfo"
"""Where a group's figures come from: the master's GET_BROKER_HA_STATUS, or, from brokers without it
(Apache 4.x), each broker's runtime commitLogMaxOffset: a slave's diff is the master's less its own,
both read at the same moment."""


@dataclass(frozen=True, slots=True)
class SlaveConnection:
    """A master's view of one connected slave (HAConnectionRuntimeInfo)."""

    addr: str
    ack_offset: int | None
    """The slave's last acknowledged commitlog offset; None before its first report."""
    diff_bytes: int | None
    in_sync: bool | None
    """None also for an overdue slave: the master cannot tell."""
    transfer_bytes_per_s: float | None
    transfer_from: int | None
    silent_ms: int | None = None
    """How long before the answer the slave last reported (mq's lastReportAgeMs); None when not given."""
    overdue: bool = False
    """The master has heard nothing from the slave for two heartbeat intervals (mq's reportOverdue): hung or cut
    off, still connected until the housekeeping drops it. Its ack and diff are as of its last report."""

    def catch_up(self, bytes_per_s: float | None) -> float | None:
        """catch_up_seconds at that speed; unknown for an overdue slave, whose diff is as of its last report."""
        return None if self.overdue else catch_up_seconds(self.diff_bytes, bytes_per_s)


def silent_slave(ms: int | None) -> str:
    """What a slave silent for `ms` (an overdue one) is, in the words every view uses after its name."""
    silent = "a while" if ms is None else f"{ms / 1000:.1f}s"
    return (f"no HA report to its master for {silent} (a slave reports every heartbeat interval): hung or cut off, "
            "in sync unknown, figures as of its last report")


@dataclass(frozen=True, slots=True)
class HAClientInfo:
    """A slave's view of its replication (HAClientRuntimeInfo)."""

    master_addr: str | None
    max_offset: int | None
    transfer_bytes_per_s: float | None
    last_read_ms: int | None
    last_write_ms: int | None
    master_flush_offset: int | None
    activated: bool | None
    close_reason: str | None = None
    """Why the last connection to its master ended (mq's lastCloseReason); None when not given or none has."""


@dataclass(frozen=True, slots=True)
class HAStatus:
    """GET_BROKER_HA_STATUS (HARuntimeInfo): a master with its slaves, or a slave with its client."""

    is_master: bool
    commitlog_max_offset: int | None
    in_sync_slaves: int | None
    slaves: list[SlaveConnection]
    client: HAClientInfo | None
    """Only for a slave."""
    source: str = HA_STATUS
    """HA_STATUS, or RUNTIME_INFO for a status made of runtime offsets (status_from_offsets)."""

    @classmethod
    def from_json(cls, info: dict[str, Any]) -> HAStatus:
        is_master = opt_bool(info, "master")
        if is_master is None:
            is_master = not info.get("haClientRuntimeInfo")
        slaves = [_slave(c) for c in info.get("haConnectionInfo") or [] if isinstance(c, dict)]
        raw_client = info.get("haClientRuntimeInfo")
        client = None if is_master or not isinstance(raw_client, dict) else HAClientInfo(
            master_addr=raw_client.get("masterAddr") or None,
            max_offset=opt_int(raw_client, "maxOffset"),
            transfer_bytes_per_s=opt_float(raw_client, "transferredByteInSecond"),
            last_read_ms=opt_ms(raw_client, "lastReadTimestamp"),
            last_write_ms=opt_ms(raw_client, "lastWriteTimestamp"),
            master_flush_offset=opt_int(raw_client, "masterFlushOffset"),
            activated=opt_bool(raw_client, "activated"),
            close_reason=str(raw_client.get("lastCloseReason") or "") or None,
        )
        return cls(is_master, opt_int(info, "masterCommitLogMaxOffset"), opt_int(info, "inSyncSlaveNums"), slaves, client)

    @property
    def replicating(self) -> bool:
        """A slave with a live connection to its master; a master with at least one slave."""
        return bool(self.client and self.client.activated) if not self.is_master else bool(self.slaves)


def _slave(raw: dict[str, Any]) -> SlaveConnection:
    """An overdue slave's in-sync state and speed are unknown (None): the master's figures for it are frozen."""
    ack = opt_int(raw, "slaveAckOffset")
    age = opt_int(raw, "lastReportAgeMs")
    overdue = opt_bool(raw, "reportOverdue") is True
    return SlaveConnection(
        addr=str(raw.get("addr") or ""),
        ack_offset=ack if ack is not None and ack >= 0 else None,
        diff_bytes=opt_int(raw, "diff") if ack is not None and ack >= 0 else None,
        in_sync=None if overdue else opt_bool(raw, "inSync"),
        transfer_bytes_per_s=None if overdue else opt_float(raw, "transferredByteInSecond"),
        transfer_from=opt_int(raw, "transferFromWhere"),
        silent_ms=age if age is not None and age >= 0 else None,
        overdue=overdue,
    )


DEFAULT_FALLBEHIND_MAX = 268435456
"""haSlaveFallbehindMax's default: the lag under which a 4.x master counts a slave as in sync."""


def status_from_offsets(master_max: int | None, slaves: Sequence[tuple[str, int | None]]) -> HAStatus:
    """A master's HA status as runtime offsets tell it: one connection per slave that gave its offset."""
    conns = [SlaveConnection(addr, own, None if master_max is None else max(0, master_max - own), None, None, None)
             for addr, own in slaves if own is not None]
    return HAStatus(True, master_max, None, conns, None, RUNTIME_INFO)


def offset_speed(samples: Sequence[tuple[float, int]]) -> float | None:
    """Bytes per second a slave's offset advanced over (seconds, offset) samples; None with fewer than two."""
    if len(samples) < 2 or samples[-1][0] <= samples[0][0]:
        return None
    return max(0, samples[-1][1] - samples[0][1]) / (samples[-1][0] - samples[0][0])


GROWING = "growing"


SHRINKING = "shrinking"


STEADY = "steady"


TREND_MIN_BYTES = 64 * 1024
"""A change in diff smaller than this over the window is noise (one HA transfer batch is 32 KiB)."""


TREND_RELATIVE = 0.1
"""...or smaller than this share of the largest diff seen."""


DEFAULT_MAX_DIFF = 1024 * 1024


DEFAULT_MAX_CATCHUP_S = 10.0


SAFE = "safe"


NOT_SAFE = "not safe"


UNKNOWN = "unknown"


def trend_of(samples: Sequence[tuple[float, int]]) -> str | None:
    """growing / shrinking / steady from (seconds, diff bytes) samples; None with fewer than two.

    The least-squares slope over the window, not first-versus-last, so a single noisy sample under
    load does not flip the answer, while a step (a stopped slave resuming) still shows.
    """
    if len(samples) < 2:
        return None
    n = len(samples)
    mean_t = sum(t for t, _ in samples) / n
    mean_d = sum(d for _, d in samples) / n
    var_t = sum((t - mean_t) ** 2 for t, _ in samples)
    span = samples[-1][0] - samples[0][0]
    if var_t <= 0 or span <= 0:
        return None
    slope = sum((t - mean_t) * (d - mean_d) for t, d in samples) / var_t
    change = slope * span
    tolerance = max(TREND_MIN_BYTES, TREND_RELATIVE * max(abs(d) for _, d in samples))
    if change > tolerance:
        return GROWING
    if change < -tolerance:
        return SHRINKING
    return STEADY


def _diff_over(diff_bytes: int | None, per: float | None) -> float | None:
    """A slave's byte diff over a per-unit figure: 0 when nothing is missing, None (n/a, never infinity)
    when the diff or the figure is unknown or not positive."""
    if diff_bytes is None:
        return None
    if diff_bytes <= 0:
        return 0.0
    if not per or per <= 0:
        return None
    return diff_bytes / per


def catch_up_seconds(diff_bytes: int | None, bytes_per_s: float | None) -> float | None:
    """Diff over transfer speed: 0 when nothing is missing, None (n/a, never infinity) when not moving."""
    return _diff_over(diff_bytes, bytes_per_s)


def diff_messages(diff_bytes: int | None, average_size: float | None) -> int | None:
    """The byte diff as a message count, over the master's average stored message size."""
    count = _diff_over(diff_bytes, average_size)
    return None if count is None else round(count)


def host_of(addr: str | None) -> str | None:
    return None if not addr else addr.rsplit(":", 1)[0]


def pair_slaves(connections: Sequence[tuple[str, int | None]],
                slaves: Sequence[tuple[str, int | None]]) -> list[tuple[int | None, int | None]]:
    """Which registered slave holds which HA connection, as (connection index, slave index) pairs.

    The master only knows each connection's peer address (an ephemeral port), the name server only
    the slaves' broker addresses. Pair by host, then by how close the connection's ack offset is to
    the slave's own max offset. Inputs are (address, offset) pairs; a connection or slave without a
    partner appears with None on the other side.
    """
    free = set(range(len(slaves)))
    pairs: list[tuple[int | None, int | None]] = []
    for ci, (conn_addr, ack) in enumerate(connections):
        same_host = [si for si in free if host_of(slaves[si][0]) == host_of(conn_addr)]
        pool = same_host or (sorted(free) if len(connections) == 1 and len(free) == 1 else [])
        if not pool:
            pairs.append((ci, None))
            continue

        def distance(si: int, ack: int | None = ack) -> tuple[int, int]:
            own = slaves[si][1]
            return (0, abs(own - ack)) if own is not None and ack is not None else (1, si)

        best = min(pool, key=distance)
        free.discard(best)
        pairs.append((ci, best))
    pairs += [(None, si) for si in sorted(free)]
    return pairs


@dataclass(frozen=True, slots=True)
class SlaveView:
    """What a slave broker says about its own replication (its HA client)."""

    broker_addr: str
    broker_id: int | None
    master_ha_addr: str | None
    """The master's HA address the slave follows."""
    max_offset: int | None
    transfer_bytes_per_s: float | None
    last_read_ms: int | None
    last_write_ms: int | None
    connected: bool | None
    error: str | None = None
    """Why the slave could not be asked (stopped, unreachable); its figures are then None."""
    close_reason: str | None = None
    """Why its HA client's last connection ended (mq's lastCloseReason: refused as ahead of its master...)."""


@dataclass(frozen=True, slots=True)
class SlaveReplication:
    """One slave of a master: the master's figures for its connection, derived figures, the slave's view."""

    connection: str | None
    """The HA connection's peer address as the master sees it; None: registered but not connected."""
    ack_offset: int | None
    diff_bytes: int | None
    diff_messages: int | None
    transfer_bytes_per_s: float | None
    catch_up_s: float | None
    """None when the diff is unknown or the transfer speed is 0 (n/a)."""
    in_sync: bool | None
    trend: str | None
    """growing, shrinking or steady over the window; None without two samples."""
    transfer_from: int | None
    samples: list[tuple[float, int]] = field(default_factory=list)
    """(seconds since the first sample, diff bytes) as the master reported them during the window."""
    slave: SlaveView | None = None
    """The slave's own answer; None when no registered slave could be paired with the connection."""
    silent_ms: int | None = None
    """As SlaveConnection's."""
    overdue: bool = False
    """As SlaveConnection's: in_sync, the speed and the catch-up are then None."""


@dataclass(frozen=True, slots=True)
class ControllerState:
    """A controller-mode group as its controllers hold it (the master's controllerAddr names them)."""

    controllers: list[str]
    master_broker_id: int | None
    master_epoch: int | None
    sync_state_set: list[int]
    sync_state_set_epoch: int | None
    error: str | None = None
    """Why the controllers could not be asked; the figures are then None or empty."""
    in_sync_addrs: list[str] = field(default_factory=list)
    """The SyncStateSet's members by address (as they registered with the controllers)."""
    unreachable: list[Unreachable] = field(default_factory=list)
    """The controllers that did not answer (all of them, or the leader the others named): a document of the group
    is partial."""


@dataclass(frozen=True, slots=True)
class ControllerView:
    """What `mq top` shows of a controller-mode group: its state, who leads the controllers, the elections."""

    state: ControllerState
    leader: str | None
    elections: list[ElectionEvent] | None
    """None where the controllers keep no history (Apache's)."""


@dataclass(frozen=True, slots=True)
class ReplicationGroup:
    """A broker group: its master's replication state and every slave, connected or registered."""

    cluster: str | None
    broker_name: str | None
    master_addr: str | None
    """None when no master of the group is registered."""
    role: str | None
    """The master's brokerRole (SYNC_MASTER or ASYNC_MASTER) from its config."""
    max_offset: int | None
    in_sync_slaves: int | None
    average_message_size: float | None
    window_s: float
    slaves: list[SlaveReplication]
    error: str | None = None
    """Why the master could not be asked; its figures are then None."""
    source: str = HA_STATUS
    """HA_STATUS, or RUNTIME_INFO where the master does not answer GET_BROKER_HA_STATUS."""
    controller: ControllerState | None = None
    """Controller mode only (the master's enableControllerMode): master epoch and SyncStateSet."""
    unreachable: list[Unreachable] = field(default_factory=list)
    """The group's registered nodes that did not answer (a hung or dead master or slave): their figures are None,
    and a document of the group is partial."""

    @property
    def from_runtime_info(self) -> bool:
        return self.source == RUNTIME_INFO
