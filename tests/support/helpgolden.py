"""Every command's `--help` (both `mq admin` dialects), as the goldens of tests/unit/cli/test_help_golden.py hold it.

`python tests/support/helpgolden.py` rewrites the goldens: do that only when a command's help is
meant to change, and say so in the commit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

GOLDEN = Path(__file__).parent.parent / "unit" / "cli" / "help_golden.json"
ENV = {"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"}


def command_paths() -> list[list[str]]:
    """Every typer command path, then every mqadmin-dialect name (`mq admin NAME --help`)."""
    from mqtools.cli.admin.mqadmin import CATALOGUE, every
    from mqtools.cli.completions import command_tree

    paths = [p.split()[1:] for p in command_tree()]
    return paths + [["admin", CATALOGUE[name].name] for name in every()]


def help_texts() -> dict[str, str]:
    from mqtools.cli.main import app

    runner = CliRunner()
    out = {}
    for path in command_paths():
        result = runner.invoke(app, [*path, "--help"], env=ENV, prog_name="mq")
        text = "\n".join(line.rstrip() for line in result.output.splitlines())  # rich pads lines to the width
        out[" ".join(["mq", *path])] = f"exit {result.exit_code}\n{text}"
    return out


if __name__ == "__main__":
    GOLDEN.write_text(json.dumps(help_texts(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    sys.stdout.write(f"{GOLDEN}: {len(json.loads(GOLDEN.read_text()))} commands\n")
