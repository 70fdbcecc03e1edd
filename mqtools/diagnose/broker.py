"""Why a broker is busy or slow: findings from its runtime figures and config (sans-IO).

Two samples of the broker's runtime info (GET_BROKER_RUNTIME_INFO) over a window, its config
(GET_BROKER_CONFIG) and its role give findings, each with the figure, the limit it is held against, the
config key that moves the limit, and what RocketMQ answers a client while it holds:

  disk full            commitLogDiskRatio at the warning level (0.90): puts refused, SERVICE_NOT_AVAILABLE
  file descriptors     an mq broker holding FDS_ACTION of its open-file limit or more (FDS_INFO: info): at the
                       limit new connections are closed and a put that needs a new queue file is refused
                       (CREATE_MAPPED_FILE_FAILED); Apache's brokers do not report it
  busy: send queue     a send waited in the queue waitTimeMillsInSendQueue or longer: SYSTEM_BUSY
                       [TIMEOUT_CLEAN_QUEUE]; or the queue is nearly full: SYSTEM_BUSY [TOO_MANY_REQUESTS]
  busy: page cache     a put held the commitlog lock osPageCacheBusyTimeOutMills or longer: SYSTEM_BUSY
                       [PC_SYNCHRONIZED]
  waiting for slave    a SYNC_MASTER with no slave connected (SLAVE_NOT_AVAILABLE), or one further behind
                       than haMaxGapNotInSync (sends wait syncFlushTimeout: FLUSH_SLAVE_TIMEOUT)
  disk nearly full     commitLogDiskRatio past diskMaxUsedSpaceRatio: files go before fileReservedTime
  dispatch behind      the commitlog is ahead of the consume queues by DISPATCH_BEHIND or more: consumers
                       see new messages late
  flush behind         ASYNC_FLUSH with FLUSH_BEHIND or more not yet on disk: lost if the machine dies
  traffic changed      put TPS over the last 10 s under half, or over twice, its 10-minute figure

The verdict is the first finding in that order ("healthy" without one); the others are listed too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mqtools.client.admin.models.brokers import BrokerRuntime
from mqtools.common.presentation import NA, Column, View, renders
from mqtools.diagnose.findings import (
    CERT_ACTION_DAYS,
    CERT_INFO_DAYS,
    CERT_RENEWAL,
    Severity,
    certificate_days_left,
    certificate_severity,
    certificate_when,
    number,
)

HEALTHY, UNKNOWN = "healthy", "unknown"
#: Apache RocketMQ's defaults for the keys a finding is held against, used where the broker's config omits one.
DEFAULTS = {"waitTimeMillsInSendQueue": 200, "osPageCacheBusyTimeOutMills": 1000, "diskMaxUsedSpaceRatio": 75,
            "haMaxGapNotInSync": 256 * 1024 * 1024, "syncFlushTimeout": 5000}
#: The commitlog ratio past which RocketMQ refuses puts (-Drocketmq.broker.diskSpaceWarningLevelRatio, 0.90).
DISK_WARNING_LEVEL = 0.90
#: A send queue this full gets [TOO_MANY_REQUESTS] answers soon.
QUEUE_NEARLY_FULL = 0.9
DISPATCH_BEHIND = 16 * 1024 * 1024
FLUSH_BEHIND = 256 * 1024 * 1024
#: Shares of its open-file limit a broker's descriptors reach for an action finding, and for an info one.
FDS_ACTION, FDS_INFO = 0.9, 0.75
#: put TPS (10-minute figure) under which traffic changes are noise.
TRAFFIC_FLOOR = 10.0


@dataclass(frozen=True, slots=True)
class Finding:
    name: str
    severity: Severity
    detail: str
    figure: float | None
    limit: float | None
    config_key: str | None
    answers: str | None
    """What RocketMQ answers a client while this holds (a response code and its remark's tag); None if nothing."""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "severity": self.severity.value, "detail": self.detail, "figure": self.figure,
                "limit": self.limit, "configKey": self.config_key, "answers": self.answers}


