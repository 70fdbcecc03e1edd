"""`mq admin dlq list|resend`: the messages a group gave up on, and putting them back for it.

resend stores a copy on the group's retry topic (%RETRY%GROUP), which every consumer of the group
reads, so only that group receives it again, under its original topic and msgId; other groups of
the topic see nothing twice. The dead copy stays in the DLQ.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import (
    YesOpt,
    confirm,
    usage,
)
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import View
from mqtools.client.admin.models.messages import message_list_view
from mqtools.common.exitcodes import EXIT_REFUSED

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

app = typer.Typer(help="Dead-letter queues (%DLQ%GROUP): list, resend.", no_args_is_help=True)
GroupArg = Annotated[str, typer.Argument(help="Consumer group.")]


@admin_command(app, "list", output=True, watch=True)
async def list_(admin: MQAdmin, group: GroupArg) -> View:
    """Every message in the group's DLQ, oldest first (none when the group never gave up on one).

    Example: mq admin dlq list OrderConsumers
    """
    from mqtools.common.topics import dlq_topic

    return message_list_view(dlq_topic(group), await admin.dlq.dead_messages(group))


@admin_command(app, "resend", output=True)
def resend(
    s: Session,
    group: GroupArg,
    msg_ids: Annotated[Optional[list[str]], typer.Argument(help="msgIds (or offset msgIds) from `dlq list`.")] = None,  # noqa: UP045
    all_: Annotated[bool, typer.Option("--all", help="Every message in the DLQ.")] = False,
    yes: YesOpt = False,
) -> None:
    """Put dead messages back on the group's retry topic, so the group's consumers receive them again.

    The copy keeps its msgId, keys and original topic, with reconsume times back at 0, and is
    delivered once more even when the group's retryMaxTimes is 0. Other groups of the topic are not
    touched. The dead copy stays in the DLQ. Exit 1 when any message could not be resent.

    Example: mq admin dlq resend OrderConsumers C0A8010A00002A9F0000000000000001
    """
    if all_ == bool(msg_ids):
        raise usage("give msgIds or --all (not both)")
    if all_:
        confirm(f"Resend every message in the DLQ of {group}?", yes)

    async def job(admin: MQAdmin) -> View:
        from mqtools.client.admin.models.messages import dlq_resend_view

        return dlq_resend_view(group, await admin.dlq.resend_dead(group, None if all_ else msg_ids))

    view = s.run(job)
    s.render(view)
    if any(not r["resent"] for r in view.data["results"]):
        raise typer.Exit(EXIT_REFUSED)
