"""`mq admin`: mqadmin's operations in two dialects over one admin API.

The mq dialect is noun then verb (`mq admin topic route Orders`), with tables, JSON and CSV. The
mqadmin dialect accepts every classic mqadmin command under its own name, case-insensitively, with
mqadmin's option letters and output format (`mq admin updateTopic -c DefaultCluster -t T`), so a
runbook written for mqadmin works with `mq admin` in its place. Both call `mqtools.client.admin`.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from mqtools.cli.admin import cluster
from mqtools.cli.admin.common import EXIT_CODES_HELP


class AdminGroup(TyperGroup):
    """Looks a command up by its mq name first, then by its mqadmin name in any letter case."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = super().get_command(ctx, cmd_name)
        if found is not None:
            return found
        from mqtools.cli.admin.mqadmin import find

        return find(cmd_name)


app = typer.Typer(
    cls=AdminGroup,
    help=f"mqadmin-style operations on a RocketMQ cluster (ours or Apache's). {EXIT_CODES_HELP}",
    no_args_is_help=True,
)
app.add_typer(cluster.app, name="cluster")
