"""mqadmin's queryMsgTraceById, printed as mqadmin 4.9 prints it: each send's row, then each consumer
group's deliveries (SubAfter records) under a header of their own, groups in a Java HashMap's order."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

from mqtools.cli.admin.common import run
from mqtools.cli.admin.mqadmin import MsgIdOpt, NamesrvOpt, command
from mqtools.common.javatext import java_format, java_hash_order
from mqtools.common.topics import RMQ_SYS_TRACE_TOPIC

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.messages import MessageTrace, TraceEntry

ROW = "%-10s %-20s %-20s %-20s %-10s %-10s"


def _row(kind: str, entry: TraceEntry) -> str:
    r = entry.record
    stamp = datetime.fromtimestamp((r.timestamp or 0) / 1000).strftime("%Y-%m-%d %H:%M:%S")
    return java_format(ROW, kind, r.group, entry.client_host, stamp, f"{r.cost_ms}ms",
                       "success" if r.success else "failed")


@command("queryMsgTraceById", "mq admin msg trace", "query a message trace")
def query_msg_trace_by_id(
    msg_id: MsgIdOpt,
    trace_topic: Annotated[str, typer.Option("-t", "--traceTopic", help="The name value of message trace topic")] = (
        RMQ_SYS_TRACE_TOPIC),
    namesrv: NamesrvOpt = None,
) -> None:
    """Example: mq admin queryMsgTraceById -i C0A8010A00002A9F0000000000000001"""

    async def job(admin: MQAdmin) -> MessageTrace:
        return await admin.traces.message_trace(msg_id, trace_topic)

    trace = run(namesrv, job)
    consumers: dict[str, list[TraceEntry]] = {}
    for entry in trace.entries:
        kind = entry.record.type.value
        if kind == "Pub":
            typer.echo(java_format(ROW, "#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status"))
            typer.echo(_row("Pub", entry))
            typer.echo("")
        elif kind == "SubAfter":
            consumers.setdefault(entry.record.group or "null", []).append(entry)
    for group in java_hash_order(list(consumers), 16):
        typer.echo(java_format(ROW, "#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status"))
        for entry in consumers[group]:
            typer.echo(_row("Sub", entry))
        typer.echo("")
