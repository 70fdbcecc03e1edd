"""`make demo`'s main job runs end to end (in a temp directory, then its cluster is stopped)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def ha_rows(out: str) -> set[tuple[str, str, str]]:
    """(broker, diff bytes, in sync) of each row of the demo's HA table."""
    title = out.index("HA status")
    rows = set()
    for line in out[title:].splitlines():
        cells = [c.strip() for c in line.split("\u2502")]
        if len(cells) == 8 and cells[1].startswith("broker-"):
            rows.add((cells[1], cells[5], cells[6]))
    return rows


def test_demo_sends_consumes_and_reports_ha(tmp_path: Path) -> None:
    state = tmp_path / ".mq-state" / "demo"
    try:
        result = subprocess.run([sys.executable, "-m", "mqtools.demo"], cwd=tmp_path, capture_output=True,
                                text=True, timeout=200, check=False)
        out = result.stdout
        assert result.returncode == 0, out + result.stderr
        assert "sent 200 messages to DemoTopic: {'SEND_OK': 200}" in out
        assert "consumed 200/200 distinct messages" in out
        assert ha_rows(out) == {("broker-a", "0", "yes"), ("broker-b", "0", "yes")}
        assert "mq cluster down --dir .mq-state/demo" in out
        tour = out[out.index("mq admin cluster list"):]
        assert tour.count("broker-a") >= 2 and tour.count("broker-b") >= 2  # cluster list: masters and slaves
        route = tour[tour.index("mq admin topic route"):tour.index("mq admin group progress")]
        assert "broker-a" in route and "broker-b" in route
        progress = tour[tour.index("mq admin group progress"):]
        assert "total: diff 0," in progress and "Try next" in progress
        drill = out[out.index("mq admin drill run kill-master"):]
        assert "Verdict: PASS" in drill and re.search(r"lost\s+0\n", drill) and "mq admin offset reset" in progress
    finally:
        subprocess.run([sys.executable, "-m", "mqtools.cli.main", "cluster", "down", "--dir", str(state)],
                       capture_output=True, timeout=60, check=False)
