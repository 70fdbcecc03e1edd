"""`mq top` as a command: usage errors and an unreachable cluster are one line with mq's exit codes,
and `mq --help` does not import Textual."""

from __future__ import annotations

import subprocess
import sys

from support.adminsupport import mq_here, one_line_error
from support.ports import free_port


def free_addr() -> str:
    return f"127.0.0.1:{free_port()}"


def test_without_a_terminal_it_asks_for_once() -> None:
    one_line_error(mq_here("top", namesrv=free_addr()), 2, "mq top needs a terminal; use --once")


def test_bad_output_and_no_name_server() -> None:
    one_line_error(mq_here("top", "--once", "-o", "csv", namesrv=free_addr()), 2, "-o must be one of table, json")
    one_line_error(mq_here("top", "--once", env={"MQ_CONFIG_DIR": "/nonexistent/mq-top-test"}), 2, "no name server")


def test_once_against_a_cluster_that_does_not_answer() -> None:
    one_line_error(mq_here("top", "--once", "-o", "json", "--timeout", "1", namesrv=free_addr()), 3,
                   "no name server answered")


def test_help_does_not_import_textual() -> None:
    code = ("import sys; from mqtools.cli.main import main; rc = main(['--help']); "
            "assert 'textual' not in sys.modules and 'mqtools.tui' not in sys.modules, 'imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert " top " in done.stdout
