"""`mq admin offset reset|skip|clone`: move a group's committed offsets on a topic, old -> new per queue.

Online consumers restart from the new offsets at once (the brokers push them), no restart needed.
`--dry-run` shows the plan and changes nothing; the real run asks first (and refuses without --yes
when not on a terminal).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import (
    DryRunOpt,
    YesOpt,
    confirm,
    usage,
)
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import View
from mqtools.common.timeparse import FORMATS_HELP, parse_time_ms

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.groups import ResetTarget

app = typer.Typer(help="Committed offsets of a group: reset, skip, clone.", no_args_is_help=True)
GroupArg = Annotated[str, typer.Argument(help="Consumer group.")]
TopicArg = Annotated[str, typer.Argument(help="Topic.")]


def _target(to_time: str | None, to_offset: int | None, shift: int | None, earliest: bool, latest: bool,
            broker_name: str | None, queue_id: int | None) -> ResetTarget:
    from mqtools.client.admin.models.groups import ResetTarget

    chosen = [name for name, on in (("--to-time", to_time is not None), ("--to-offset", to_offset is not None),
                                    ("--shift", shift is not None), ("--earliest", earliest),
                                    ("--latest", latest)) if on]
    if len(chosen) != 1:
        raise usage("give exactly one of --to-time, --to-offset, --shift, --earliest, --latest"
                    + (f" (not {' and '.join(chosen)})" if chosen else ""))
    if (broker_name is None) != (queue_id is None):
        raise usage("give -b BROKER_NAME and -q QUEUE_ID together")
    if queue_id is not None and to_offset is None:
        raise usage("-b/-q go with --to-offset")
    if to_time is not None:
        return ResetTarget("time", parse_time_ms(to_time, int(time.time() * 1000)))
    if to_offset is not None:
        return ResetTarget("offset", to_offset, broker_name, queue_id)
    if shift is not None:
        return ResetTarget("shift", shift)
    return ResetTarget("earliest" if earliest else "latest")


def _apply(s: Session, yes: bool, dry_run: bool, question: str, job: Callable[[MQAdmin], Awaitable[View]]) -> None:
    if not dry_run:
        confirm(question, yes)
    s.render(s.run(job))


@admin_command(app, "reset", output=True)
def reset(
    s: Session,
    group: GroupArg, topic: TopicArg,
    to_time: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--to-time", help=f"The first message stored at or after this time: {FORMATS_HELP}.")] = None,
    to_offset: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--to-offset", min=0, help="This offset in every queue (or in the one of -b/-q).")] = None,
    shift: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--shift", help="Move each committed offset by N (negative: back).")] = None,
    earliest: Annotated[bool, typer.Option("--earliest", help="The first message each queue keeps.")] = False,
    latest: Annotated[bool, typer.Option("--latest", help="The end of each queue (skip everything).")] = False,
    broker_name: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-b", "--broker", help="With -q and --to-offset: one queue, by broker name.")] = None,
    queue_id: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "-q", "--queue", min=0, help="With -b and --to-offset: the queue id.")] = None,
    dry_run: DryRunOpt = False, yes: YesOpt = False,
) -> None:
    """Move the group's committed offsets on the topic; offsets are kept within what each queue holds.

    Example: mq admin offset reset OrderConsumers Orders --to-time -1h --dry-run
    """
    target = _target(to_time, to_offset, shift, earliest, latest, broker_name, queue_id)

    async def job(admin: MQAdmin) -> View:
        from mqtools.client.admin.models.groups import offset_reset_view

        rows = await admin.offsets.reset_offsets(group, topic, target, dry_run=dry_run)
        return offset_reset_view(group, topic, "reset", target.describe(), rows, dry_run=dry_run)

    _apply(s, yes, dry_run,
           f"Reset the offsets of group {group} on topic {topic} to {target.describe()}?", job)


@admin_command(app, "skip", output=True)
def skip(
    s: Session,
    group: GroupArg, topic: TopicArg, dry_run: DryRunOpt = False, yes: YesOpt = False,
) -> None:
    """Skip the group's backlog on the topic: every queue to its end.

    Example: mq admin offset skip OrderConsumers Orders --yes
    """
    from mqtools.client.admin.models.groups import ResetTarget, offset_reset_view
    target = ResetTarget("latest")

    async def job(admin: MQAdmin) -> View:
        rows = await admin.offsets.reset_offsets(group, topic, target, dry_run=dry_run)
        return offset_reset_view(group, topic, "skip", "latest", rows, dry_run=dry_run)

    _apply(s, yes, dry_run,
           f"Skip every message group {group} has not consumed on topic {topic}?", job)


@admin_command(app, "clone", output=True)
def clone(
    s: Session,
    src_group: Annotated[str, typer.Argument(help="Group whose offsets are copied.")],
    dest_group: Annotated[str, typer.Argument(help="Group that gets them.")],
    topic: TopicArg, dry_run: DryRunOpt = False, yes: YesOpt = False,
) -> None:
    """Give DEST the offsets SRC committed on the topic (queues SRC never committed on are left alone);
    a DEST not yet configured gets SRC's group config, so it is known before its first consumer starts.

    Example: mq admin offset clone OrderConsumers OrderConsumersV2 Orders --dry-run
    """

    async def job(admin: MQAdmin) -> View:
        from mqtools.client.admin.models.groups import offset_reset_view

        rows = await admin.offsets.clone_group_offset(src_group, dest_group, topic, dry_run=dry_run)
        return offset_reset_view(dest_group, topic, "clone", f"the offsets of {src_group}", rows, dry_run=dry_run,
                                 source=src_group)

    _apply(s, yes, dry_run,
           f"Overwrite the offsets of group {dest_group} on topic {topic} with those of {src_group}?", job)
