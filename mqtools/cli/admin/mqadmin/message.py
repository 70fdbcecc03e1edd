"""mqadmin's message commands: queryMsgById, queryMsgByKey, queryMsgByUniqueKey, queryMsgByOffset,
printMsg, sendMessage, consumeMessage, printing as mqadmin does (Java's toString of MessageExt,
MessageQueue and HashMap included, so scripts that cut its output keep working)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import fail, note, usage
from mqtools.cli.admin.mqadmin import LmqClusterOpt, MsgIdOpt, TopicOpt, charset_option, command, run
from mqtools.client.admin.models.mqadmin_text import (
    java_queue,
    message_detail,
    pull_result_lines,
    with_pull_offsets,
)
from mqtools.client.errors import NoMessageError, UnreachableError
from mqtools.common.exitcodes import EXIT_REFUSED
from mqtools.common.javatext import java_format
from mqtools.common.presentation import partial_note

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.configs import MessageQueue
    from mqtools.client.admin.models.messages import MessageHits, MessageTrack
    from mqtools.client.types import PullResult
    from mqtools.common.message import MessageExt

NO_MESSAGE_TEXT = "query message by key finished, but no message."
"""Apache's MQAdminImpl.queryMessage when no set holds the key (by key and by unique key alike)."""
BODY_DIR = Path("/tmp/rocketmq/msgbodys")
"""Where mqadmin writes each shown message's body."""
SEPARATOR = "-" * 56
SEND = "%-32s  %-4s  %-20s    %s"
TopicNameOpt = Annotated[str, typer.Option("-t", "--topic", help="Topic name")]
"""-t as the commands mqadmin wrote later spell its help (the older ones: TopicOpt)."""
BodyFormatOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "-f", "--bodyFormat", help="print message body by the specified format")]
EndTimestampOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "-e", "--endTimestamp", help="End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")]


def body_file(m: MessageExt, index: int = 0) -> str:
    from mqtools.client.types import message_id

    BODY_DIR.mkdir(parents=True, exist_ok=True)
    path = BODY_DIR / (message_id(m) + (f"_{index}" if index > 0 else ""))
    path.write_bytes(m.body)
    return str(path)


def detail(m: MessageExt, tracks: list[MessageTrack], *, offset_id: bool = True, charset: str | None = None,
           index: int = 0) -> str:
    """The message as queryMsgBy* print it, its body written to mqadmin's body file first."""
    return message_detail(m, tracks, body_file(m, index), offset_id=offset_id, charset=charset)


def settled_hits(hits: MessageHits) -> list[MessageExt]:
    """What queryMsgByKey and queryMsgByUniqueKey print, as Apache's MQAdminImpl.queryMessage settles it: no hit
    is its NO_MESSAGE failure (exit 1) when every set answered, and not known (exit 3, naming the sets) when some
    did not, since they may hold the key; hits that leave a set out are shown with a note naming it, so a short
    list does not pass as whole."""
    if not hits.messages:
        if hits.unreachable:
            missed = "; ".join(str(u) for u in hits.unreachable)
            raise UnreachableError(f"{NO_MESSAGE_TEXT.rstrip('.')} on the broker sets read; not known on {missed}")
        raise NoMessageError(NoMessageError.CODE, NO_MESSAGE_TEXT)
    for line in partial_note(hits.unreachable, "messages stored there are not shown"):
        note(line)
    return hits.messages


def _ms(value: str | None, default: int | None) -> int | None:
    from mqtools.common.timeparse import parse_time_ms

    if value is None:
        return default
    return parse_time_ms(value, int(time.time() * 1000))


@command("queryMsgById", "mq admin msg get", "Query Message by Id.")
def query_msg_by_id(
    topic: TopicOpt,
    msg_id: MsgIdOpt,
    body_format: BodyFormatOpt = None,
    cluster: LmqClusterOpt = None,
) -> None:
    """Example: mq admin queryMsgById -t Orders -i 7F00000100002A9F0000000000000000"""
    charset = charset_option(body_format)

    async def job(admin: MQAdmin) -> bool:
        found_all = True
        for one in (i.strip() for i in msg_id.split(",") if i.strip()):
            m = await admin.messages.find_message(topic, one)
            if m is None:
                typer.echo("\nMessage not found!", nl=False)
                found_all = False
                continue
            typer.echo(detail(m, (await admin.tracking.message_tracks(m)).tracks, charset=charset))
        return found_all

    if not run(job):
        raise typer.Exit(EXIT_REFUSED)


