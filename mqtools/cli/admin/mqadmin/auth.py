"""mqadmin 5.5.0's ACL 2.0 commands: createUser, updateUser, deleteUser, getUser, listUser, createAcl,
updateAcl, deleteAcl, getAcl, listAcl, copyUser, copyAcl, with mqadmin's options and output lines.

`-p PASSWORD` is accepted because runbooks use it, but a password on the command line is visible to
every local user (ps, /proc) and stays in shell history: leave -p out and it is read from stdin (or a
hidden prompt). getUser and listUser print `****` in mqadmin's #Password column: mqadmin prints the
password the broker sends, mq never prints one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import usage
from mqtools.cli.admin.mqadmin import command, run
from mqtools.cli.admin.user import checked, read_password
from mqtools.client.admin.models.mqadmin_acl_text import USER_LIST_ROW, USER_ROW, acl_lines, user_lines
from mqtools.common.exitcodes import EXIT_PARTIAL

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.auth import AuthChange

BrokerAddrOpt = Annotated[Optional[str], typer.Option("-b", "--brokerAddr", help="which broker")]  # noqa: UP045
ClusterOpt = Annotated[Optional[str], typer.Option("-c", "--clusterName", help="which cluster")]  # noqa: UP045
UserOpt = Annotated[str, typer.Option("-u", "--username", help="the username of user")]
PasswordOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "-p", "--password", help="the password of user (visible in ps and shell history: prefer stdin)")]
SubjectOpt = Annotated[str, typer.Option("-s", "--subject", help="the subject of acl")]
ResourcesOpt = Annotated[str, typer.Option("-r", "--resources")]
ActionsOpt = Annotated[str, typer.Option("-a", "--actions")]
DecisionOpt = Annotated[str, typer.Option("-d", "--decision")]
SourceIpOpt = Annotated[Optional[str], typer.Option("-i", "--sourceIp")]  # noqa: UP045


def _one(cluster: str | None, broker_addr: str | None) -> dict[str, str | None]:
    if (cluster is None) == (broker_addr is None):
        raise usage("give one of -c clusterName and -b brokerAddr")
    return {"cluster": cluster, "broker_addr": broker_addr}


def _write(where: dict[str, str | None], job, verb: str) -> None:  # type: ignore[no-untyped-def]
    """mqadmin's line per broker that applied the change; a line (stderr) per broker that did not, and exit 4."""
    async def go(admin: MQAdmin) -> AuthChange:
        return await job(admin, where)

    change = run(go)
    for addr in change.brokers:
        typer.echo(f"{verb} to {addr} success.")
    for missed in change.missed:
        typer.echo(f"{verb} to {missed.addr} failed: {missed.reason}", err=True)
    if change.missed:
        raise typer.Exit(EXIT_PARTIAL)


@command("createUser", "mq admin user create", "Create user to cluster.")
def create_user(username: UserOpt, password: PasswordOpt = None,
                user_type: Annotated[Optional[str], typer.Option("-t", "--userType")] = None,  # noqa: UP045
                cluster: ClusterOpt = None, broker_addr: BrokerAddrOpt = None) -> None:
    """Example: printf '%s' "$PASSWORD" | mq admin createUser -c DefaultCluster -u app1"""
    from mqtools.client.admin.models.auth import AuthUser

    where = _one(cluster, broker_addr)
    user = AuthUser(username, password or read_password(None), checked(user_type, ("Super", "Normal"), "-t"))
    _write(where, lambda admin, w: admin.auth.create_user(user, **w), "create user")


