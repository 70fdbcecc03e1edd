"""mqadmin's queryMsgTraceById, printed as mqadmin 4.9 prints it: each send's row, then each consumer
group's deliveries (SubAfter records) under a header of their own, groups in a Java HashMap's order."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mqtools.cli.admin.mqadmin import MsgIdOpt, command, run
from mqtools.client.admin.models.mqadmin_text import trace_lines
from mqtools.common.topics import RMQ_SYS_TRACE_TOPIC

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.messages import MessageTrace


@command("queryMsgTraceById", "mq admin msg trace", "query a message trace")
def query_msg_trace_by_id(
    msg_id: MsgIdOpt,
    trace_topic: Annotated[str, typer.Option("-t", "--traceTopic", help="The name value of message trace topic")] = (
        RMQ_SYS_TRACE_TOPIC),
) -> None:
    """Example: mq admin queryMsgTraceById -i C0A8010A00002A9F0000000000000001"""

    async def job(admin: MQAdmin) -> MessageTrace:
        return await admin.traces.message_trace(msg_id, trace_topic)

    for line in trace_lines(run(job)):
        typer.echo(line)