@command("queryMsgByKey", "mq admin msg key", "Query Message by Key.")
def query_msg_by_key(
    topic: TopicNameOpt,
    msg_key: Annotated[str, typer.Option("-k", "--msgKey", help="Message Key")],
    begin: Annotated[Optional[str], typer.Option("-b", "--beginTimestamp", help="Begin timestamp(ms). default:0, eg:1676730526212")] = None,  # noqa: UP045
    end: Annotated[Optional[str], typer.Option("-e", "--endTimestamp", help="End timestamp(ms). default:Long.MAX_VALUE, eg:1676730526212")] = None,  # noqa: UP045
    max_num: Annotated[int, typer.Option("-m", "--maxNum", help="The maximum number of messages returned by the query, default:64")] = 64,
    cluster: LmqClusterOpt = None,
) -> None:
    """Example: mq admin queryMsgByKey -t Orders -k order-1001"""
    from mqtools.client.types import message_id

    begin_ms, end_ms = _ms(begin, 0), _ms(end, None)

    async def job(admin: MQAdmin) -> list[MessageExt]:
        return settled_hits(await admin.messages.query_by_key(topic, msg_key, max_num=max_num,
                                                              begin_ms=begin_ms or 0, end_ms=end_ms))

    found = run(job)
    typer.echo(java_format("%-50s %4s %40s", "#Message ID", "#QID", "#Offset"))
    for m in found:
        typer.echo(java_format("%-50s %4d %40d", message_id(m), m.queue_id, m.queue_offset))


@command("queryMsgByUniqueKey", "mq admin msg unique", "Query Message by Unique key.")
def query_msg_by_unique_key(
    msg_id: MsgIdOpt,
    topic: Annotated[str, typer.Option("-t", "--topic", help="The topic of msg")],
    show_all: Annotated[bool, typer.Option("-a", "--showAll", help="Print all message, the limit is 32")] = False,
    cluster: LmqClusterOpt = None,
) -> None:
    """Example: mq admin queryMsgByUniqueKey -t Orders -i C0A8010A00002A9F0000000000000001"""

    async def job(admin: MQAdmin) -> None:
        found = settled_hits(await admin.messages.query_by_unique_key(topic, msg_id))
        for index, m in enumerate(found if show_all else found[:1]):
            typer.echo(detail(m, (await admin.tracking.message_tracks(m)).tracks, offset_id=False, index=index), nl=False)

    run(job)


@command("queryMsgByOffset", "mq admin msg at", "Query Message by offset.")
def query_msg_by_offset(
    topic: TopicOpt,
    broker: Annotated[str, typer.Option("-b", "--brokerName", help="Broker Name")],
    queue_id: Annotated[int, typer.Option("-i", "--queueId", help="Queue Id")],
    offset: Annotated[int, typer.Option("-o", "--offset", help="Queue Offset")],
    body_format: BodyFormatOpt = None,
) -> None:
    """Example: mq admin queryMsgByOffset -t Orders -b broker-a -i 0 -o 42"""
    from mqtools.client.admin.models.configs import MessageQueue

    charset = charset_option(body_format)
    mq = MessageQueue(topic, broker, queue_id)

    async def job(admin: MQAdmin) -> None:
        await admin.messages.message_queues(topic)  # an unknown topic fails here, with the name server's answer
        result = await admin.messages.pull_messages(mq, offset, max_nums=1)
        hit = next((m for m in result.messages if m.queue_offset == offset), None)
        if hit is None:
            raise fail(f"no message at {java_queue(mq)} offset {offset} ({result.status.value})", EXIT_REFUSED)
        m = with_pull_offsets(hit, result)
        typer.echo(detail(m, (await admin.tracking.message_tracks(m)).tracks, charset=charset))

    run(job)


def print_result(result: PullResult, mq: MessageQueue, charset: str, print_body: bool) -> None:
    for line in pull_result_lines(result, mq, charset, print_body):
        typer.echo(line)


@command("printMsg", "mq admin msg print", "Print Message Detail.")
def print_msg(
    topic: TopicOpt,
    charset_name: Annotated[str, typer.Option("-c", "--charsetName", help="CharsetName(eg: UTF-8,GBK)")] = "UTF-8",
    expression: Annotated[str, typer.Option("-s", "--subExpression", help="Subscribe Expression(eg: TagA || TagB)")] = "*",
    begin: Annotated[Optional[str], typer.Option("-b", "--beginTimestamp", help="Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")] = None,  # noqa: UP045
    end: EndTimestampOpt = None,
    print_body: Annotated[str, typer.Option("-d", "--printBody", help="print body")] = "true",
) -> None:
    """Example: mq admin printMsg -t Orders -b 2026-11-23#10:00:00:000"""
    charset = charset_option(charset_name) or "utf-8"
    begin_ms, end_ms = _ms(begin, None), _ms(end, None)
    body = print_body.strip().lower() == "true"

    async def job(admin: MQAdmin) -> None:
        for mq in await admin.messages.message_queues(topic):
            span = await admin.messages.queue_span(mq, begin_ms=begin_ms, end_ms=end_ms)
            typer.echo(f"minOffset={span.begin}, maxOffset={span.end}, {java_queue(mq)}")
            async for result in admin.messages.read_span(mq, span.begin, span.end, expression=expression, exact=False):
                print_result(result, mq, charset, body)
            typer.echo(SEPARATOR)

    run(job)


