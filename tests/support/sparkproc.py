"""Spark's own processes for tests: a standalone master/worker or a Spark Connect server, started with
pyspark's bundled scripts on 127.0.0.1 and waited for through their logs."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def spark_bin(script: str, args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`$SPARK_HOME/bin/SCRIPT ARGS` (spark-class, spark-submit) with its output in `log`."""
    home = spark_home()
    return subprocess.Popen([str(home / "bin" / script), *args], stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            env={**os.environ, "SPARK_HOME": str(home), **env})


def wait_for(log: Path, pattern: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> re.Match[str]:
    """The first match of `pattern` in the process's log (it writes no other signal we could await)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text(errors="replace"))
        if found:
            return found
        assert proc.poll() is None, log.read_text(errors="replace")
        time.sleep(0.2)
    raise AssertionError(f"no {pattern!r} in {log}:\n{log.read_text(errors='replace')}")


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in reversed(procs):
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
