"""mqadmin's subscription-group and offset commands: updateSubGroup, deleteSubGroup and
resetOffsetByTime, with mqadmin's options and output (RocketMQ 5 layouts)."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import note, usage
from mqtools.cli.admin.mqadmin import LmqClusterOpt, command, one_of, run
from mqtools.cli.admin.mqadmin.topic import attributes_of, said_per_master
from mqtools.client.admin.models.mqadmin_text import group_config_text, reset_lines
from mqtools.common.javatext import java_bool, java_format

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.groups import OffsetReset

GroupNameOpt = Annotated[str, typer.Option("-g", "--groupName", help="consumer group name")]
JAVA_LONG = re.compile(r"-?\d+")
"""A timestamp mqadmin takes as a long, as it is."""


@command("updateSubGroup", "mq admin group create|update", "Update or create subscription group.")
def update_sub_group(
    group: GroupNameOpt,
    broker_addr: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-b", "--brokerAddr", help="create subscription group to which broker")] = None,
    cluster: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-c", "--clusterName", help="create subscription group to which cluster")] = None,
    consume_enable: Annotated[Optional[str], typer.Option("-s", "--consumeEnable", help="consume enable")] = None,  # noqa: UP045
    from_min: Annotated[Optional[str], typer.Option("-m", "--consumeFromMinEnable", help="from min offset")] = None,  # noqa: UP045
    broadcast: Annotated[Optional[str], typer.Option("-d", "--consumeBroadcastEnable", help="broadcast")] = None,  # noqa: UP045
    orderly: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-o", "--consumeMessageOrderly", help="consume message orderly")] = None,
    retry_queues: Annotated[Optional[int], typer.Option("-q", "--retryQueueNums", help="retry queue nums")] = None,  # noqa: UP045
    retry_max: Annotated[Optional[int], typer.Option("-r", "--retryMaxTimes", help="retry max times")] = None,  # noqa: UP045
    retry_policy: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-p", "--groupRetryPolicy", help="the json string of retry policy (not supported by mq)")] = None,
    broker_id: Annotated[Optional[int], typer.Option("-i", "--brokerId", help="consumer from which broker id")] = None,  # noqa: UP045
    slow_broker_id: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "-w", "--whichBrokerWhenConsumeSlowly", help="which broker id when consume slowly")] = None,
    notify: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-a", "--notifyConsumerIdsChanged", help="notify consumerId changed")] = None,
    attributes: Annotated[Optional[str], typer.Option("--attributes", help="attribute(+a=b,+c=d,-e)")] = None,  # noqa: UP045
) -> None:
    """Example: mq admin updateSubGroup -c DefaultCluster -g OrderConsumers -r 5"""
    import dataclasses

    from mqtools.client.admin.models.configs import SubscriptionGroupConfig

    one_of(broker_addr, cluster)
    if retry_policy is not None:
        raise usage("-p/--groupRetryPolicy is not supported: mq's subscription group config does not carry a retry "
                    "policy (RocketMQ's default applies)")
    given = {"consume_enable": consume_enable, "consume_from_min_enable": from_min,
             "consume_broadcast_enable": broadcast, "consume_message_orderly": orderly,
             "notify_consumer_ids_changed_enable": notify}
    numbers = {"retry_queue_nums": retry_queues, "retry_max_times": retry_max, "broker_id": broker_id,
               "which_broker_when_consume_slowly": slow_broker_id}
    config = dataclasses.replace(
        SubscriptionGroupConfig(group.strip(), consume_broadcast_enable=False, consume_from_min_enable=False,
                                attributes=attributes_of(attributes)),
        **{k: java_bool(v) for k, v in given.items() if v is not None},
        **{k: v for k, v in numbers.items() if v is not None})

    async def job(admin: MQAdmin) -> list[str]:
        if broker_addr is not None:
            return await admin.groups.create_subscription_group(config, broker_addr=broker_addr.strip())
        return await admin.groups.create_subscription_group(config, cluster=(cluster or "").strip())

    with said_per_master(lambda addr, result: f"create subscription group to {addr} {result}."):
        addrs = run(job)
    for addr in addrs:
        typer.echo(f"create subscription group to {addr} success.")
    typer.echo(group_config_text(config))


@command("deleteSubGroup", "mq admin group delete", "Delete subscription group from broker.")
def delete_sub_group(
    group: Annotated[str, typer.Option("-g", "--groupName", help="subscription group name")],
    broker_addr: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-b", "--brokerAddr", help="delete subscription group from which broker")] = None,
    cluster: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-c", "--clusterName", help="delete subscription group from which cluster")] = None,
    remove_offset: Annotated[Optional[str], typer.Option("-r", "--removeOffset", help="remove offset")] = None,  # noqa: UP045
) -> None:
    """Example: mq admin deleteSubGroup -c DefaultCluster -g OldConsumers -r true"""
    from mqtools.client.errors import MQClientError
    from mqtools.common.topics import dlq_topic, retry_topic

    one_of(broker_addr, cluster)
    name, clean = group.strip(), java_bool(remove_offset)
    where = (cluster or "").strip()

    def line(addr: str, result: str) -> str:
        return f"delete subscription group [{name}] from broker [{addr}] in cluster [{where}] {result}."

    async def job(admin: MQAdmin) -> None:
        """The masters' lines as each step ends; the %RETRY% and %DLQ% topics' deletion after, whose failure is
        said (stderr) and swallowed, as mqadmin's DeleteSubscriptionGroupCommand swallows it: the group is gone."""
        await admin.groups.subscription_group(name)
        if broker_addr is not None:
            await admin.groups.delete_subscription_group(name, broker_addr=broker_addr.strip(), clean_offset=clean)
            typer.echo(f"delete subscription group [{name}] from broker [{broker_addr.strip()}] success.")
            return
        with said_per_master(line):
            addrs = await admin.groups.delete_subscription_group(name, cluster=where, clean_offset=clean)
        for addr in addrs:
            typer.echo(line(addr, "success"))
        for topic in (retry_topic(name), dlq_topic(name)):
            try:
                await admin.topics.delete_topic(topic, where)
            except MQClientError as exc:
                note(exc.summary())

    run(job)


