"""mqadmin's ACL 1.0 commands: updateAclConfig, deleteAclConfig, updateGlobalWhiteAddr, getAclConfig,
clusterAclConfigVersion, with mqadmin's options and output lines.

`updateAclConfig -s SECRET` is accepted because runbooks use it, but a secret on the command line is
visible to every local user (ps, /proc) and stays in shell history: leave -s out and the secret is
read from stdin (or a hidden prompt), as `mq admin acl update` always does. Secret keys are never
printed (getAclConfig shows `****`: the broker does not send them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.acl import apply_update, given_perms, read_secret, where_of
from mqtools.cli.admin.mqadmin import cluster_options, command, run
from mqtools.client.admin.models.mqadmin_acl_text import acl_config_lines, acl_version_lines

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin

BrokerAddrOpt = Annotated[Optional[str], typer.Option("-b", "--brokerAddr", help="Which broker")]  # noqa: UP045
ClusterOpt = Annotated[Optional[str], typer.Option("-c", "--clusterName", help="Which cluster")]  # noqa: UP045


@command("updateAclConfig", "mq admin acl update", "Update acl config yaml file in broker.")
def update_acl_config(
    access_key: Annotated[str, typer.Option("-a", "--accessKey", help="set accessKey in acl config file")],
    secret_key: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-s", "--secretKey", help="set secretKey (visible in ps and shell history: prefer stdin)")] = None,
    white: Annotated[Optional[str], typer.Option("-w", "--whiteRemoteAddress")] = None,  # noqa: UP045
    topic_perm: Annotated[Optional[str], typer.Option("-i", "--defaultTopicPerm")] = None,  # noqa: UP045
    group_perm: Annotated[Optional[str], typer.Option("-u", "--defaultGroupPerm")] = None,  # noqa: UP045
    topic_perms: Annotated[Optional[str], typer.Option("-t", "--topicPerms", help="topicA=DENY,topicD=SUB")] = None,  # noqa: UP045
    group_perms: Annotated[Optional[str], typer.Option("-g", "--groupPerms", help="groupD=DENY,groupD=SUB")] = None,  # noqa: UP045
    admin_flag: Annotated[Optional[str], typer.Option("-m", "--admin", help="true or false")] = None,  # noqa: UP045
    broker_addr: BrokerAddrOpt = None, cluster: ClusterOpt = None,
) -> None:
    """Example: printf '%s' "$SECRET" | mq admin updateAclConfig -a app1key -c DefaultCluster -t Orders=PUB"""
    from mqtools.client.admin.models.configs import PlainAccessConfig

    where = where_of(cluster, broker_addr)
    account = PlainAccessConfig(access_key, secret_key or read_secret(), white, (admin_flag or "").lower() == "true",
                               topic_perm, group_perm, given_perms(topic_perms), given_perms(group_perms))
    for addr in apply_update(cluster_options(), None, account, where):
        typer.echo(f"create or update plain access config to {addr} success.")
    typer.echo(repr(account))


@command("deleteAclConfig", "mq admin acl delete", "Delete Acl Config Account in broker.")
def delete_acl_config(
    access_key: Annotated[str, typer.Option("-a", "--accessKey", help="which account to delete")],
    broker_addr: BrokerAddrOpt = None, cluster: ClusterOpt = None,
) -> None:
    """Example: mq admin deleteAclConfig -a app1key -c DefaultCluster"""
    where = where_of(cluster, broker_addr)

    async def job(admin: MQAdmin) -> list[str]:
        return await admin.acl.delete_acl_account(access_key, cluster=where["cluster"], broker_addr=where["broker_addr"])

    for addr in run(job):
        typer.echo(f"delete plain access config account from {addr} success.")
    typer.echo(f"account's accesskey is:{access_key}")


@command("updateGlobalWhiteAddr", "mq admin acl white-addrs", "Update global white address for acl Config File in broker.")
def update_global_white_addr(
    addrs: Annotated[str, typer.Option("-g", "--globalWhiteRemoteAddresses", help="eg: 10.10.103.*,192.168.0.*")],
    broker_addr: BrokerAddrOpt = None, cluster: ClusterOpt = None,
) -> None:
    """Example: mq admin updateGlobalWhiteAddr -g '10.10.103.*' -c DefaultCluster"""
    from mqtools.client.admin.models.configs import comma_list

    where = where_of(cluster, broker_addr)

    async def job(admin: MQAdmin) -> list[str]:
        return await admin.acl.update_global_white_addrs(comma_list(addrs), cluster=where["cluster"],
                                                     broker_addr=where["broker_addr"])

    for addr in run(job):
        typer.echo(f"update global white remote addresses to {addr} success.")


@command("getAclConfig", "mq admin acl list", "List all of acl config information in cluster.")
def get_acl_config(broker_addr: BrokerAddrOpt = None, cluster: ClusterOpt = None) -> None:
    """Example: mq admin getAclConfig -c DefaultCluster"""
    where = where_of(cluster, broker_addr)

    async def job(admin: MQAdmin) -> None:
        for config in (await admin.acl.acl_configs(where["cluster"], where["broker_addr"])).found:
            for line in acl_config_lines(config):
                typer.echo(line)

    run(job)


@command("clusterAclConfigVersion", "mq admin acl version", "List all of acl config version information in cluster.")
def cluster_acl_config_version(
    broker_addr: BrokerAddrOpt = None, cluster: ClusterOpt = None,
) -> None:
    """Example: mq admin clusterAclConfigVersion -c DefaultCluster"""
    where = where_of(cluster, broker_addr)

    async def job(admin: MQAdmin) -> None:
        versions = (await admin.acl.acl_versions(where["cluster"], where["broker_addr"])).found
        for line in acl_version_lines(versions, of_cluster=bool(where["cluster"])):
            typer.echo(line)

    run(job)
