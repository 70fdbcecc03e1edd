"""`mq admin acl list|get|update|delete|white-addrs|version`: RocketMQ 4.x plain ACL accounts on
one broker (-b) or every master of a cluster (-c).

`update` merges into an existing account as RocketMQ does: an option not given keeps its value; `--topic-perm ''`
(or `--group-perm ''`, `--white-addr ''`) clears it.

Secrets never come from argv: `update` reads the new account's secret key from stdin (or a hidden
prompt on a terminal), and nothing here ever prints one (the broker does not send them back).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import (
    BrokerOpt,
    ClusterOpt,
    ClusterOptions,
    fail,
    run,
    usage,
)
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import View
from mqtools.common.exitcodes import EXIT_REFUSED

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.configs import PlainAccessConfig

app = typer.Typer(help="ACL 1.0 accounts and global white addresses (plain_acl.yml) of the brokers.",
                  no_args_is_help=True)
AccessKeyArg = Annotated[str, typer.Argument(help="The account's access key.")]
PERM_HELP = "PUB, SUB, PUB|SUB or DENY"


def where_of(cluster: str | None, broker_addr: str | None) -> dict[str, str | None]:
    if (cluster is None) == (broker_addr is None):
        raise usage("give one of -c CLUSTER and -b BROKER_ADDR")
    return {"cluster": cluster, "broker_addr": broker_addr}


@admin_command(app, "list", output=True)
def list_(
    s: Session,
    cluster: ClusterOpt = None, broker_addr: BrokerOpt = None,
) -> None:
    """Every account (secrets are never shown) and the global white addresses.

    Example: mq admin acl list -c DefaultCluster -o json
    """
    from mqtools.client.admin.models.acl import acl_config_view

    where = where_of(cluster, broker_addr)

    async def job(admin: MQAdmin) -> View:
        read = await admin.acl.acl_configs(where["cluster"], where["broker_addr"])
        return acl_config_view(read.found, read.unreachable)

    s.render(s.run(job))


@admin_command(app, "get", output=True)
def get(
    s: Session,
    access_key: AccessKeyArg, cluster: ClusterOpt = None, broker_addr: BrokerOpt = None,
) -> None:
    """One account on each broker; exit 1 when no broker has it (4, partial, when a broker set could not be read).

    Example: mq admin acl get RocketMQ -b 127.0.0.1:10911
    """
    from mqtools.client.admin.models.acl import acl_config_view

    where = where_of(cluster, broker_addr)

    async def job(admin: MQAdmin) -> View:
        read = await admin.acl.acl_configs(where["cluster"], where["broker_addr"])
        kept = [type(c)(c.broker_addr, c.global_white_addrs, [a for a in c.accounts if a.access_key == access_key])
                for c in read.found]
        if not any(c.accounts for c in kept) and not read.unreachable:
            raise fail(f"no ACL account {access_key} on {', '.join(c.broker_addr for c in read.found)}", EXIT_REFUSED)
        return acl_config_view(kept, read.unreachable)

    s.render(s.run(job))


def read_secret(prompt: str = "secret key") -> str:
    """The secret from a hidden prompt on a terminal, else the first line of stdin."""
    secret = (typer.prompt(prompt, hide_input=True) if sys.stdin.isatty() else sys.stdin.readline()).strip()
    if not secret:
        raise usage("no secret key on stdin (pipe it in: printf '%s' \"$SECRET\" | mq admin acl update ...)")
    return secret


def given_perms(text: str | None) -> list[str]:
    """mqadmin's comma-separated -t/-g: not given, [] (the broker keeps the account's list); given empty, one blank
    item, which the request sends empty (the broker clears the list), as Java's mqadmin sends `-t ""`."""
    from mqtools.client.admin.models.configs import comma_list

    if text is None:
        return []
    return comma_list(text) or [""]


