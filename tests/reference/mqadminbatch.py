"""Apache's mqadmin, many commands in one JVM: the harness's `mqadmin-batch` (MqadminBatch.java).

A comparison of dozens of commands would otherwise start a JVM per command (1-2 s each, on both sides).
`MqadminBatch.run(args)` sends one command and returns what mqadmin printed; commands run in order, one
at a time, with the same ROCKETMQ_HOME (conf/tools.yml for ACL) as `apache.mqadmin`.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Self

from apache import DIE_WITH_PARENT, MODULE_FLAGS, home
from fetch import require
from javaclient import MAIN

_batches = itertools.count(1)


@dataclass(frozen=True)
class MqadminOutput:
    args: list[str]
    out: str
    err: str
    ms: int


class MqadminBatch:
    """One harness JVM running Apache's MQAdminStartup for each command it is given."""

    def __init__(self, root: Path, version: str = "harness") -> None:
        aset = require(version)
        workdir = root / f"mqadmin-batch-{aset.name}-{next(_batches)}"
        workdir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "ROCKETMQ_HOME": str(home(aset, root)), "MQREF_LOG_DIR": str(workdir / "logs")}
        argv = [*DIE_WITH_PARENT, "java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-XX:-UsePerfData", "-Djava.security.manager=allow", *MODULE_FLAGS, f"-Duser.home={workdir}", "-cp", aset.classpath(), MAIN,
                "mqadmin-batch"]
        self._stderr = (workdir / "stderr.log").open("w")
        self._process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                         text=True, env=env, cwd=workdir)

    def run(self, *args: str) -> MqadminOutput:
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(list(args)) + "\n")
        process.stdin.flush()
        for line in process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "mqadmin":
                return MqadminOutput(event["args"], event["out"], event["err"], event["ms"])
        raise RuntimeError(f"mqadmin-batch ended (exit {process.wait()}) during {args}")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._stderr.close()
