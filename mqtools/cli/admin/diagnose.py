"""`mq admin diagnose`: one verdict with its evidence (mqtools.diagnose), rendered as a table or JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import Column, View
from mqtools.diagnose.findings import exit_code
from mqtools.diagnose.group import DEFAULTS, GroupDiagnosis, Thresholds

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

app = typer.Typer(help="Verdicts with evidence: why a group lags (healthy, slow, stalled, unowned queues, "
                       "rebalancing, blocked by retries, offline, stuck orderly queue).", no_args_is_help=True)
QUEUE_COLUMNS = [Column("TOPIC"), Column("BROKER"), Column("QID", True), Column("BROKER OFFSET", True),
                 Column("CONSUMER OFFSET", True), Column("LAG", True), Column("IN/S", True), Column("OUT/S", True),
                 Column("OWNER"), Column("LOCKED")]


def group_view(d: GroupDiagnosis) -> View:
    rows = [[q.queue.topic, q.queue.broker_name, q.queue.queue_id, q.broker_offset, q.consumer_offset, q.lag,
             q.produced_per_s, q.consumed_per_s, q.owner, q.locked] for q in d.queues]
    footer = [f"{d.summary}",
              (f"window {d.window_s:.1f} s: lag {_n(d.lag)} (was {_n(d.lag_at_start)}), in {_rate(d.produce_tps)}, "
              f"out {_rate(d.consume_tps)}, drains in {_n(d.drain_s, 's')}, retries {_n(d.retry_growth)}, "
              f"to DLQ {_n(d.dlq_growth)}")]
    footer += [f"member {m.client_id} {m.version or 'n/a'}{' orderly' if m.orderly else ''}, holds "
               f"{'n/a' if m.held is None else len(m.held)} queue(s)" for m in d.members]
    footer += [f"also: {', '.join(d.also)}"] if d.also else []
    footer += [f"next: {a}" for a in d.actions]
    return View("GroupDiagnosis", QUEUE_COLUMNS, rows, d.to_json(), title=f"{d.group}: {d.verdict.upper()}",
                footer=footer)


def _n(value: float | None, unit: str = "") -> str:
    if value is None:
        return "n/a"
    return f"{value:,.0f}{' ' + unit if unit else ''}"


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f} msgs/s"


@admin_command(app, "group", output=True, timeout=5.0)
def group(
    s: Session,
    name: Annotated[str, typer.Argument(help="The consumer group.")],
    window: Annotated[float, typer.Option(
        "--window", help="Seconds of samples the verdict is taken over (10 at least: clients commit offsets every "
                         "5 s, so a shorter window could take a working queue for a stalled one).",
        min=DEFAULTS.min_window)] = DEFAULTS.min_window,
    lag_ok: Annotated[int, typer.Option("--lag-ok", help="A backlog up to this many messages is healthy.",
                                        min=0)] = DEFAULTS.lag_ok,
    retry_share: Annotated[float, typer.Option(
        "--retry-share", help="Retries at this share of what is consumed block the group.", min=0.0)] = DEFAULTS.retry_share,
) -> None:
    """Why does this group lag? One verdict, the queues, members and rates that show it, and what to run next.
    Exit 0 healthy or rebalancing, 1 needs action, 3 unknown.

    Example: mq admin diagnose group OrderConsumers --window 15 -o json
    """
    from mqtools.diagnose.collect import diagnose_group

    thresholds = Thresholds(lag_ok=lag_ok, retry_share=retry_share)

    async def job(admin: MQAdmin) -> GroupDiagnosis:
        return await diagnose_group(admin, name, window, thresholds)

    result = s.run(job)
    s.render(group_view(result))
    raise typer.Exit(exit_code([result.severity]))