@command("updateUser", "mq admin user update", "Update user to cluster.")
def update_user(username: UserOpt, password: PasswordOpt = None,
                user_type: Annotated[Optional[str], typer.Option("-t", "--userType")] = None,  # noqa: UP045
                status: Annotated[Optional[str], typer.Option("-s", "--userStatus")] = None,  # noqa: UP045
                cluster: ClusterOpt = None, broker_addr: BrokerAddrOpt = None) -> None:
    """Example: mq admin updateUser -c DefaultCluster -u app1 -s disable"""
    from mqtools.client.admin.models.auth import AuthUser

    where = _one(cluster, broker_addr)
    if not (password or user_type or status):
        password = read_password(None)
    user = AuthUser(username, password, checked(user_type, ("Super", "Normal"), "-t"),
                    checked(status, ("enable", "disable"), "-s"))
    _write(where, lambda admin, w: admin.auth.update_user(user, **w), "update user")


@command("deleteUser", "mq admin user delete", "Delete user from cluster.")
def delete_user(username: UserOpt, cluster: ClusterOpt = None, broker_addr: BrokerAddrOpt = None) -> None:
    """Example: mq admin deleteUser -c DefaultCluster -u app1"""
    where = _one(cluster, broker_addr)
    _write(where, lambda admin, w: admin.auth.delete_user(username, **w), "delete user")


@command("getUser", "mq admin user get", "Get user from cluster.")
def get_user(username: UserOpt, cluster: ClusterOpt = None, broker_addr: BrokerAddrOpt = None) -> None:
    """Example: mq admin getUser -b 127.0.0.1:10911 -u app1"""
    where = _one(cluster, broker_addr)

    async def job(admin: MQAdmin) -> list[str]:
        read = await admin.auth.get_user(username, **where)
        for broker in read.found:  # -c: the first master that has the user, as mqadmin
            if broker.users:
                return user_lines(broker.users, USER_ROW)
        return []

    for line in run(job):
        typer.echo(line)


@command("listUser", "mq admin user list", "List user from cluster.")
def list_user(filter_: Annotated[Optional[str], typer.Option("-f", "--filter")] = None,  # noqa: UP045
              cluster: ClusterOpt = None, broker_addr: BrokerAddrOpt = None) -> None:
    """Example: mq admin listUser -c DefaultCluster"""
    where = _one(cluster, broker_addr)

    async def job(admin: MQAdmin) -> list[str]:
        read = await admin.auth.list_users(filter_, **where)
        for broker in read.found:
            if broker.users:
                tail = [f"get user from {broker.broker_addr} success."] if cluster is not None else []
                return user_lines(broker.users, USER_LIST_ROW) + tail
        return []

    for line in run(job):
        typer.echo(line)


def _put_acl(cluster: str | None, broker_addr: str | None, verb: str,
             put: Callable[[MQAdmin], Callable[..., Awaitable[AuthChange]]], subject: str,
             resources: str, actions: str, source_ip: str | None, decision: str) -> None:
    """createAcl and updateAcl: the same rule from the same options, created or updated."""
    from mqtools.client.admin.auth import rule_acl
    from mqtools.client.admin.models.configs import comma_list

    where = _one(cluster, broker_addr)
    acl = rule_acl(subject, comma_list(resources), comma_list(actions), comma_list(source_ip), decision)
    _write(where, lambda admin, w: put(admin)(acl, **w), verb)


@command("createAcl", "mq admin acl2 create", "Create acl to cluster.")
def create_acl(subject: SubjectOpt, resources: ResourcesOpt, actions: ActionsOpt, decision: DecisionOpt,
               source_ip: SourceIpOpt = None, cluster: ClusterOpt = None, broker_addr: BrokerAddrOpt = None) -> None:
    """Example: mq admin createAcl -c DefaultCluster -s User:app1 -r Topic:orders -a Pub -d Allow"""
    _put_acl(cluster, broker_addr, "create acl", lambda admin: admin.auth.create_acl,
             subject, resources, actions, source_ip, decision)


@command("updateAcl", "mq admin acl2 update", "Update acl to cluster.")
def update_acl(subject: SubjectOpt, resources: ResourcesOpt, actions: ActionsOpt, decision: DecisionOpt,
               source_ip: SourceIpOpt = None, cluster: ClusterOpt = None, broker_addr: BrokerAddrOpt = None) -> None:
    """Example: mq admin updateAcl -c DefaultCluster -s User:app1 -r Topic:orders -a Pub -d Deny"""
    _put_acl(cluster, broker_addr, "update acl", lambda admin: admin.auth.update_acl,
             subject, resources, actions, source_ip, decision)


