"""`make demo`'s main job runs end to end (in a temp directory, then its cluster is stopped)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def test_demo_sends_consumes_and_reports_ha(tmp_path: Path) -> None:
    state = tmp_path / ".mq-state" / "demo"
    try:
        result = subprocess.run([sys.executable, "-m", "mqtools.demo"], cwd=tmp_path, capture_output=True,
                                text=True, timeout=200, check=False)
        out = result.stdout
        assert result.returncode == 0, out + result.stderr
        assert "sent 200 messages to DemoTopic: {'SEND_OK': 200}" in out
        assert "consumed 200/200 distinct messages" in out
        assert "HA status" in out
        assert "mq cluster down --dir .mq-state/demo" in out
    finally:
        subprocess.run([sys.executable, "-m", "mqtools.cli.main", "cluster", "down", "--dir", str(state)],
                       capture_output=True, timeout=60, check=False)
