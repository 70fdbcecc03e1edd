"""`mq admin schema [KIND]`: the JSON Schema of what `-o json` prints, for scripts to validate against."""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer

from mqtools.cli.admin.common import usage
from mqtools.common.presentation import load_schema, schema_kinds


def schema(
    kind: Annotated[Optional[str], typer.Argument(help="A document kind, e.g. ClusterList.")] = None,  # noqa: UP045
) -> None:
    """The JSON Schema (draft 2020-12) of one kind of `-o json` document, or every kind, one a line.

    Example: mq admin schema MessageList
    """
    if kind is None:
        typer.echo("\n".join(schema_kinds()))
        return
    if kind not in schema_kinds():
        raise usage(f"unknown kind {kind} (known: {', '.join(schema_kinds())})")
    typer.echo(json.dumps(load_schema(kind), indent=2))
