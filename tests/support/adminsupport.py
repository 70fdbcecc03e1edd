"""Running `mq admin` as a user does (a subprocess), and checking its JSON against the shipped schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

import jsonschema

from mqtools.common.presentation import load_schema


def mq(*args: str, namesrv: str | None = None, stdin: str | None = None, timeout: float = 60.0,
       env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`mq ARGS` with `-n namesrv` appended when given; stdout is a pipe (plain tables, no colour); `cwd` for
    commands that write files where they run (mqadmin's consumerStatus)."""
    argv = [sys.executable, "-m", "mqtools.cli.main", *args]
    if namesrv is not None:
        argv += ["-n", namesrv]
    base = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, input=stdin,
                          env={**base, "PYTHONUNBUFFERED": "1", **(env or {})}, cwd=cwd)


def mq_here(*args: str, namesrv: str | None = None, stdin: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`mq ARGS` run inside this process by typer's CliRunner, for tests that run dozens of commands (a
    process start costs 0.4 s of CPU), with `env` set meanwhile; stdout and stderr apart, the exit code as
    returncode."""
    from typer.testing import CliRunner

    from mqtools.cli.main import app

    argv = [*args, *(["-n", namesrv] if namesrv is not None else [])]
    result = CliRunner().invoke(app, argv, input=stdin, env={"NAMESRV_ADDR": None, **(env or {})})
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "Traceback (most recent call last):\n" + "".join(traceback.format_exception(*result.exc_info))
    return subprocess.CompletedProcess(["mq", *argv], result.exit_code, result.stdout, stderr)


def json_of(result: subprocess.CompletedProcess[str], kind: str, exit_code: int = 0) -> dict[str, Any]:
    """The command's JSON document, validated against the schema of its kind; the command exited `exit_code`
    (verdicts exit by what they found)."""
    assert result.returncode == exit_code, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert doc["kind"] == kind
    jsonschema.validate(doc, load_schema(kind))
    return doc


def one_line_error(result: subprocess.CompletedProcess[str], code: int, *fragments: str) -> None:
    """A failure is one line on stderr with the documented exit code."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert result.stderr.startswith("mq: error: ") and result.stderr.count("\n") == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