@command("deleteAcl", "mq admin acl2 delete", "Delete acl from cluster.")
def delete_acl(subject: SubjectOpt,
               resource: Annotated[Optional[str], typer.Option("-r", "--resources")] = None,  # noqa: UP045
               cluster: ClusterOpt = None, broker_addr: BrokerAddrOpt = None) -> None:
    """Example: mq admin deleteAcl -c DefaultCluster -s User:app1 -r Topic:orders"""
    from mqtools.client.admin.auth import check_resources

    if resource is not None:
        check_resources([resource])  # a resource the broker reads as null would delete every rule
    where = _one(cluster, broker_addr)
    _write(where, lambda admin, w: admin.auth.delete_acl(subject, resource, **w), "delete acl")


@command("getAcl", "mq admin acl2 get", "Get acl from cluster.")
def get_acl(subject: SubjectOpt, cluster: ClusterOpt = None, broker_addr: BrokerAddrOpt = None) -> None:
    """Example: mq admin getAcl -b 127.0.0.1:10911 -s User:app1"""
    where = _one(cluster, broker_addr)

    async def job(admin: MQAdmin) -> list[str]:
        read = await admin.auth.get_acl(subject, **where)
        return [line for broker in read.found if broker.acls for line in acl_lines(broker.acls)]

    for line in run(job):
        typer.echo(line)


@command("listAcl", "mq admin acl2 list", "List acl from cluster.")
def list_acl(subject: Annotated[Optional[str], typer.Option("-s", "--subject")] = None,  # noqa: UP045
             resource: Annotated[Optional[str], typer.Option("-r", "--resource")] = None,  # noqa: UP045
             cluster: ClusterOpt = None, broker_addr: BrokerAddrOpt = None) -> None:
    """Example: mq admin listAcl -c DefaultCluster -s User:app1"""
    where = _one(cluster, broker_addr)

    async def job(admin: MQAdmin) -> list[str]:
        read = await admin.auth.list_acls(subject, resource, **where)
        return [line for broker in read.found if broker.acls for line in acl_lines(broker.acls)]

    for line in run(job):
        typer.echo(line)


@command("copyUser", "mq admin user copy", "Copy user to cluster.")
def copy_user(from_broker: Annotated[str, typer.Option("-f", "--fromBroker")],
              to_broker: Annotated[str, typer.Option("-t", "--toBroker")],
              usernames: Annotated[Optional[str], typer.Option("-u", "--usernames")] = None) -> None:  # noqa: UP045
    """Example: mq admin copyUser -f 127.0.0.1:10911 -t 127.0.0.1:10921"""
    from mqtools.client.admin.models.configs import comma_list

    async def job(admin: MQAdmin) -> list[str]:
        return [c.target for c in await admin.auth.copy_users(from_broker, to_broker, comma_list(usernames) or None)]

    for name in run(job):
        typer.echo(f"copy user of {name} from {from_broker} to {to_broker} success.")


@command("copyAcl", "mq admin acl2 copy", "Copy acl to cluster.")
def copy_acl(from_broker: Annotated[str, typer.Option("-f", "--fromBroker")],
             to_broker: Annotated[str, typer.Option("-t", "--toBroker")],
             subjects: Annotated[Optional[str], typer.Option("-s", "--subjects")] = None) -> None:  # noqa: UP045
    """Example: mq admin copyAcl -f 127.0.0.1:10911 -t 127.0.0.1:10921 -s User:app1"""
    from mqtools.client.admin.models.configs import comma_list

    async def job(admin: MQAdmin) -> list[str]:
        return [c.target for c in await admin.auth.copy_acls(from_broker, to_broker, comma_list(subjects) or None)]

    for name in run(job):
        typer.echo(f"copy acl of {name} from {from_broker} to {to_broker} success.")
