"""The shipped alert rules: `promtool check rules` passes, and `promtool test rules` fires each alert on the
series that should fire it (and not before its `for:`, nor on the series beside it that should not)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from support.promsupport import binary

import mqtools.exporter

pytestmark = pytest.mark.integration

RULES = Path(mqtools.exporter.__file__).with_name("mq-alerts.yml")
TESTS = Path(__file__).with_name("mq-alerts.test.yml")


def promtool(*args: str, cwd: Path) -> str:
    done = subprocess.run([binary("promtool"), *args], capture_output=True, text=True, cwd=cwd, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_rules_check_and_every_alert_fires_as_its_unit_test_says(tmp_path: Path) -> None:
    shutil.copy(RULES, tmp_path / "mq-alerts.yml")
    shutil.copy(TESTS, tmp_path / TESTS.name)
    assert "SUCCESS: 13 rules found" in promtool("check", "rules", "mq-alerts.yml", cwd=tmp_path)
    assert "SUCCESS" in promtool("test", "rules", TESTS.name, cwd=tmp_path)
    tested = {line.split(":", 1)[1].strip() for line in TESTS.read_text().splitlines()
              if line.strip().startswith("alertname:")}
    shipped = {line.split(":", 1)[1].strip() for line in RULES.read_text().splitlines()
               if line.strip().startswith("- alert:")}
    assert tested == shipped