@dataclass(slots=True)
class BrokerDiagnosis:
    broker: str
    addr: str
    role: str | None
    verdict: str
    summary: str
    window_s: float
    findings: list[Finding] = field(default_factory=list)
    figures: dict[str, float | int | None] = field(default_factory=dict)

    @property
    def severity(self) -> Severity:
        if self.verdict == UNKNOWN:
            return Severity.UNKNOWN
        return self.findings[0].severity if self.findings else Severity.OK

    def to_json(self) -> dict[str, Any]:
        return {"broker": self.broker, "addr": self.addr, "role": self.role, "verdict": self.verdict,
                "severity": self.severity.value, "summary": self.summary, "windowSeconds": round(self.window_s, 3),
                "findings": [f.to_json() for f in self.findings], "figures": self.figures}


def tps_triple(runtime: BrokerRuntime) -> tuple[float | None, float | None, float | None]:
    """putTps's three figures: the last 10 s, 1 minute and 10 minutes."""
    parts = (runtime.raw.get("putTps") or "").split()
    values: list[float | None] = []
    for i in range(3):
        try:
            values.append(float(parts[i]))
        except (IndexError, ValueError):
            values.append(None)
    return values[0], values[1], values[2]


def _limit(config: Mapping[str, str] | None, key: str) -> float:
    try:
        return float((config or {})[key])
    except (KeyError, ValueError):
        return float(DEFAULTS[key])


def _max(samples: Sequence[BrokerRuntime], attr: str) -> int | None:
    values = [getattr(s, attr) for s in samples if getattr(s, attr) is not None]
    return max(values) if values else None


