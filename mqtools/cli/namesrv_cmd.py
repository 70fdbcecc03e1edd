"""`mq namesrv ...`: the name server role."""

from __future__ import annotations

import typer

app = typer.Typer(help="Name server role.", no_args_is_help=True)
