"""The CLI's frame: a ToolkitError anywhere below a command is one line and its exit code; Ctrl-C means what
the running command declared (on_interrupt), else it aborts; a missing optional extra is a usage error."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer

from mqtools.cli.frame import FramedGroup, needs_extra, on_interrupt
from mqtools.common.errors import ToolkitError, UsageError
from mqtools.common.exitcodes import EXIT_OK, EXIT_REFUSED, EXIT_USAGE

app = typer.Typer(cls=FramedGroup)
ABORTED = 130
"""What typer makes of a Ctrl-C no command declared a meaning for (128 + SIGINT)."""


@app.command()
def bad() -> None:
    raise UsageError("-x must be a number, not 'y'")


@app.command()
def refused() -> None:
    raise ToolkitError("broker set broker-a has no master registered")


@app.command()
def watch() -> None:
    on_interrupt(EXIT_OK)
    raise KeyboardInterrupt


@app.command()
def drill() -> None:
    on_interrupt(EXIT_REFUSED, "interrupted: restored as far as it got")
    raise KeyboardInterrupt


@app.command()
def once() -> None:
    raise KeyboardInterrupt


@app.command()
def extra() -> None:
    with needs_extra("nothing", "this command"):
        import mqtools_no_such_module  # noqa: F401


def run(*args: str) -> int:
    """The exit code, as mqtools.cli.main.main takes it (an Exit is returned when not standalone)."""
    result = app(args=list(args), prog_name="mq", standalone_mode=False)
    return result if isinstance(result, int) else 0


@pytest.mark.parametrize(("command", "code", "line"), [
    ("bad", EXIT_USAGE, "mq: error: -x must be a number, not 'y'"),
    ("refused", EXIT_REFUSED, "mq: error: broker set broker-a has no master registered"),
    ("drill", EXIT_REFUSED, "mq: error: interrupted: restored as far as it got"),
    ("watch", EXIT_OK, ""),
    ("extra", EXIT_USAGE, ("mq: error: this command needs the nothing extra (mqtools_no_such_module is missing): "
                          "pip install 'mqtools[nothing]'")),
])
def test_the_frame_turns_a_failure_into_one_line_and_its_code(capsys: pytest.CaptureFixture[str], command: str,
                                                              code: int, line: str) -> None:
    assert run(command) == code
    assert capsys.readouterr().err.strip() == line


def test_ctrl_c_without_a_declared_meaning_aborts_and_a_declaration_ends_with_its_command() -> None:
    assert run("once") == ABORTED
    assert run("watch") == EXIT_OK
    assert run("once") == ABORTED  # the watch's declaration did not outlive it


def test_a_command_line_imports_only_the_command_group_it_names() -> None:
    """`mq admin topic --help` imports the topic commands, not the other nouns' modules nor the other groups'
    (each brings its models and their dataclasses: a third of a command's start-up before they were lazy); a
    name no group has still gets its suggestion, which needs them all."""
    probe = ("import sys\nfrom mqtools.cli.main import main\nmain({args})\n"
             "print(' '.join(sorted(m for m in sys.modules if m.startswith('mqtools.cli.'))))")
    run = subprocess.run([sys.executable, "-c", probe.format(args=["admin", "topic", "--help"])],
                         capture_output=True, text=True, check=True)
    loaded = set(run.stdout.splitlines()[-1].split())
    assert "mqtools.cli.admin.topic" in loaded
    assert not loaded & {"mqtools.cli.admin.group", "mqtools.cli.admin.drill", "mqtools.cli.admin.mqadmin",
                         "mqtools.cli.spark_cmd", "mqtools.cli.cluster_cmd", "mqtools.cli.context_cmd"}, loaded
    typo = subprocess.run([sys.executable, "-c", probe.format(args=["admin", "topik"])], capture_output=True,
                          text=True, check=False)
    assert "Did you mean 'topic'?" in typo.stderr, typo.stderr
