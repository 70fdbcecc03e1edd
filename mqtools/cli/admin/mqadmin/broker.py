"""mqadmin's broker commands: brokerStatus, getBrokerConfig, updateBrokerConfig, brokerConsumeStats,
cleanExpiredCQ and clusterRT, in mqadmin's output format."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import usage
from mqtools.cli.admin.mqadmin import command, run, run_until_interrupted
from mqtools.cli.admin.mqadmin.topic import said_per_master
from mqtools.client.admin.models.mqadmin_text import broker_consume_lines, config_lines
from mqtools.client.errors import MQClientError, NoMasterError, PartialWriteError, settled, write_outcome
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.exitcodes import EXIT_PARTIAL
from mqtools.common.javatext import java_format
from mqtools.common.presentation import NA

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.configs import ClusterInfo

BrokerAddrOpt = Annotated[Optional[str], typer.Option("-b", "--brokerAddr", help="Broker address")]  # noqa: UP045
RT_HEADER = "%-24s  %-24s  %-4s  %-8s  %-8s"
RT_ROW = "%-24s  %-24s  %-8s  %-16s  %-16s"


def known_cluster(info: ClusterInfo, cluster: str) -> None:
    """An unknown cluster is a usage error, naming the known ones."""
    if cluster not in info.cluster_addr_table:
        raise usage(f"cluster {cluster} not found (known: {', '.join(sorted(info.cluster_addr_table)) or 'none'})")


def cluster_sets(info: ClusterInfo, cluster: str) -> dict[str, dict[int, str]]:
    """broker name -> {broker id: address}, by name and id, of every broker set of a cluster, the sets with no
    master too (mqadmin's CommandUtil reads them from the same table); an unknown cluster is a usage error."""
    known_cluster(info, cluster)
    tables = {name: info.broker_addr_table.get(name) for name in sorted(info.cluster_addr_table[cluster])}
    return {name: dict(sorted(data.broker_addrs.items())) for name, data in tables.items() if data and data.broker_addrs}


def every_addr(info: ClusterInfo, cluster: str) -> list[str]:
    """Every address of every broker set of a cluster, by set name and broker id: the sets with no master too,
    as mqadmin's CommandUtil.fetchMasterAndSlaveAddrByClusterName gives them; an unknown cluster is a usage
    error."""
    return [addr for addrs in cluster_sets(info, cluster).values() for addr in addrs.values()]


def masterless(sets: dict[str, dict[int, str]]) -> list[str]:
    """The sets no master is registered for (mqadmin leaves them out of a -c command without a word)."""
    return [name for name, addrs in sets.items() if MASTER_ID not in addrs]


def end_of_read(answers: Iterable[object]) -> None:
    """A read of several brokers, each failure named on stderr already: exit 4 (partial) when some failed, the
    first failure's code when all did."""
    answers = list(answers)
    failed = [a for a in answers if isinstance(a, MQClientError)]
    if failed and len(failed) == len(answers):
        raise typer.Exit(failed[0].exit_code)
    if failed:
        raise typer.Exit(EXIT_PARTIAL)


@command("brokerStatus", "mq admin broker status", "Fetch broker runtime status data.")
def broker_status(
    broker_addr: BrokerAddrOpt = None,
    cluster: Annotated[Optional[str], typer.Option("-c", "--clusterName", help="which cluster")] = None,  # noqa: UP045
) -> None:
    """-c: every broker of the cluster, each asked on its own: one that fails is a line on stderr (where mqadmin
    prints its stack trace and goes on) and the others are still shown; exit 4 (partial) when one did not answer,
    3 when none did.

    Example: mq admin brokerStatus -b 127.0.0.1:10911
    """
    if (broker_addr is None) == (cluster is None):
        raise usage("give one of -b/--brokerAddr and -c/--clusterName")

    async def job(admin: MQAdmin) -> None:
        if broker_addr is not None:
            for key, value in sorted((await admin.brokers.broker_runtime_info(broker_addr)).raw.items()):
                typer.echo(java_format("%-32s: %s", key, value))
            return
        addrs = every_addr(await admin.cluster_info(), cluster or "")
        answers = await asyncio.gather(*(settled(admin.brokers.broker_runtime_info(a)) for a in addrs))
        for addr, answer in zip(addrs, answers, strict=True):
            if isinstance(answer, MQClientError):
                typer.echo(f"brokerStatus of {addr} failed: {answer.summary()}", err=True)
                continue
            for key, value in sorted(answer.raw.items()):
                typer.echo(java_format("%-24s %-32s: %s", addr, key, value))
        end_of_read(answers)

    run(job)


def echo_block(lines: list[str]) -> None:
    """A broker's block of getBrokerConfig, with the blank line mqadmin leaves after each."""
    typer.echo("\n".join(lines) + "\n")


@command("getBrokerConfig", "mq admin broker config get", "Get broker config by cluster or special broker.")
def get_broker_config(
    broker_addr: Annotated[Optional[str], typer.Option("-b", "--brokerAddr", help="get which broker")] = None,  # noqa: UP045
    cluster: Annotated[Optional[str], typer.Option("-c", "--clusterName", help="get which cluster")] = None,  # noqa: UP045
) -> None:
    """-c: every broker of the cluster, asked at once; one that fails is a line on stderr and the others are still
    shown (mqadmin stops at it), exit 4; a set with no master shows its slaves, said on stderr (mqadmin's header
    then names master `null`, as Java prints it, and mqadmin fails on it).

    Example: mq admin getBrokerConfig -c DefaultCluster
    """
    if broker_addr is None and cluster is None:
        raise usage("give -b/--brokerAddr or -c/--clusterName")

    async def job(admin: MQAdmin) -> None:
        from mqtools.client.admin.base import NO_MASTER

        if broker_addr is not None:
            echo_block(config_lines(broker_addr, await admin.brokers.broker_config(broker_addr)))
            return
        sets = cluster_sets(await admin.cluster_info(), cluster or "")
        addrs = [addr for members in sets.values() for addr in members.values()]
        answers = dict(zip(addrs, await asyncio.gather(*(settled(admin.brokers.broker_config(a)) for a in addrs)),
                           strict=True))
        for members in sets.values():
            master = members.get(MASTER_ID, "null")
            for broker_id, addr in members.items():
                answer = answers[addr]
                if isinstance(answer, MQClientError):
                    typer.echo(f"getBrokerConfig of {addr} failed: {answer.summary()}", err=True)
                else:
                    echo_block(config_lines(addr, answer, f"Master: {addr}" if broker_id == MASTER_ID
                                            else f"My Master: {master}=====Slave: {addr}"))
        for name in masterless(sets):
            typer.echo(f"{name}: {NO_MASTER}; its slaves are shown", err=True)
        end_of_read(answers.values())

    run(job)


@command("updateBrokerConfig", "mq admin broker config set", "Update broker's config.")
def update_broker_config(
    key: Annotated[str, typer.Option("-k", "--key", help="config key")],
    value: Annotated[str, typer.Option("-v", "--value", help="config value")],
    broker_addr: Annotated[Optional[str], typer.Option("-b", "--brokerAddr", help="update which broker")] = None,  # noqa: UP045
    cluster: Annotated[Optional[str], typer.Option("-c", "--clusterName", help="update which cluster")] = None,  # noqa: UP045
    all_brokers: Annotated[Optional[str], typer.Option("-a", "--updateAllBroker", help="update all brokers include slave")] = None,  # noqa: UP045
) -> None:
    """-c: every master of the cluster (-a: and every slave), all written at once: a line per broker that applied
    it, on stderr one per broker that did not, with whether it may have (exit 3 when one did not answer, else 1);
    mqadmin stops at the first that fails. A set with no master refuses the change before anything is written
    (mqadmin skips the set without a word, and its master comes back with the old value).

    Example: mq admin updateBrokerConfig -c DefaultCluster -k brokerPermission -v 4
    """
    if broker_addr is None and cluster is None:
        raise usage("give -b/--brokerAddr or -c/--clusterName")
    values = {key.strip(): value.strip()}

    async def job(admin: MQAdmin) -> list[str]:
        if broker_addr is not None:
            await admin.brokers.update_broker_config(broker_addr.strip(), values)
            return [broker_addr.strip()]
        sets = cluster_sets(await admin.cluster_info(), cluster or "")
        missing = masterless(sets)
        if missing:
            raise NoMasterError(missing, f"broker config {key.strip()}")
        targets = [a for members in sets.values() for i, a in members.items() if i == MASTER_ID or all_brokers]
        writes = await admin.write_each(targets, lambda a: admin.brokers.update_broker_config(a, values))
        if writes.failed:
            raise writes.error(f"broker config {key.strip()}")
        return targets

    with said_per_master(lambda addr, result: f"update broker config {result}, {addr}"):
        for addr in run(job):
            typer.echo(f"update broker config success, {addr}")


@command("brokerConsumeStats", "mq admin broker consume-stats", "Fetch broker consume stats data.")
def broker_consume_stats(
    broker_addr: Annotated[str, typer.Option("-b", "--brokerAddr", help="Broker address")],
    timeout_ms: Annotated[int, typer.Option("-t", "--timeoutMillis", help="request timeout Millis")] = 50000,
    level: Annotated[int, typer.Option("-l", "--level", help="threshold of print diff")] = 0,
    order: Annotated[str, typer.Option("-o", "--order", help="order topic")] = "false",
) -> None:
    """Example: mq admin brokerConsumeStats -b 127.0.0.1:10911 -l 100"""

    async def job(admin: MQAdmin) -> None:
        stats = await admin.brokers.broker_consume_stats(broker_addr, order_only=order.strip().lower() == "true",
                                                 timeout=timeout_ms / 1000)
        for line in broker_consume_lines(stats, level):
            typer.echo(line)

    run(job, timeout=max(5.0, timeout_ms / 1000))


@command("cleanExpiredCQ", "mq admin broker clean-expired-cq", "Clean expired ConsumeQueue on broker.")
def clean_expired_cq(
    broker_addr: BrokerAddrOpt = None,
    cluster: Annotated[Optional[str], typer.Option("-c", "--cluster", help="clustername")] = None,  # noqa: UP045
) -> None:
    """Every broker of the cluster (of every cluster without -c), masters and slaves, the sets with no master too
    (as mqadmin's MQAdminImpl), all at once: `success` when every one did; else a line on stderr per broker that
    did not, with whether it may have, and exit 3 when one did not answer, else 1 (mqadmin stops at the first).

    Example: mq admin cleanExpiredCQ -c DefaultCluster
    """

    async def job(admin: MQAdmin) -> None:
        if broker_addr is not None:
            targets = [broker_addr.strip()]
        else:
            info = await admin.cluster_info()
            names = [cluster] if cluster else sorted(info.cluster_addr_table)
            targets = [a for name in names for a in every_addr(info, name)]
        writes = await admin.write_each(targets, admin.brokers.clean_expired_consume_queue)
        if writes.failed:
            raise writes.error("cleaning expired consume queues")
        typer.echo("success", nl=False)

    try:
        run(job)
    except PartialWriteError as exc:
        for addr, failure in exc.failed.items():
            typer.echo(f"cleanExpiredCQ on {addr} failed: {write_outcome(failure)}", err=True)
        raise typer.Exit(exc.exit_code) from None


@command("clusterRT", "mq admin cluster rt", "List All clusters Message Send RT.")
def cluster_rt(
    amount: Annotated[int, typer.Option("-a", "--amount", help="message amount | default 100", min=2)] = 100,
    size: Annotated[int, typer.Option("-s", "--size", help="message size | default 128 Byte", min=1)] = 128,
    cluster: Annotated[Optional[str], typer.Option("-c", "--cluster", help="cluster name | default display all cluster")] = None,  # noqa: UP045
    tlog: Annotated[str, typer.Option("-p", "--print log", help="print as tlog | default false")] = "false",
    room: Annotated[str, typer.Option("-m", "--machine room", help="machine room name | default noname")] = "noname",
    interval: Annotated[int, typer.Option("-i", "--interval", help="print interval | default 10 seconds", min=0)] = 10,
) -> None:
    """One round of sends to every broker-name topic, then another every -i seconds; Ctrl-C stops.

    Example: mq admin clusterRT -a 20 -i 5
    """
    as_tlog = tlog.strip().lower() == "true"

    async def rounds(admin: MQAdmin) -> None:
        info = await admin.cluster_info()
        clusters = [cluster] if cluster else list(info.cluster_addr_table)
        if not as_tlog:
            typer.echo(java_format(RT_HEADER, "#Cluster Name", "#Broker Name", "#RT", "#successCount", "#failCount"))
        group = str(int(time.time() * 1000))  # mqadmin names its probe producer after the start time
        while True:
            for name in clusters:
                brokers = info.cluster_addr_table.get(name)
                if brokers is None:
                    typer.echo(f"cluster [{name}] not exist", nl=False)
                    break
                for probe in await admin.messages.send_rt(sorted(brokers), amount, size, group=group):
                    rt = probe.mqadmin_rt_ms  # -a is at least 2, so never None here
                    if as_tlog:
                        stamp = datetime.now(timezone(timedelta(hours=8))).strftime("%Y-%m-%d %H:%M:%S")
                        typer.echo(f"{stamp}|{room}|{name}|{probe.broker_name}|{NA if rt is None else round(rt)}")
                    else:
                        typer.echo(java_format(RT_ROW, name, probe.broker_name, NA if rt is None else f"{rt:.2f}",
                                               probe.ok, probe.failed))
            await asyncio.sleep(interval)

    run_until_interrupted(rounds)