def judge(broker: str, addr: str, samples: Sequence[BrokerRuntime], config: Mapping[str, str] | None,
          window_s: float, *, now_s: float | None = None) -> BrokerDiagnosis:
    """The findings over `samples` (oldest first, at least one); `now_s`, the wall clock (a certificate's days
    left), time.time() when not given."""
    last = samples[-1]
    role = (config or {}).get("brokerRole")
    head_wait = _max(samples, "send_queue_head_wait_ms")
    queue_size = _max(samples, "send_queue_size")
    capacity = _int(last.raw.get("sendThreadPoolQueueCapacity"))
    lock_ms = _max(samples, "page_cache_lock_time_ms")
    disk = last.commitlog_disk_ratio
    behind = _max(samples, "dispatch_behind_bytes")
    unflushed = _int(last.raw.get("remainHowManyDataToFlush"))
    fds, fds_limit = _int(last.raw.get("openFileDescriptors")), _int(last.raw.get("maxOpenFileDescriptors"))
    not_after = _int(last.raw.get("tlsCertificateNotAfter"))
    days_left = certificate_days_left(None if not_after is None else not_after / 1000, now_s)
    workers, serving = _int(last.raw.get("frontWorkers")), _int(last.raw.get("frontWorkersServing"))
    first_restarts, restarts = _int(samples[0].raw.get("frontWorkerRestarts")), _int(last.raw.get("frontWorkerRestarts"))
    restarted = None if first_restarts is None or restarts is None else restarts - first_restarts
    tps10, tps60, tps600 = tps_triple(last)
    figures: dict[str, float | int | None] = {
        "putTps10s": tps10, "putTps1m": tps60, "putTps10m": tps600, "sendQueueHeadWaitMs": head_wait,
        "sendQueueSize": queue_size, "sendQueueCapacity": capacity, "pageCacheLockMs": lock_ms, "diskRatio": disk,
        "dispatchBehindBytes": behind, "flushBehindBytes": unflushed, "haConnections": last.ha_connection_count,
        "slaveBehindBytes": last.slave_fall_behind_bytes, "openFiles": fds, "openFilesLimit": fds_limit,
        "certificateDaysLeft": days_left, "frontWorkers": workers, "frontWorkersServing": serving,
        "frontWorkerRestarts": restarts}
    found: list[Finding] = []
    act, info = Severity.ACTION, Severity.INFO
    if disk is not None and disk >= DISK_WARNING_LEVEL:
        found.append(Finding("disk full", act, f"commitlog disk {disk:.0%} used: puts are refused", disk,
                             DISK_WARNING_LEVEL, "diskMaxUsedSpaceRatio", "SERVICE_NOT_AVAILABLE"))
    if fds is not None and fds_limit and fds >= FDS_INFO * fds_limit:
        found.append(Finding("file descriptors", act if fds >= FDS_ACTION * fds_limit else info,
                             f"{fds:,} of {fds_limit:,} file descriptors open: at the limit new connections are "
                             "closed and a put that needs a new queue file is refused (raise the hard limit: "
                             "ulimit -Hn, LimitNOFILE)", fds, fds_limit, None, "CREATE_MAPPED_FILE_FAILED"))
    if days_left is not None and (cert := certificate_severity(days_left)) is not None:
        found.append(Finding("TLS certificate", cert, f"the served TLS certificate {certificate_when(days_left)}: "
                             "clients that verify it "
                             f"are refused after that ({CERT_RENEWAL})", days_left,
                             CERT_ACTION_DAYS if cert is act else CERT_INFO_DAYS, None, None))
    if workers and serving is not None and serving < workers:
        found.append(Finding("front workers", act, f"{serving} of {workers} front workers serving: the clients of "
                             "one that died or hung reconnect to the others while it is started again (the "
                             "broker's log says why)", serving, workers, "frontWorkers", None))
    elif restarted:
        found.append(Finding("front workers", info, f"front workers were started again {restarted} times in the "
                             "window (their clients reconnected; the broker's log says why)", restarted, 0,
                             "frontWorkers", None))
    wait_limit = _limit(config, "waitTimeMillsInSendQueue")
    refuses = (config or {}).get("brokerFastFailureEnable", "true").lower() != "false"
    if head_wait is not None and head_wait >= wait_limit:
        outcome = "such sends are answered without being stored" if refuses else \
            "stored late (brokerFastFailureEnable=false: nothing refused)"
        found.append(Finding("busy: send queue", act, f"a send waited {head_wait} ms in the send queue (limit "
                             f"{wait_limit:.0f} ms): {outcome}", head_wait, wait_limit, "waitTimeMillsInSendQueue",
                             "SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE]" if refuses else None))
    elif queue_size is not None and capacity and queue_size >= QUEUE_NEARLY_FULL * capacity:
        found.append(Finding("busy: send queue", act, f"the send queue holds {queue_size:,} of {capacity:,}",
                             queue_size, capacity, "sendThreadPoolQueueCapacity", "SYSTEM_BUSY [TOO_MANY_REQUESTS]"))
    lock_limit = _limit(config, "osPageCacheBusyTimeOutMills")
    if lock_ms is not None and lock_ms >= lock_limit:
        found.append(Finding("busy: page cache", act, f"a put held the commitlog lock {lock_ms} ms (limit "
                             f"{lock_limit:.0f} ms)", lock_ms, lock_limit, "osPageCacheBusyTimeOutMills",
                             "SYSTEM_BUSY [PC_SYNCHRONIZED]"))
    if role == "SYNC_MASTER":
        gap = _limit(config, "haMaxGapNotInSync")
        if last.ha_connection_count == 0:
            found.append(Finding("waiting for slave", act, "SYNC_MASTER with no slave connected", 0, 1, "brokerRole",
                                 "SLAVE_NOT_AVAILABLE"))
        elif last.slave_fall_behind_bytes is not None and last.slave_fall_behind_bytes > gap:
            found.append(Finding("waiting for slave", act, f"the slave is {last.slave_fall_behind_bytes:,} bytes "
                                 f"behind (haMaxGapNotInSync {gap:,.0f})", last.slave_fall_behind_bytes, gap,
                                 "haMaxGapNotInSync", "SLAVE_NOT_AVAILABLE"))
    ratio = _limit(config, "diskMaxUsedSpaceRatio") / 100
    if disk is not None and ratio <= disk < DISK_WARNING_LEVEL:
        found.append(Finding("disk nearly full", info, f"commitlog disk {disk:.0%} used (diskMaxUsedSpaceRatio "
                             f"{ratio:.0%}): files are deleted before fileReservedTime", disk, ratio,
                             "diskMaxUsedSpaceRatio", None))
    if behind is not None and behind >= DISPATCH_BEHIND:
        found.append(Finding("dispatch behind", act, f"the consume queues are {behind:,} bytes behind the "
                             "commitlog: consumers see new messages late", behind, DISPATCH_BEHIND, None, None))
    if (config or {}).get("flushDiskType", "ASYNC_FLUSH") == "ASYNC_FLUSH" and unflushed is not None \
            and unflushed >= FLUSH_BEHIND:
        found.append(Finding("flush behind", info, f"{unflushed:,} bytes are not on disk yet", unflushed,
                             FLUSH_BEHIND, "flushIntervalCommitLog", None))
    if tps10 is not None and tps600 is not None and tps600 >= TRAFFIC_FLOOR and not 0.5 <= tps10 / tps600 <= 2:
        found.append(Finding("traffic changed", info, f"put TPS {tps10:,.1f} over the last 10 s against "
                             f"{tps600:,.1f} over 10 minutes", tps10, tps600, None, None))
    found.sort(key=lambda f: f.severity is not act)  # stable: action findings first, in the order above
    verdict = found[0].name if found else HEALTHY
    summary = found[0].detail if found else "no finding: send queue, page cache, disk, replication and dispatch " \
                                            "within their limits"
    return BrokerDiagnosis(broker, addr, role, verdict, summary, window_s, found, figures)


