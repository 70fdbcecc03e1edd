"""Bad CLI input: one clear line on stderr and a non-zero exit."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _mq(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mqtools.cli.main", *args], check=False, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("args", "fragments"),
    [(["bogus"], ["No such command", "bogus"]), (["namesrv", "--nope"], ["No such option", "--nope"])],
)
def test_bad_argument_is_one_line(args: list[str], fragments: list[str]) -> None:
    """Click's wording varies between releases (`No such option: --nope`, `No such option '--nope'.`)."""
    result = _mq(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("mq: error: ")
    assert all(fragment in lines[0] for fragment in fragments)


def test_version_prints_and_succeeds() -> None:
    result = _mq("version")
    assert result.returncode == 0
    assert result.stdout.strip() == "0.1.0"
