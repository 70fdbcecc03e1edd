"""A real Prometheus server for the metrics tests (Debian's package, installed by `make test`): started on an
ephemeral port with a config the test writes, queried through its HTTP API, always stopped."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.ports import free_port
from support.presetcluster import wait_for


@dataclass
class Prometheus:
    url: str

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The instant vector PromQL gives now: [{"metric": {labels}, "value": [t, "v"]}, ...]."""
        with urllib.request.urlopen(f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": promql}),
                                    timeout=10) as answer:
            doc = json.load(answer)
        assert doc["status"] == "success", doc
        return doc["data"]["result"]

    def value(self, promql: str) -> float | None:
        """The single value PromQL gives now; None when it gives no series."""
        found = self.query(promql)
        assert len(found) <= 1, found
        return float(found[0]["value"][1]) if found else None

    def targets_up(self) -> bool:
        with urllib.request.urlopen(f"{self.url}/api/v1/targets", timeout=10) as answer:
            active = json.load(answer)["data"]["activeTargets"]
        return bool(active) and all(t["health"] == "up" for t in active)


def binary(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is missing: `make test` installs Debian's prometheus package"
    return found


@contextmanager
def prometheus(work: Path, targets: dict[str, str], interval: str = "1s") -> Iterator[Prometheus]:
    """Prometheus scraping each target (job name -> host:port) every `interval`, until the block ends."""
    work.mkdir(parents=True, exist_ok=True)
    jobs = "".join(f"  - job_name: {job}\n    static_configs:\n      - targets: ['{addr}']\n"
                   for job, addr in targets.items())
    config = work / "prometheus.yml"
    config.write_text(f"global:\n  scrape_interval: {interval}\n  evaluation_interval: {interval}\n"
                      f"scrape_configs:\n{jobs}")
    port = free_port()
    log = (work / "prometheus.log").open("wb")
    process = subprocess.Popen([binary("prometheus"), f"--config.file={config}", f"--storage.tsdb.path={work / 'data'}",
                                f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    server = Prometheus(f"http://127.0.0.1:{port}")
    try:
        wait_for(lambda: _ready(server.url), 30, "Prometheus ready")
        yield server
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


@contextmanager
def exporter(namesrv: str, *args: str, interval: float = 1.0) -> Iterator[str]:
    """`mq exporter` on a free port; its host:port once it serves."""
    import sys

    process = subprocess.Popen([sys.executable, "-m", "mqtools.cli.main", "exporter", "-n", namesrv, "--listen",
                                "127.0.0.1:0", "--interval", str(interval), *args],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        assert line.startswith("serving metrics on http://"), line + (process.stdout.read() if process.stdout else "")
        yield line.split("http://", 1)[1].split("/", 1)[0]
    finally:
        process.terminate()
        process.wait(10)


def until_value(server: Prometheus, promql: str, expected: float, timeout: float = 30) -> None:
    wait_for(lambda: server.value(promql) == expected, timeout, f"{promql} == {expected}")


def scrape(addr: str) -> str:
    with urllib.request.urlopen(f"http://{addr}/metrics", timeout=10) as answer:
        return answer.read().decode()


def exported(namesrv: str, topic: str, group: str, timeout: str = "2") -> dict[str, dict[str, float]]:
    """What `mq exporter` serves once its polls of `topic` and `group` have each succeeded: family -> the
    broker (or, for the diff, the topic; broker/role for a node's figure) it is about -> value; series of other
    topics and groups left out."""
    from prometheus_client.parser import text_string_to_metric_families

    with exporter(namesrv, "--timeout", timeout) as addr:
        def polled() -> str | None:
            text = scrape(addr)
            done = all(f'mq_exporter_poll_ok{{job="{job}"}} 1.0' in text for job in (f"topic:{topic}", f"group:{group}"))
            return text if done else None
        text = wait_for(polled, 60, "the exporter's topic and group polls")
    out: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("topic", topic) == topic and sample.labels.get("group", group) == group:
                about = sample.labels.get("broker") or sample.labels.get("topic") or ""
                if "role" in sample.labels:  # mq_broker_up: a set's master and slave apart
                    about += "/" + sample.labels["role"]
                out.setdefault(sample.name, {})[about] = sample.value
    return out
