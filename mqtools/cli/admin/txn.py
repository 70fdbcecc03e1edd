"""`mq admin txn list`: transactions the brokers hold open, with their producer groups and ages."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import Column, View
from mqtools.common.presentation import when

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

app = typer.Typer(help="Transactional messages: what is still open.", no_args_is_help=True)


@admin_command(app, "list", output=True, watch=True)
def list_(
    s: Session,
    group: Annotated[Optional[str], typer.Option("--group", "-g", help="Only this producer group.")] = None,  # noqa: UP045
) -> None:
    """Every half message no commit or rollback has ended yet, oldest first: its broker, producer group,
    topic, msgId, age and how often the broker has asked its producers (the check service's figures; a
    transaction checked transactionCheckMax times is given up on).

    Example: mq admin txn list -g OrderTx
    """

    async def build(admin: MQAdmin) -> View:
        brokers = await admin.open_transactions()
        open_ = [t for b in brokers for t in b.open if group is None or t.producer_group == group]
        rows = [[t.broker_name, t.producer_group, t.topic, t.msg_id, when(t.born_timestamp),
                 round(t.age_ms / 1000, 1), t.checks] for t in open_]
        per_group = Counter(t.producer_group for t in open_)
        footer = [f"{n} open in producer group {g}" for g, n in sorted(per_group.items(), key=lambda e: str(e[0]))]
        footer += [f"{b.broker_name}: more than {b.scanned} half messages; only those were read" for b in brokers
                   if b.cut]
        footer += [f"{b.broker_name}: not known ({b.error})" for b in brokers if b.error]
        if not brokers:
            footer.append("no broker has stored a transactional message")
        data = {"brokers": [{"brokerName": b.broker_name, "brokerAddr": b.broker_addr, "scanned": b.scanned,
                             "cut": b.cut, "error": b.error} for b in brokers],
                "transactions": [{"brokerName": t.broker_name, "producerGroup": t.producer_group, "topic": t.topic,
                                  "msgId": t.msg_id, "bornTimestamp": t.born_timestamp, "ageMs": t.age_ms,
                                  "checks": t.checks} for t in open_]}
        return View("OpenTransactions", [Column("BROKER"), Column("PRODUCER GROUP"), Column("TOPIC"),
                                         Column("MSG ID"), Column("BORN"), Column("AGE S", True),
                                         Column("CHECKS", True)], rows, data, footer=footer)

    s.show(build)
