"""The broker judge on runtime tables as brokers answer them: each condition gives its finding."""

from __future__ import annotations

from mqtools.client.admin.models.brokers import BrokerRuntime
from mqtools.diagnose import broker as B
from mqtools.diagnose.findings import Severity

CALM = {"putTps": "100.00 100.00 100.00", "sendThreadPoolQueueSize": "0", "sendThreadPoolQueueCapacity": "10000",
        "sendThreadPoolQueueHeadWaitTimeMills": "0", "pageCacheLockTimeMills": "0", "commitLogDiskRatio": "0.20",
        "dispatchBehindBytes": "0", "remainHowManyDataToFlush": "0", "haConnectionCount": "1",
        "slaveFallBehindMuch": "0"}


def judged(role: str = "ASYNC_MASTER", config: dict[str, str] | None = None, **changes: str) -> B.BrokerDiagnosis:
    samples = [BrokerRuntime.from_table(CALM), BrokerRuntime.from_table({**CALM, **changes})]
    return B.judge("broker-a", "127.0.0.1:10911", samples, {"brokerRole": role, **(config or {})}, 5.0)


def test_calm_broker_is_healthy() -> None:
    d = judged()
    assert (d.verdict, d.findings, d.severity) == ("healthy", [], Severity.OK)
    assert d.figures["putTps10m"] == 100.0 and d.to_json()["findings"] == []


def test_send_queue_wait_past_the_limit_is_busy_with_timeout_clean_queue() -> None:
    d = judged(config={"waitTimeMillsInSendQueue": "50"}, sendThreadPoolQueueHeadWaitTimeMills="80")
    assert d.verdict == "busy: send queue" and d.severity == Severity.ACTION
    f = d.findings[0]
    assert (f.figure, f.limit, f.config_key, f.answers) == (80, 50, "waitTimeMillsInSendQueue",
                                                            "SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE]")
    assert judged(sendThreadPoolQueueHeadWaitTimeMills="80").verdict == "healthy"  # Apache's 200 ms default
    late = judged(config={"waitTimeMillsInSendQueue": "50", "brokerFastFailureEnable": "false"},
                  sendThreadPoolQueueHeadWaitTimeMills="80")
    assert late.verdict == "busy: send queue" and late.findings[0].answers is None and "stored late" in late.summary


def test_page_cache_lock_and_disk_and_sync_master_without_slave() -> None:
    assert judged(pageCacheLockTimeMills="1500").findings[0].answers == "SYSTEM_BUSY [PC_SYNCHRONIZED]"
    full = judged(commitLogDiskRatio="0.93")
    assert full.verdict == "disk full" and full.findings[0].answers == "SERVICE_NOT_AVAILABLE"
    nearly = judged(commitLogDiskRatio="0.80")
    assert (nearly.verdict, nearly.severity) == ("disk nearly full", Severity.INFO)
    alone = judged("SYNC_MASTER", haConnectionCount="0")
    assert alone.verdict == "waiting for slave" and alone.findings[0].answers == "SLAVE_NOT_AVAILABLE"
    assert judged("ASYNC_MASTER", haConnectionCount="0").verdict == "healthy"


def test_a_broker_near_its_open_file_limit_is_told_before_it_refuses() -> None:
    near = judged(openFileDescriptors="950", maxOpenFileDescriptors="1024")
    f = near.findings[0]
    assert (near.verdict, near.severity, f.figure, f.limit, f.answers) == (
        "file descriptors", Severity.ACTION, 950, 1024, "CREATE_MAPPED_FILE_FAILED")
    assert "950 of 1,024 file descriptors open" in near.summary
    assert judged(openFileDescriptors="800", maxOpenFileDescriptors="1024").severity == Severity.INFO
    calm = judged(openFileDescriptors="120", maxOpenFileDescriptors="1048576")
    assert calm.verdict == "healthy" and (calm.figures["openFiles"], calm.figures["openFilesLimit"]) == (120, 1048576)
    assert judged().figures["openFiles"] is None  # Apache's brokers do not report it


def test_a_certificate_near_its_expiry_is_told_while_there_is_time_to_renew_it() -> None:
    now_s = 1_800_000_000.0
    samples = [BrokerRuntime.from_table(CALM)]

    def expiring_in(days: float) -> B.BrokerDiagnosis:
        table = {**CALM, "tlsCertificateNotAfter": str(int((now_s + days * 86400) * 1000))}
        return B.judge("broker-a", "a:1", [*samples, BrokerRuntime.from_table(table)], None, 5.0, now_s=now_s)

    soon = expiring_in(3.04)
    f = soon.findings[0]
    assert (soon.verdict, soon.severity, f.figure, f.limit) == ("TLS certificate", Severity.ACTION, 3.0, 7)
    assert "the served TLS certificate expires in 3 days" in soon.summary
    assert expiring_in(-2).summary.startswith("the served TLS certificate expired 2 days ago")
    month = expiring_in(20)
    assert (month.severity, month.findings[0].limit) == (Severity.INFO, 30)
    far = expiring_in(300)
    assert far.verdict == "healthy" and far.figures["certificateDaysLeft"] == 300.0
    assert judged().figures["certificateDaysLeft"] is None  # no TLS, or Apache's


def test_front_workers_down_or_restarted_are_told() -> None:
    short = judged(frontWorkers="2", frontWorkersServing="1", frontWorkerRestarts="0")
    f = short.findings[0]
    assert (short.verdict, short.severity, f.figure, f.limit, f.config_key) == (
        "front workers", Severity.ACTION, 1, 2, "frontWorkers")
    assert short.summary.startswith("1 of 2 front workers serving")
    samples = [BrokerRuntime.from_table({**CALM, "frontWorkers": "2", "frontWorkersServing": "2",
                                         "frontWorkerRestarts": restarts}) for restarts in ("1", "4")]
    again = B.judge("broker-a", "a:1", samples, None, 5.0)
    assert (again.verdict, again.severity, again.findings[0].figure) == ("front workers", Severity.INFO, 3)
    before = BrokerRuntime.from_table({**CALM, "frontWorkers": "2", "frontWorkersServing": "2",
                                       "frontWorkerRestarts": "3"})
    steady = B.judge("broker-a", "a:1", [before, before], None, 5.0)  # restarted before the window only
    assert steady.verdict == "healthy" and steady.figures["frontWorkersServing"] == 2
    assert judged().figures["frontWorkers"] is None  # none configured, or Apache's


def test_action_findings_come_before_information_and_all_are_listed() -> None:
    d = judged("SYNC_MASTER", commitLogDiskRatio="0.80", haConnectionCount="0", dispatchBehindBytes=str(64 << 20),
               putTps="5.00 90.00 100.00")
    assert [f.name for f in d.findings] == ["waiting for slave", "dispatch behind", "disk nearly full",
                                            "traffic changed"]
    assert d.verdict == "waiting for slave"


def test_unknown_figures_stay_null() -> None:
    d = B.judge("broker-a", "a:1", [BrokerRuntime.from_table({})], None, 0.0)
    assert d.verdict == "healthy" and all(v is None for v in d.figures.values())
    assert B.unknown("broker-a", "a:1", 5.0, "its runtime info").severity == Severity.UNKNOWN
