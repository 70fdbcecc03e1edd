"""`mq admin msg get|key|unique|at|trace|print|send|consume`: find, read, trace and send messages.

Lookups print one row per message (or every field of one message, with whether each consuming
group has consumed it); `print` and `consume` read queues with tools pulls that commit nothing.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import (
    fail,
    usage,
)
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import View
from mqtools.client.admin.models.messages import (
    MessageHits,
    message_list_view,
    message_trace_view,
    message_view,
    send_result_view,
)
from mqtools.common.exitcodes import EXIT_REFUSED
from mqtools.common.ids import is_offset_msg_id
from mqtools.common.topics import RMQ_SYS_TRACE_TOPIC

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.messages import QueueSpan
    from mqtools.common.message import MessageExt

app = typer.Typer(help="Messages: find by id or key, trace, read queues, send.", no_args_is_help=True)
TopicArg = Annotated[str, typer.Argument(help="Topic.")]
FromOpt = Annotated[Optional[str], typer.Option("--from", help="Stored at or after (epoch ms, ISO, -15m, ...).")]  # noqa: UP045
ToOpt = Annotated[Optional[str], typer.Option("--to", help="Stored before (epoch ms, ISO, now, ...).")]  # noqa: UP045


def times(start: str | None, end: str | None) -> tuple[int | None, int | None]:
    """--from/--to as epoch ms; a bad value is a usage error naming the accepted forms (TimeSpecError)."""
    from mqtools.common.timeparse import parse_time_ms

    now = int(time.time() * 1000)
    return (None if start is None else parse_time_ms(start, now)), (None if end is None else parse_time_ms(end, now))


@admin_command(app, "get", output=True, watch=True)
async def get(
    admin: MQAdmin,
    msg_id: Annotated[str, typer.Argument(help="Offset msgId (names its broker), or a client msgId with --topic.")],
    topic: Annotated[Optional[str], typer.Option("--topic", "-t", help="Topic, to look a client msgId up.")] = None,  # noqa: UP045
) -> View:
    """Every field of one message and whether each consuming group has consumed it.

    Example: mq admin msg get 7F00000100002A9F0000000000000000
    """
    if topic is None and not is_offset_msg_id(msg_id):
        raise usage(f"{msg_id} is not an offset msgId: give --topic to look up a client msgId")
    return message_view(await admin.messages.message_by_id(msg_id, topic))


@admin_command(app, "key", output=True, watch=True)
def key(
    s: Session,
    topic: TopicArg,
    msg_key: Annotated[str, typer.Argument(help="A business key (the message's KEYS).")],
    max_num: Annotated[int, typer.Option("--max", "-m", min=1, help="At most this many.")] = 64,
    start: FromOpt = None, end: ToOpt = None,
) -> None:
    """Messages of a topic whose keys hold KEY, oldest first (the brokers' index).

    Example: mq admin msg key Orders order-1001 --from -1h
    """
    begin_ms, end_ms = times(start, end)

    async def build(admin: MQAdmin) -> View:
        found = await admin.messages.query_by_key(topic, msg_key, max_num=max_num, begin_ms=begin_ms or 0, end_ms=end_ms)
        return message_list_view(topic, found)

    s.show(build)


@admin_command(app, "unique", output=True, watch=True)
async def unique(
    admin: MQAdmin,
    topic: TopicArg,
    uniq_key: Annotated[str, typer.Argument(help="The client msgId (UNIQ_KEY) a producer got back.")],
) -> View:
    """Every stored copy of a message by its client msgId; more than one means it was sent again.

    Example: mq admin msg unique Orders C0A8010A00002A9F0000000000000001
    """
    return message_list_view(topic, await admin.messages.query_by_unique_key(topic, uniq_key))


@admin_command(app, "at", output=True, watch=True)
async def at(
    admin: MQAdmin,
    topic: TopicArg,
    broker: Annotated[str, typer.Argument(help="Broker name.")],
    queue_id: Annotated[int, typer.Argument(help="Queue id.", min=0)],
    offset: Annotated[int, typer.Argument(help="Queue offset.", min=0)],
) -> View:
    """The message at one queue offset, every field.

    Example: mq admin msg at Orders broker-a 0 42
    """
    from mqtools.client.admin.models.configs import MessageQueue

    m = await admin.messages.message_at(MessageQueue(topic, broker, queue_id), offset)
    return message_view(await admin.messages.message_detail(m, f"{topic} {broker} queue {queue_id} offset {offset}"))


@admin_command(app, "trace", output=True, watch=True)
async def trace(
    admin: MQAdmin,
    msg_id: Annotated[str, typer.Argument(help="The client msgId (UNIQ_KEY) the producer got back.")],
    trace_topic: Annotated[str, typer.Option("--trace-topic", "-t", help="The brokers' msgTraceTopicName.")] = (
        RMQ_SYS_TRACE_TOPIC),
) -> View:
    """Who sent a message, where it was stored, who consumed it and how long each step took, from the
    records clients with tracing on wrote to the trace topic (mqadmin queryMsgTraceById). Exit 1 when
    there is none.

    Example: mq admin msg trace C0A8010A00002A9F0000000000000001
    """
    found = await admin.traces.message_trace(msg_id, trace_topic)
    if not found.entries:
        raise fail(f"no trace of {msg_id} in {trace_topic} (clients write traces only with tracing on)",
                   EXIT_REFUSED)
    return message_trace_view(found)


async def read_spans(admin: MQAdmin, spans: list[QueueSpan], limit: int | None, expression: str = "*"
                     ) -> list[MessageExt]:
    """Pull every span to its end (or until `limit` messages), advancing the terminal progress bar."""
    from mqtools.cli.admin.progress import Progress

    found: list[MessageExt] = []
    total = sum(max(0, s.end - s.begin) for s in spans)
    with Progress("reading messages", total=min(total, limit) if limit else total) as progress:
        for span in spans:
            offset = span.begin
            left = None if limit is None else limit - len(found)
            async for result in admin.messages.read_span(span.queue, span.begin, span.end, expression=expression,
                                                         limit=left, broker_id=span.broker_id):
                found += result.messages
                progress.advance(max(len(result.messages), result.next_begin_offset - offset))
                offset = result.next_begin_offset
            if limit is not None and len(found) >= limit:
                break
    return found


@admin_command(app, "print", output=True, watch=True)
def print_(
    s: Session,
    topic: TopicArg, start: FromOpt = None, end: ToOpt = None,
    expression: Annotated[str, typer.Option("--tags", "-s", help="Subscription expression, e.g. 'TagA || TagB'.")] = "*",
) -> None:
    """Every message of a topic (or those stored between two times), queue by queue.

    Example: mq admin msg print Orders --from -15m -o json
    """
    begin_ms, end_ms = times(start, end)

    async def build(admin: MQAdmin) -> View:
        spans = await admin.messages.topic_spans(topic, begin_ms=begin_ms, end_ms=end_ms)
        found = await read_spans(admin, spans.spans, None, expression)
        return message_list_view(topic, MessageHits(found, spans.unreachable),
                                 [f"{len(found)} messages from {len(spans.spans)} queues"])

    s.show(build)


@admin_command(app, "consume", output=True, watch=True)
def consume(
    s: Session,
    topic: TopicArg,
    count: Annotated[int, typer.Option("--count", "-c", min=1, help="At most this many messages.")] = 128,
    start: FromOpt = None, end: ToOpt = None,
) -> None:
    """The oldest COUNT messages of a topic, read as mqadmin's consumeMessage does (no offset is committed).

    Example: mq admin msg consume Orders -c 10
    """
    begin_ms, end_ms = times(start, end)

    async def build(admin: MQAdmin) -> View:
        spans = await admin.messages.topic_spans(topic, begin_ms=begin_ms, end_ms=end_ms)
        return message_list_view(topic, MessageHits(await read_spans(admin, spans.spans, count), spans.unreachable))

    s.show(build)


@admin_command(app, "send", output=True)
def send(
    s: Session,
    topic: TopicArg,
    body: Annotated[str, typer.Argument(help="Message body (UTF-8 text).")],
    tags: Annotated[Optional[str], typer.Option("--tags", help="Tag.")] = None,  # noqa: UP045
    keys: Annotated[Optional[str], typer.Option("--keys", help="Keys, space-separated.")] = None,  # noqa: UP045
    broker: Annotated[Optional[str], typer.Option("--broker", help="Broker name (with --queue).")] = None,  # noqa: UP045
    queue_id: Annotated[Optional[int], typer.Option("--queue", min=0, help="Queue id (with --broker).")] = None,  # noqa: UP045
) -> None:
    """Send one message and print where it was stored.

    Example: mq admin msg send Orders '{"id": 1}' --tags TagA --keys order-1
    """
    if (broker is None) != (queue_id is None):
        raise usage("--broker and --queue go together")

    async def job(admin: MQAdmin) -> View:
        r = await admin.messages.send_message(topic, body.encode("utf-8"), tags=tags, keys=keys, broker_name=broker,
                                              queue_id=queue_id)
        return send_result_view(topic, r)

    s.render(s.run(job))
