"""Running `mq` as a user does: in this process through its console entry point (`mq_here`, most tests) or as a
process of its own (`mq`); checking its JSON against the shipped schema and its errors against the one-line rule."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import jsonschema

from mqtools.common.presentation import load_schema

T = TypeVar("T")


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
    """`mq ARGS` run inside this process through the console entry point (`main`), for tests that run dozens of
    commands (a process start costs 0.7 s of CPU): stdin, stdout and stderr swapped for buffers by typer's
    CliRunner and `env` set meanwhile; the exit code as returncode, a traceback on stderr as a process would print
    it. Called from a running event loop (an async test), it runs on a thread and holds that loop until it is
    done, as `mq` does. Not for calls from several threads at once (the swap is process-wide): those use `mq`."""
    from typer.testing import CliRunner

    from mqtools.cli.main import main

    argv = [*args, *(["-n", namesrv] if namesrv is not None else [])]

    def invoke() -> tuple[int, str, str]:
        with CliRunner().isolation(input=stdin, env={"NAMESRV_ADDR": None, **(env or {})}) as (out, err, _):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except Exception:  # noqa: BLE001 - what the process would print before dying with 1
                sys.stderr.write(traceback.format_exc())
                code = 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
            return code, out.getvalue().decode(), err.getvalue().decode()

    code, stdout, stderr = invoke() if not _loop_running() else _in_thread(invoke)
    return subprocess.CompletedProcess(["mq", *argv], code, stdout, stderr)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _in_thread(call: Callable[[], T]) -> T:
    """`call()` on a thread of its own, waited for: an async test calls the CLI as it calls a subprocess, holding its
    loop meanwhile, and the CLI runs its own loop there."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result()


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
