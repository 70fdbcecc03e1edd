"""The spark-load report, rendered from hand-made task figures (no Spark, no cluster)."""

from __future__ import annotations

from support.documents import check

from mqtools.cli.output import plain
from mqtools.common.presentation import cell
from mqtools.spark.stats import TaskStats, encode, load_report_view, new_histogram, record, summarize


def task(n: int, messages: int, latencies_us: list[float], delays_us: list[float], failed: dict[str, int]) -> TaskStats:
    """A task that ran 3.5 s from 100 + n, with these latency and start-delay samples."""
    lat, delay = new_histogram(), new_histogram()
    for v in latencies_us:
        record(lat, v)
    for v in delays_us:
        record(delay, v)
    return TaskStats(n, messages, dict(failed), messages * 128, 100.0 + n, 103.5 + n, encode(lat), encode(delay))


PRODUCERS = [task(1, 100, [1000, 2500, 9000], [10, 20], {"17": 2}), task(0, 50, [800], [], {}),
             TaskStats(2)]  # a task that never started: no rate, no latency
READERS = [task(0, 140, [5000, 7000], [], {"TimeoutError": 1})]


def test_produce_report_with_an_idle_task_and_publish_delay() -> None:
    view = load_report_view("produce", "Orders", "local[*]", summarize(PRODUCERS, with_delay=True))
    doc = check(view)
    assert view.title == "spark-load produce Orders"
    assert view.rows[0] == [0, 50, 0, 0.006, 3.5, 14.3, 0.8, 0.8]
    assert view.rows[1][:6] == [1, 100, 2, 0.013, 3.5, 28.6]
    assert [cell(v) for v in view.rows[2]] == ["2", "0", "0", "0.00", "0.00", "n/a", "n/a", "n/a"]
    assert view.footer[0] == ("produce Orders on local[*]: 150 messages in 4.50s, 33.3 msgs/s, 0.004 MB/s; "
                              "failed: 17: 2")
    assert view.footer[2].startswith("publish delay ms (planned vs actual start): min 0.01")
    assert doc["tasks"][2]["latencyMs"]["p50"] is None and doc["tasks"][1]["failed"] == {"17": 2}
    assert doc["messages"] == 150 and doc["bytes"] == 150 * 128 and doc["failed"] == {"17": 2}
    assert doc["publishDelayMs"]["min"] == 0.01 and "produced" not in doc


def test_consume_report_without_publish_delay() -> None:
    view = load_report_view("consume", "Orders", "sc://spark:15002", summarize(READERS))
    doc = check(view)
    assert doc["publishDelayMs"] is None and doc["master"] == "sc://spark:15002"
    assert len(view.footer) == 2 and view.footer[0].endswith("failed: TimeoutError: 1")
    assert plain(view).splitlines()[1].split() == ["TASK", "MESSAGES", "FAILED", "MB", "SECONDS", "MSGS/S", "P50",
                                                   "MS", "P99", "MS"]


def test_e2e_report_reads_and_names_the_producers() -> None:
    view = load_report_view("e2e", "Orders", "local[4]", summarize(READERS, with_delay=True),
                            summarize(PRODUCERS, with_delay=True))
    doc = check(view)
    assert view.footer[0] == "e2e Orders on local[4]: read 140 messages in 3.50s"
    assert view.footer[1].startswith("end-to-end latency ms (born to read): min 5.0")
    assert view.footer[3].startswith("produced 150 messages, 33.3 msgs/s; failed: 17: 2; send latency ms: min 0.8")
    assert doc["publishDelayMs"]["p50"] == 0.01  # the producers' delay, not the readers' (unknown)
    assert doc["produced"] == {"messages": 150, "failed": {"17": 2}, "msgsPerSec": 33.333,
                               "latencyMs": summarize(PRODUCERS).latency_ms}


def test_a_run_whose_every_send_failed_reads_n_a_for_latency() -> None:
    """Nothing measured: the footer said `min None  p50 None`; text reads n/a where JSON has null."""
    failed = [TaskStats(0, 0, {"16": 20}, 0, 100.0, 100.1)]
    view = load_report_view("e2e", "RO", "local[2]", summarize(failed, with_delay=True),
                            summarize(failed, with_delay=True))
    doc = check(view)
    assert "None" not in " ".join(view.footer)
    assert view.footer[1] == "end-to-end latency ms (born to read): " + "  ".join(
        f"{k} n/a" for k in ("min", "p50", "p90", "p99", "p99.9", "max"))
    assert view.footer[3].endswith("send latency ms: min n/a  p50 n/a  p90 n/a  p99 n/a  p99.9 n/a  max n/a")
    alone = load_report_view("produce", "RO", "local[2]", summarize(failed, with_delay=True))
    unknown = "min n/a  p50 n/a  p90 n/a  p99 n/a  p99.9 n/a  max n/a"
    assert alone.footer[1:] == [f"latency ms: {unknown}", f"publish delay ms (planned vs actual start): {unknown}"]
    assert doc["latencyMs"]["p50"] is None and doc["produced"]["latencyMs"]["max"] is None