def unknown(broker: str, addr: str, window_s: float, missing: str) -> BrokerDiagnosis:
    return BrokerDiagnosis(broker, addr, None, UNKNOWN, f"cannot judge: {missing}", window_s)


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


FINDING_COLUMNS = [Column("BROKER"), Column("ADDR"), Column("FINDING"), Column("FIGURE", True), Column("LIMIT", True),
                   Column("CONFIG KEY"), Column("CLIENTS GET")]


@renders("BrokerDiagnosis")
def broker_diagnosis_view(found: list[BrokerDiagnosis]) -> View:
    """Every finding of each broker diagnosed (a name's master and slaves), its verdict and runtime figures."""
    rows = [[d.broker, d.addr, f.name, f.figure, f.limit, f.config_key, f.answers] for d in found for f in d.findings]
    footer = [f"{d.broker} {d.addr} ({d.role or NA}): {d.verdict.upper()}: {d.summary}" for d in found]
    for d in found:
        fig = d.figures
        footer.append(f"{d.addr}: put TPS {number(fig.get('putTps10s'))} (10 s) {number(fig.get('putTps10m'))} "
                      f"(10 min), send queue {number(fig.get('sendQueueSize'))} waiting "
                      f"{number(fig.get('sendQueueHeadWaitMs'), 'ms')}, page cache lock "
                      f"{number(fig.get('pageCacheLockMs'), 'ms')}, dispatch behind "
                      f"{number(fig.get('dispatchBehindBytes'), 'B')}, disk {_pct(fig.get('diskRatio'))}, "
                      f"file descriptors {number(fig.get('openFiles'))} of {number(fig.get('openFilesLimit'))}"
                      + ("" if fig.get("certificateDaysLeft") is None else
                         f", TLS certificate {number(fig['certificateDaysLeft'])} days left"))
    return View("BrokerDiagnosis", FINDING_COLUMNS, rows, {"brokers": [d.to_json() for d in found]},
                title=" ".join(f"{d.addr}: {d.verdict.upper()}" for d in found), footer=footer)


def _pct(value: float | None) -> str:
    return NA if value is None else f"{value:.0%}"
