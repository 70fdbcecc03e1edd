"""mqadmin's setConsumeMode (RocketMQ 5): PULL or POP for a group's topic, with mqadmin's options and output."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import usage
from mqtools.cli.admin.mqadmin import command, one_of, run
from mqtools.client.admin.models.consume_modes import MODES

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin


@command("setConsumeMode", "mq admin group consume-mode --set", "Set consume message mode. pull/pop etc.")
def set_consume_mode(
    topic: Annotated[str, typer.Option("-t", "--topicName", help="topic name")],
    group: Annotated[str, typer.Option("-g", "--groupName", help="consumer group name")],
    mode: Annotated[str, typer.Option("-m", "--mode", help="consume mode. PULL/POP")],
    broker_addr: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-b", "--brokerAddr", help="create subscription group to which broker")] = None,
    cluster: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-c", "--clusterName", help="create subscription group to which cluster")] = None,
    share: Annotated[int, typer.Option("-q", "--popShareQueueNum", help="num of queue which share in pop mode")] = 0,
) -> None:
    """Example: mq admin setConsumeMode -c DefaultCluster -t Orders -g OrderConsumers -m POP -q 1"""
    if mode.strip() not in MODES:  # MessageRequestMode.valueOf: exact names only
        raise usage(f"bad mode {mode!r}: use PULL or POP")
    one_of(broker_addr, cluster)

    async def job(admin: MQAdmin) -> list[str]:
        return await admin.consume_modes.set_consume_mode(topic.strip(), group.strip(), mode.strip(), share,
                                                          broker_addr=broker_addr, cluster=cluster)

    for addr in run(job):
        typer.echo(f"set consume mode to {addr} success.")
    typer.echo(f"topic[{topic.strip()}] group[{group.strip()}] consume mode[{mode.strip()}] popShareQueueNum[{share}]",
               nl=False)
