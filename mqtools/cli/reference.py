"""docs/reference.md, the command reference, generated from the `mq` command tree.

A hand-written reference drifts from the CLI; this one is rendered from the same click objects
`mq ... --help` prints, so it cannot. Every command path of the typer tree gets a section, then every
mqadmin-dialect command (`mq admin updateTopic`, listed by `mq admin` with no arguments and resolved by
`AdminGroup`, not in the click tree's own command lists). Each section is click's plain help layout
(typer's, without rich's boxes and colours) at a fixed width of 100 columns, so the text is the same on
every machine and terminal. `python -m mqtools.cli.reference docs/reference.md` (`make docs`) rewrites
the file; tests/unit/cli/test_command_reference.py fails when the committed one is stale.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

WIDTH = 100
"""Columns the help is laid out in, as `COLUMNS=100 mq ... --help`."""

HEADER = """# Command reference

Every `mq` command with its help, as `mq ... --help` prints it (click's plain layout at {width}
columns; a terminal shows the same text in boxes). Generated from the command tree by
`python -m mqtools.cli.reference docs/reference.md` (`make docs`): do not edit by hand;
`tests/unit/cli/test_command_reference.py` fails when this file is stale. The conventions all
commands share (name servers, contexts, output formats, exit codes) are in [commands.md](commands.md).
"""

FENCE = "\n```text\n"
"""What opens each command's help block."""

_ESCAPED_MARKUP = re.compile(r"\\\[")
"""Help texts escape a literal `[` for rich (`intro\\[2:W ...]`); rich prints `[`, and so do we."""


def _root() -> Any:
    from mqtools.cli.main import app

    return typer.main.get_command(app)


def _context(cmd: Any, name: str, parent: Any) -> Any:
    settings = {**cmd.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH, "color": False}
    return cmd.context_class(cmd, info_name=name, parent=parent, **settings)


def _plain_help(cmd: Any, ctx: Any) -> str:
    """click's own help layout: typer's classes would hand it to rich when rich is installed."""
    formatter = ctx.make_formatter()
    base = TyperGroup if isinstance(cmd, TyperGroup) else TyperCommand
    super(base, cmd).format_help(ctx, formatter)
    text = _ESCAPED_MARKUP.sub("[", formatter.getvalue())
    return "\n".join(line.rstrip() for line in text.splitlines())


def _visible(group: Any, ctx: Any) -> list[tuple[str, Any]]:
    """A group's subcommands but hidden ones (as `--help` lists them), sorted by name: moving code keeps the order."""
    found = [(name, group.get_command(ctx, name)) for name in group.list_commands(ctx)]
    return sorted((name, cmd) for name, cmd in found if cmd is not None and not cmd.hidden)


def tree_sections() -> Iterator[tuple[str, str]]:
    """(command path, help text) for every command of the typer tree, depth first."""

    def walk(cmd: Any, name: str, parent: Any, path: str) -> Iterator[tuple[str, str]]:
        ctx = _context(cmd, name, parent)
        yield path, _plain_help(cmd, ctx)
        if isinstance(cmd, TyperGroup):
            for sub_name, sub in _visible(cmd, ctx):
                yield from walk(sub, sub_name, ctx, f"{path} {sub_name}")

    yield from walk(_root(), "mq", None, "mq")


def mqadmin_sections() -> Iterator[tuple[str, str]]:
    """(command path, help text) for every mqadmin-dialect command, sorted by name ignoring case."""
    from mqtools.cli.admin.mqadmin import CATALOGUE, every, find

    root = _root()
    root_ctx = _context(root, "mq", None)
    admin_ctx = _context(root.get_command(root_ctx, "admin"), "admin", root_ctx)
    for entry in sorted((CATALOGUE[name] for name in every()), key=lambda e: e.name.lower()):
        cmd = find(entry.name)
        if cmd is not None and not cmd.hidden:
            yield f"mq admin {entry.name}", _plain_help(cmd, _context(cmd, entry.name, admin_ctx))


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def render() -> str:
    """The whole of docs/reference.md."""
    tree = list(tree_sections())
    dialect = list(mqadmin_sections())
    out = [HEADER.format(width=WIDTH)]
    out.append("## Contents\n")
    out += [f"{'  ' * (len(p.split()) - 1)}- [`{p}`](#{anchor(p)})" for p, _ in tree]
    out.append(
        f"- [The mqadmin dialect](#the-mqadmin-dialect): {len(dialect)} commands under mqadmin's own names"
    )
    out.append("")
    for path, text in tree:
        out.append(f"## {path}\n{FENCE}{text}\n```\n")
    out += [
        "## The mqadmin dialect",
        "",
        "`mq admin` also takes every classic mqadmin command under its own name, in any letter case, with",
        "mqadmin's options and output format (`mq admin` with no arguments lists them with their mq twins).",
        "They are not in `mq admin --help`'s list; each is here with its help.",
        "",
    ]
    out += [f"- [`{p.split()[-1]}`](#{anchor(p)})" for p, _ in dialect]
    out.append("")
    for path, text in dialect:
        out.append(f"### {path}\n{FENCE}{text}\n```\n")
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    target = Path(argv[0] if argv else "docs/reference.md")
    target.parent.mkdir(parents=True, exist_ok=True)
    text = render()
    target.write_text(text, encoding="utf-8")
    sys.stdout.write(f"{target}: {text.count(FENCE)} commands\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