def apply_update(at: ClusterOptions, timeout: float | None, account: PlainAccessConfig,
                 where: dict[str, str | None]) -> list[str]:
    async def job(admin: MQAdmin) -> list[str]:
        return await admin.acl.update_acl_account(account, cluster=where["cluster"], broker_addr=where["broker_addr"])

    return run(at, job, timeout=timeout)


@admin_command(app, "update")
def update(
    s: Session,
    access_key: AccessKeyArg, cluster: ClusterOpt = None, broker_addr: BrokerOpt = None,
    admin_: Annotated[bool, typer.Option("--admin", help="May make admin requests.")] = False,
    white_addr: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--white-addr", help="Addresses that skip the signature check (e.g. 192.168.1.*).")] = None,
    default_topic_perm: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--default-topic-perm", help=PERM_HELP)] = None,
    default_group_perm: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--default-group-perm", help=PERM_HELP)] = None,
    topic_perm: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--topic-perm", help="TOPIC=PERM, repeatable.")] = None,
    group_perm: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--group-perm", help="GROUP=PERM, repeatable.")] = None,
) -> None:
    """Create an account, or change one: the options given change, the rest are kept (as Apache's broker merges;
    `--topic-perm ''` clears a list); its secret key is read from stdin (a hidden prompt on a terminal).

    Example: printf '%s' "$SECRET" | mq admin acl update app1key -c DefaultCluster --topic-perm Orders=PUB
    """
    from mqtools.client.admin.models.configs import PlainAccessConfig

    where = where_of(cluster, broker_addr)
    account = PlainAccessConfig(access_key, read_secret(), white_addr, admin_, default_topic_perm,
                               default_group_perm, list(topic_perm or []), list(group_perm or []))
    addrs = apply_update(s.where, s.timeout, account, where)
    typer.echo(f"account {access_key} updated on {', '.join(addrs)}")


@admin_command(app, "delete")
def delete(
    s: Session,
    access_key: AccessKeyArg, cluster: ClusterOpt = None, broker_addr: BrokerOpt = None,
) -> None:
    """Delete an account (exit 1 when a broker does not have it).

    Example: mq admin acl delete app1key -c DefaultCluster
    """
    where = where_of(cluster, broker_addr)

    async def job(admin: MQAdmin) -> list[str]:
        return await admin.acl.delete_acl_account(access_key, cluster=where["cluster"], broker_addr=where["broker_addr"])

    addrs = s.run(job)
    typer.echo(f"account {access_key} deleted on {', '.join(addrs)}")


@admin_command(app, "white-addrs")
def white_addrs(
    s: Session,
    patterns: Annotated[list[str], typer.Argument(help="Address patterns (192.168.1.*, 10.0.0.{1,2}, ...).")],
    cluster: ClusterOpt = None, broker_addr: BrokerOpt = None,
) -> None:
    """Replace the global white addresses: requests from them skip every ACL check.

    Example: mq admin acl white-addrs '10.0.0.*' -c DefaultCluster
    """
    where = where_of(cluster, broker_addr)

    async def job(admin: MQAdmin) -> list[str]:
        return await admin.acl.update_global_white_addrs(patterns, cluster=where["cluster"],
                                                     broker_addr=where["broker_addr"])

    addrs = s.run(job)
    typer.echo(f"global white addresses {','.join(patterns)} set on {', '.join(addrs)}")


@admin_command(app, "version", output=True)
def version(
    s: Session,
    cluster: ClusterOpt = None, broker_addr: BrokerOpt = None,
) -> None:
    """The ACL file's data version on each broker (it changes with every update).

    Example: mq admin acl version -c DefaultCluster
    """
    from mqtools.client.admin.models.acl import acl_version_view

    where = where_of(cluster, broker_addr)

    async def job(admin: MQAdmin) -> View:
        read = await admin.acl.acl_versions(where["cluster"], where["broker_addr"])
        return acl_version_view(read.found, read.unreachable)

    s.render(s.run(job))
