"""Every bench script still runs end to end.

The benches are where the speed targets live, and nothing else runs them: a product change that breaks
one (a field a bench still passes, a helper it imports) would otherwise go unseen until someone
measures. Each runs here as a user runs it, with the smallest load that takes it through every case;
its figures are not looked at (they mean nothing at this size), only that it finishes and prints its
summary line. `peers.py` (needs nats-server and the network), `spark_load.py` (three more Spark
JVMs) and `trace_cost.py` (its client processes once did not report within a minute, 2 runs in 5, not yet
explained) are only imported.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"

RUNS = {
    "store_append": ["--messages", "640", "--repeat", "1"],
    "store_read": ["--messages", "2000"],
    "namesrv_route_qps": ["--seconds", "0.3"],
    "broker_send": ["--seconds", "0.3", "--clients", "1"],
    "broker_cpu": ["--seconds", "0.3", "--repeat", "1"],
    "front_workers": ["--seconds", "0.3", "--repeat", "1"],
    "broker_inproc": ["--chunks", "2", "--repeat", "1"],  # without --callgrind: valgrind is not a dependency
    "client_produce": ["--seconds", "0.3", "--clients", "1", "--repeat", "1"],
    "client_consume": ["--seconds", "0.3", "--repeat", "1"],
    "ha_replication": ["--seconds", "0.5", "--rate", "500"],
    "top_refresh": ["--topics", "20", "--groups", "5", "--rounds", "1"],
    "admin_latency": ["--runs", "1"],
    "metrics_cost": ["--seconds", "1.2", "--repeat", "1"],
    # mq's side only: Apache 5.5.0's costs a JVM start for nothing the figures would show at this size
    "timer_pop": ["--timers", "200", "--window", "2", "--pops", "200", "--live", "40", "--waiters", "4",
                  "--sides", "mq"],
    "proxy_grpc": ["--seconds", "1", "--sides", "mq"],  # mq's side, with the Python client
    # one Apache JVM cluster and one mq one, one after the other: our Producer's cases and the Java and
    # Python consumers (case a's eight Java sends and case d's second cluster pair only add JVM starts)
    "reference": ["--seconds", "0.5", "--backlog", "2000", "--cases", "b,c,e", "--startups", "1"],
    # every part once on each side at a tiny size; two sizes where only a name server starts (growth line)
    "scale": ["--topics", "20", "--brokers", "3,6", "--groups", "5", "--backlog", "2000", "--seconds", "0.3"],
}


#: Seconds a bench may take here; the rest get 110.
SLOW = {"reference": 240, "scale": 240}
JVM = frozenset(SLOW)
"""The benches that start Apache's JVMs beside mq: `make soak` runs them (scale's mq side runs in `make test`,
test_scale_runs_mq_alone_without_the_jvm)."""


@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.soak) if n in JVM else n for n in sorted(RUNS)])
def test_bench_runs_to_its_summary_line(name: str, tmp_path: Path) -> None:
    args = [*RUNS[name], *(["--dir", str(tmp_path)] if name.startswith("store_") else [])]
    result = subprocess.run([sys.executable, str(BENCH / f"{name}.py"), *args], cwd=tmp_path,
                            capture_output=True, text=True, timeout=SLOW.get(name, 110), check=False)
    assert result.returncode == 0, f"{name} exited {result.returncode}:\n{result.stderr[-3000:]}"
    assert any(line.startswith(name) for line in result.stdout.splitlines()), result.stdout[-3000:]


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_scale_runs_mq_alone_without_the_jvm(tmp_path: Path) -> None:
    """`--sides mq`: mq's figures and growth, no ratios, no Apache started (what a machine without the jars runs)."""
    result = subprocess.run([sys.executable, str(BENCH / "scale.py"), "--sides", "mq", "--parts", "topics,groups",
                             "--topics", "20,40", "--groups", "5", "--seconds", "0.3"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=110, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert "topics 40 first_route_max_ms: mq " in "\n".join(lines) and not any("Apache" in line for line in lines[:-1])
    assert lines[-1].startswith("scale (mq alone") and "mq first_ms" in lines[-1]


@pytest.mark.parametrize("name", ["controller_failover", "peers", "proxy_failover", "spark_kafka", "spark_load",
                                  "trace_cost"])
def test_bench_not_run_here_still_imports(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # as an import does: dataclasses look their module up
    spec.loader.exec_module(module)
