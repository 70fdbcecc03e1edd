"""docs/reference.md is what `make docs` renders from the command tree now, and names every command."""

from __future__ import annotations

from pathlib import Path

from mqtools.cli.admin.mqadmin import CATALOGUE, find
from mqtools.cli.completions import command_tree
from mqtools.cli.reference import render

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "docs" / "reference.md"


def test_committed_reference_is_fresh() -> None:
    committed = REFERENCE.read_text(encoding="utf-8")
    assert committed == render(), "docs/reference.md is stale: run `make docs`"


def test_reference_has_a_section_for_every_command() -> None:
    headings = {line.lstrip("#").strip() for line in REFERENCE.read_text(encoding="utf-8").splitlines()
                if line.startswith(("## ", "### "))}
    find("")  # registers the mqadmin dialect
    commands = [*command_tree(), *(f"mq admin {entry.name}" for entry in CATALOGUE.values())]
    missing = [path for path in commands if path not in headings]
    assert not missing, f"commands without a section in docs/reference.md: {missing[:5]}"
    assert len(commands) > 100  # the walk found the tree, not an empty app


def test_rendering_is_deterministic() -> None:
    assert render() == render()


def test_each_section_is_plain_help_at_100_columns() -> None:
    text = render()
    assert "\x1b[" not in text and "╭" not in text  # no colours, no rich boxes
    assert "Usage: mq admin topic status [OPTIONS]" in text
    assert "intro[2:W 4:R; 6:RW]" in text  # rich's markup escape undone, as `--help` shows it
    blocks = text.split("```text\n")[1:]
    assert all(len(line) <= 100 for block in blocks for line in block.split("```")[0].splitlines())


def test_cluster_options_may_go_before_the_command() -> None:
    """`mq admin -n NS topic list` is the command with -n (not 'No such option'): an address nothing listens on
    is unreachable (exit 3), not a usage error; the command's own -n wins over the one before it."""
    import socket

    from typer.testing import CliRunner

    from mqtools.cli.main import app
    from mqtools.common.exitcodes import EXIT_UNREACHABLE

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{sock.getsockname()[1]}"
    runner = CliRunner()
    before = runner.invoke(app, ["admin", "-n", dead, "topic", "list", "--timeout", "1"], prog_name="mq")
    assert before.exit_code == EXIT_UNREACHABLE and dead in before.output, before.output
    own = runner.invoke(app, ["admin", "-n", "no-such-host-at-all:1", "topic", "list", "-n", dead, "--timeout", "1"],
                        prog_name="mq")
    assert own.exit_code == EXIT_UNREACHABLE and dead in own.output, own.output
