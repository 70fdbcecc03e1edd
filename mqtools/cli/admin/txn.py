"""`mq admin txn list`: transactions the brokers hold open, with their producer groups and ages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.session import admin_command
from mqtools.cli.output import View

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

app = typer.Typer(help="Transactional messages: what is still open.", no_args_is_help=True)


@admin_command(app, "list", output=True, watch=True)
async def list_(
    admin: MQAdmin,
    group: Annotated[Optional[str], typer.Option("--group", "-g", help="Only this producer group.")] = None,  # noqa: UP045
) -> View:
    """Every half message no commit or rollback has ended yet, oldest first: its broker, producer group,
    topic, msgId, age and how often the broker has asked its producers (the check service's figures; a
    transaction checked transactionCheckMax times is given up on).

    Example: mq admin txn list -g OrderTx
    """
    from mqtools.client.admin.models.transactions import open_transactions_view

    return open_transactions_view(await admin.transactions.open_transactions(), group)
