"""Is it safe to stop a group's master now? The verdict on a `ReplicationGroup` (models/ha.py), the checks behind it
and what stopping the master would cost: plain functions, so drills and tests call them alone."""

from __future__ import annotations

from dataclasses import dataclass

from mqtools.client.admin.models.ha import (
    DEFAULT_MAX_CATCHUP_S,
    DEFAULT_MAX_DIFF,
    GROWING,
    NOT_SAFE,
    SAFE,
    UNKNOWN,
    ControllerState,
    ReplicationGroup,
    SlaveReplication,
    silent_slave,
)


@dataclass(frozen=True, slots=True)
class Check:
    """One reason behind a readiness verdict; `ok` None means information, not a condition."""

    name: str
    ok: bool | None
    detail: str


@dataclass(frozen=True, slots=True)
class HAReadiness:
    """Is it safe to stop this group's master now? The verdict, its reasons and every input figure."""

    broker_name: str
    verdict: str
    """safe, not safe or unknown."""
    checks: list[Check]
    max_diff: int
    max_catchup_s: float
    group: ReplicationGroup | None
    slave: SlaveReplication | None = None
    """The slave the verdict rests on (the first that passes, else the closest one)."""
    loss_bytes: int | None = None
    """What stopping the master now could lose: 0 for SYNC_MASTER with an in-sync slave, else the diff."""
    loss_messages: int | None = None

    @property
    def safe(self) -> bool | None:
        return None if self.verdict == UNKNOWN else self.verdict == SAFE


def _mb(n: int) -> str:
    return f"{n} bytes" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MiB ({n} bytes)"


def slave_checks(group: ReplicationGroup, s: SlaveReplication, max_diff: int,
                 max_catchup_s: float) -> list[Check]:
    """The conditions one slave must meet for its master to be stopped without surprises."""
    name = s.slave.broker_addr if s.slave is not None else s.connection or "?"
    connected = s.connection is not None and s.ack_offset is not None
    if group.from_runtime_info:
        checks = [Check("slave connected", connected, f"{name} reports commitlog max offset {s.ack_offset} "
                        "(runtime info: the broker gives no HA connection figures)" if connected
                        else f"{name} gave no commitlog offset")]
    else:
        checks = [Check("slave connected", connected, f"{name} is connected to the master (from {s.connection})"
                        if connected else f"{name} is registered but has no acknowledging HA connection")]
    if s.slave is None:
        checks.append(Check("slave answers", None, f"cannot tell which registered slave holds connection {name}"))
    elif s.slave.error:
        checks.append(Check("slave answers", False, f"{name} did not answer ({s.slave.error}): stopped or hung"))
    elif s.slave.connected is None:
        checks.append(Check("slave answers", True, f"{name} answers (the state of its HA client is not reported)"))
    else:
        why = f" (its last connection ended: {s.slave.close_reason})" if s.slave.close_reason else ""
        checks.append(Check("slave answers", bool(s.slave.connected),
                            f"{name} answers and its HA client is "
                            f"{'connected' if s.slave.connected else 'not connected' + why}"))
    if s.overdue:
        checks.append(Check("in sync", False, f"{name}: {silent_slave(s.silent_ms)}"))
    elif group.from_runtime_info:
        checks.append(Check("in sync", s.in_sync is True, f"{name} is {'within' if s.in_sync else 'not within'} "
                            "the master's haSlaveFallbehindMax (how a 4.x master counts a slave in sync)"))
    else:
        checks.append(Check("in sync", s.in_sync is True,
                            f"the master counts {name} as {'in sync' if s.in_sync else 'not in sync'}"))
    if s.diff_bytes is None:
        checks.append(Check("diff under bound", False, "the diff is unknown"))
    else:
        msgs = "" if s.diff_messages is None else f", ~{s.diff_messages} messages"
        checks.append(Check("diff under bound", s.diff_bytes <= max_diff,
                            f"{_mb(s.diff_bytes)}{msgs} behind (bound {max_diff} bytes)"))
    if s.catch_up_s is None:
        checks.append(Check("catching up", False, "bytes are missing and none are moving (speed 0)"
                            if s.diff_bytes else "the time to catch up is unknown"))
    else:
        checks.append(Check("catching up", s.catch_up_s <= max_catchup_s,
                            f"{s.catch_up_s:.2f}s to catch up (bound {max_catchup_s:g}s)"))
    if s.trend is None:
        checks.append(Check("not falling behind", None, "no trend: a window of one sample"))
    else:
        checks.append(Check("not falling behind", s.trend != GROWING,
                            f"the diff is {s.trend} over {group.window_s:g}s"))
    if group.controller is not None:
        checks.append(_electable(group.controller, s, name))
    return checks


