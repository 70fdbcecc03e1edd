"""The committed completions match the command tree, and the bash one really completes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from mqtools.cli.completions import command_tree, render

ROOT = Path(__file__).resolve().parents[3]


def test_committed_completions_are_fresh() -> None:
    for name, text in render().items():
        committed = (ROOT / "completions" / name).read_text()
        assert committed == text, f"completions/{name} is stale: run `make completions`"


def test_tree_lists_every_command_group() -> None:
    tree = command_tree()
    assert "mq namesrv" in tree
    assert "namesrv" in tree["mq"][0]
    assert all("--help" in opts for _subs, opts in tree.values())


def _bash_complete(words: list[str]) -> list[str]:
    script = ROOT / "completions" / "mq.bash"
    line = " ".join(words)
    cmd = (
        f"source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _mq; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_bash_completes_subcommands() -> None:
    assert "namesrv" in _bash_complete(["mq", "nam"])
    assert _bash_complete(["mq", "namesrv", "--he"]) == ["--help"]