@command("resetOffsetByTime", "mq admin offset reset", "Reset consumer offset by timestamp(without client restart).")
def reset_offset_by_time(
    group: Annotated[str, typer.Option("-g", "--group", help="set the consumer group")],
    topic: Annotated[str, typer.Option("-t", "--topic", help="set the topic")],
    timestamp: Annotated[str, typer.Option(
        "-s", "--timestamp", help="set the timestamp\\[now|currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")],
    force: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-f", "--force", help="set the force rollback by timestamp switch\\[true|false]. Deprecated.")] = None,
    cplus: Annotated[bool, typer.Option(
        "--cplus", help="reset c++ client offset. Deprecated: the broker answers each client in its own form.")] = False,
    broker_addr: Annotated[Optional[str], typer.Option("-b", "--broker", help="broker addr")] = None,  # noqa: UP045
    queue_id: Annotated[Optional[int], typer.Option("-q", "--queue", help="queue id")] = None,  # noqa: UP045
    offset: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "-o", "--offset", help="Expect queue offset, not support old version broker")] = None,
    cluster: LmqClusterOpt = None,
) -> None:
    """Example: mq admin resetOffsetByTime -g OrderConsumers -t Orders -s now"""
    from mqtools.client.admin.models.groups import unpushed_warning
    from mqtools.common.timeparse import parse_time_ms

    del cplus  # accepted for old runbooks; the broker picks the C++ body per client
    name, where, text = group.strip(), topic.strip(), timestamp.strip()
    # mqadmin reads any long as epoch ms, -1 too (the end of each queue); a bad time is a TimeSpecError
    stamp = int(text) if JAVA_LONG.fullmatch(text) else parse_time_ms(text, int(time.time() * 1000))
    forced = force is None or java_bool(force)

    if broker_addr is not None and queue_id is not None and queue_id >= 0:
        addr = broker_addr.strip()
        typer.echo(f"start reset consumer offset by specified, group[{name}], topic[{where}], queueId[{queue_id}], "
                   f"broker[{addr}], timestamp(string)[{text}], timestamp(long)[{stamp}]")

        async def one_queue(admin: MQAdmin) -> int:
            from mqtools.client.admin.models.groups import ResetTarget

            broker = next((n for n, a in (await admin.route_masters(where)).items() if a == addr), None)
            if broker is None:
                raise usage(f"{addr} is not a master serving topic {where}")
            target = ResetTarget("offset", offset, broker, queue_id) if offset is not None else \
                ResetTarget("time", stamp, broker, queue_id)
            return (await admin.offsets.reset_offsets(name, where, target))[0].new

        typer.echo(java_format("reset consumer offset to %d", run(one_queue)))
        return

    async def every_queue(admin: MQAdmin) -> list[OffsetReset]:
        return await admin.offsets.reset_offset_by_time(name, where, stamp, force=forced,
                                                cluster=cluster.strip() if cluster else None)

    rows = run(every_queue)
    typer.echo(f"start reset consumer offset by specified, group[{name}], topic[{where}], "
               f"force[{str(forced).lower()}], timestamp(string)[{text}], timestamp(long)[{stamp}]")
    for line in reset_lines(rows):
        typer.echo(line)
    if warning := unpushed_warning(name, rows):
        note(warning)