def _electable(c: ControllerState, s: SlaveReplication, name: str) -> Check:
    """Controller mode: the controllers elect a new master only from the SyncStateSet."""
    bid = s.slave.broker_id if s.slave is not None else None
    if bid is None:
        return Check("electable", None, f"the broker id of {name} is not known")
    inside = bid in c.sync_state_set
    return Check("electable", inside, f"{name} (broker id {bid}) is {'in' if inside else 'not in'} the "
                 f"SyncStateSet {c.sync_state_set}: the controllers {'can' if inside else 'cannot'} elect it")


def stop_cost(group: ReplicationGroup, s: SlaveReplication | None) -> tuple[Check, int | None, int | None]:
    """What stopping the master would cost, by its send mode: information, not a condition."""
    role = group.role or "unknown role"
    if s is None or s.diff_bytes is None:
        return Check("send mode", None, f"{role}: without a replicating slave, messages only on the master "
                                        "are unreadable until it returns"), None, None
    if role == "SYNC_MASTER" and s.in_sync:
        return Check("send mode", None, "SYNC_MASTER with an in-sync slave: stopping it loses no acknowledged "
                                        "message"), 0, 0
    if s.diff_bytes <= 0:
        return Check("send mode", None, f"{role}: the slave has every byte, stopping it now loses nothing"), 0, 0
    msgs = "" if s.diff_messages is None else f" (~{s.diff_messages} messages)"
    return (Check("send mode", None, f"{role}: stopping it now loses up to {s.diff_bytes} bytes{msgs} not yet on "
                                     "the slave"), s.diff_bytes, s.diff_messages)


def assess(group: ReplicationGroup, *, max_diff: int = DEFAULT_MAX_DIFF,
           max_catchup_s: float = DEFAULT_MAX_CATCHUP_S) -> HAReadiness:
    """The readiness verdict for a group: unknown when its master, or in controller mode its controllers, cannot
    be asked, safe when at least one slave meets every condition, else not safe with the reasons of the closest
    slave."""
    name = group.broker_name or group.master_addr or "?"

    def verdict(v: str, checks: list[Check], slave: SlaveReplication | None = None) -> HAReadiness:
        cost, loss_b, loss_m = stop_cost(group, slave)
        return HAReadiness(name, v, [*checks, cost] if v != UNKNOWN else checks, max_diff, max_catchup_s,
                           group, slave, loss_b, loss_m)

    if group.master_addr is None:
        return verdict(UNKNOWN, [Check("master reachable", False,
                                       f"no master of {name} is registered with the name servers")])
    if group.error is not None:
        return verdict(UNKNOWN, [Check("master reachable", False, f"{group.master_addr}: {group.error}")])
    reach = Check("master reachable", True, f"{group.master_addr} answers")
    if not group.slaves:
        return verdict(NOT_SAFE, [reach, Check("slave connected", False,
                                               f"no slave of {name} is connected or registered")])
    if group.controller is not None and group.controller.error:  # nobody known to elect: stopping may leave none
        return verdict(UNKNOWN, [reach, Check("controllers reachable", False,
                                              f"the controllers cannot be asked ({group.controller.error}): "
                                              "whether they could elect a new master is not known")])
    scored = []
    for s in group.slaves:
        checks = slave_checks(group, s, max_diff, max_catchup_s)
        failed = sum(1 for c in checks if c.ok is False)
        scored.append((failed, s, checks))
    failed, best, checks = min(scored, key=lambda x: x[0])
    return verdict(SAFE if failed == 0 else NOT_SAFE, [reach, *checks], best)
