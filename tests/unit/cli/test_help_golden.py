"""`--help` of every command is what it was when the goldens were taken (architecture pass 2 keeps them)."""

from __future__ import annotations

import json

from support.helpgolden import GOLDEN, help_texts


def test_every_commands_help_matches_its_golden() -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    now = help_texts()
    assert sorted(now) == sorted(golden), "commands added or gone: rewrite the goldens (helpgolden.py) on purpose"
    changed = [path for path in golden if now[path] != golden[path]]
    assert not changed, f"--help changed for {changed[:5]}: {now[changed[0]]}"