@command("sendMessage", "mq admin msg send", "Send a message.")
def send_message(
    topic: TopicNameOpt,
    body: Annotated[str, typer.Option("-p", "--body", help="UTF-8 string format of the message body")],
    keys: Annotated[Optional[str], typer.Option("-k", "--key", help="Message keys")] = None,  # noqa: UP045
    tags: Annotated[Optional[str], typer.Option("-c", "--tags", help="Message tags")] = None,  # noqa: UP045
    broker: Annotated[Optional[str], typer.Option("-b", "--broker", help="Send message to target broker")] = None,  # noqa: UP045
    queue_id: Annotated[Optional[int], typer.Option("-i", "--qid", help="Send message to target queue")] = None,  # noqa: UP045
) -> None:
    """Example: mq admin sendMessage -t Orders -p hello -c TagA -k order-1"""
    if queue_id is not None and broker is None:
        raise usage("Broker name must be set if the queue is chosen!")

    async def job(admin: MQAdmin) -> str:
        r = await admin.messages.send_message(topic, body.strip().encode("utf-8"), tags=tags, keys=keys,
                                     broker_name=broker if queue_id is not None else None, queue_id=queue_id)
        return java_format(SEND, r.queue.broker_name, r.queue.queue_id, r.status.value, r.msg_id)

    row = run(job)
    typer.echo(java_format(SEND, "#Broker Name", "#QID", "#Send Result", "#MsgId"))
    typer.echo(row)


@command("consumeMessage", "mq admin msg consume", "Consume message.")
def consume_message(
    topic: TopicNameOpt,
    broker: Annotated[Optional[str], typer.Option("-b", "--brokerName", help="Broker name")] = None,  # noqa: UP045
    queue_id: Annotated[Optional[int], typer.Option("-i", "--queueId", help="Queue Id")] = None,  # noqa: UP045
    offset: Annotated[Optional[int], typer.Option("-o", "--offset", help="Queue offset")] = None,  # noqa: UP045
    group: Annotated[str, typer.Option("-g", "--consumerGroup", help="Consumer group name")] = "TOOLS_CONSUMER",
    begin: Annotated[Optional[str], typer.Option("-s", "--beginTimestamp", help="Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")] = None,  # noqa: UP045
    end: EndTimestampOpt = None,
    count: Annotated[int, typer.Option("-c", "--MessageNumber", help="Number of message to be consumed")] = 128,
) -> None:
    """Example: mq admin consumeMessage -t Orders -b broker-a -i 0 -o 10 -c 5"""
    from mqtools.client.admin.models.configs import MessageQueue

    now = int(time.time() * 1000)
    begin_ms, end_ms = _ms(begin, 0) or 0, _ms(end, 0) or 0
    if count <= 0:
        raise usage("Please input a positive messageNumber!")
    if queue_id is not None and broker is None:
        raise usage("Please set the brokerName before queueId!")
    if offset is not None and queue_id is None:
        raise usage("Please set queueId before offset!")
    if begin_ms > now:
        raise usage("Please set the beginTimestamp before now!")
    if end_ms > now:
        raise usage("Please set the endTimestamp before now!")
    if end_ms and begin_ms > end_ms:
        raise usage("Please make sure that the beginTimestamp is less than or equal to the endTimestamp")

    async def pull_queue(admin: MQAdmin, mq: MessageQueue, low: int, high: int) -> None:
        """ConsumeMessageCommand.pullMessageByQueue: offsets low..high inclusive."""
        async for result in admin.messages.read_span(mq, low, high + 1, group=group):
            if result.status.value == "FOUND":
                typer.echo("Consume ok")
            print_result(result, mq, "utf-8", True)

    async def bounds(admin: MQAdmin, mq: MessageQueue) -> tuple[int, int]:
        span = await admin.messages.queue_span(mq, begin_ms=begin_ms or None, end_ms=end_ms or None)
        return span.begin, span.end

    async def job(admin: MQAdmin) -> None:
        queues = await admin.messages.message_queues(topic)
        if queue_id is not None:
            mq = MessageQueue(topic, broker or "", queue_id)
            low, high = await bounds(admin, mq)
            start = offset or 0
            if start > high:
                typer.echo(f"{java_queue(mq)} no matched msg, offset={start}")
                return
            low = max(low, start)
            if high - low > count:
                typer.echo(f"The oldler {count} message will be provided")
                high = low + count - 1
            await pull_queue(admin, mq, low, high)
            return
        left = count
        for mq in queues:
            if left == 0:
                return
            low, high = await bounds(admin, mq)
            if high - low > left:
                typer.echo(f"The older {left} message of the {mq.queue_id} queue will be provided")
                high, left = low + left - 1, 0
            else:
                left = max(0, left - (high - low) - 1)
            await pull_queue(admin, mq, low, high)

    run(job)
