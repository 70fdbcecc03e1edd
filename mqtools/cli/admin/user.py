"""`mq admin user create|update|delete|get|list|copy`: ACL 2.0 users (RocketMQ 5.3+) on one broker (-b)
or a cluster (-c: writes go to every broker of it, masters and slaves, reads to every master).

Passwords never come from argv: `create` and `update --password` read it from `--password-file FILE`
or stdin (a hidden prompt on a terminal); nothing here prints one (documents show `****`).
Every write takes `--dry-run`: the AuthChange document of what would be sent, and nothing is sent.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import BrokerOpt, DryRunOpt, usage
from mqtools.cli.admin.session import Session, admin_command

if TYPE_CHECKING:
    from mqtools.cli.output import View
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.auth import AuthRead

app = typer.Typer(help="ACL 2.0 users (RocketMQ 5.3+ auth): Super or Normal, enabled or disabled.",
                  no_args_is_help=True)
UsernameArg = Annotated[str, typer.Argument(help="The user name (the AccessKey clients sign with).")]
ClusterWriteOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "-c", "--cluster", help="Every broker of this cluster (reads: every master).")]
PasswordFileOpt = Annotated[Optional[Path], typer.Option(  # noqa: UP045
    "--password-file", help="Read the password from this file (first line); else stdin.")]
TypeOpt = Annotated[Optional[str], typer.Option("--type", "-t", help="Super or Normal.")]  # noqa: UP045
StatusOpt = Annotated[Optional[str], typer.Option("--status", "-s", help="enable or disable.")]  # noqa: UP045


def where_of(cluster: str | None, broker_addr: str | None) -> dict[str, str | None]:
    if (cluster is None) == (broker_addr is None):
        raise usage("give one of -c CLUSTER and -b BROKER_ADDR")
    return {"cluster": cluster, "broker_addr": broker_addr}


def read_password(path: Path | None, what: str = "password") -> str:
    """The secret from a file (first line), else a hidden prompt on a terminal, else the first line of stdin."""
    if path is not None:
        from mqtools.client.credentials import read_secret

        secret = read_secret(path)
    else:
        secret = (typer.prompt(what, hide_input=True) if sys.stdin.isatty() else sys.stdin.readline()).strip()
    if not secret:
        raise usage(f"no {what} (pipe it in, or give --password-file FILE)")
    return secret


def checked(value: str | None, allowed: tuple[str, ...], what: str) -> str | None:
    """The value in RocketMQ's spelling, or a usage error naming the choices."""
    if value is None:
        return None
    for choice in allowed:
        if choice.lower() == value.strip().lower():
            return choice
    raise usage(f"{what} must be one of {', '.join(allowed)}")


def show_read(s: Session, job_read, kind: str) -> None:  # type: ignore[no-untyped-def]
    """Render an AuthRead with the renderer of `kind`."""
    from mqtools.client.admin.models.auth import acl_rule_list_view, user_list_view

    view_of = user_list_view if kind == "UserList" else acl_rule_list_view

    async def job(admin: MQAdmin) -> View:
        read: AuthRead = await job_read(admin)
        return view_of(read.found, read.unreachable)

    s.render(s.run(job))


def show_changes(s: Session, job_changes) -> None:  # type: ignore[no-untyped-def]
    from mqtools.client.admin.models.auth import auth_change_view

    async def job(admin: MQAdmin) -> View:
        changes = await job_changes(admin)
        return auth_change_view(changes if isinstance(changes, list) else [changes])

    s.render(s.run(job))


@admin_command(app, "list", output=True)
def list_(s: Session, filter_: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--filter", "-f", help="Only user names containing this.")] = None,
        cluster: ClusterWriteOpt = None, broker_addr: BrokerOpt = None) -> None:
    """Every user of each broker (passwords are never shown).

    Example: mq admin user list -c DefaultCluster -o json
    """
    where = where_of(cluster, broker_addr)
    show_read(s, lambda admin: admin.auth.list_users(filter_, **where), "UserList")


@admin_command(app, "get", output=True)
def get(s: Session, username: UsernameArg, cluster: ClusterWriteOpt = None, broker_addr: BrokerOpt = None) -> None:
    """One user on each broker (none listed where a broker does not have it).

    Example: mq admin user get app1 -b 127.0.0.1:10911
    """
    where = where_of(cluster, broker_addr)
    show_read(s, lambda admin: admin.auth.get_user(username, **where), "UserList")


@admin_command(app, "create", output=True)
def create(s: Session, username: UsernameArg, cluster: ClusterWriteOpt = None, broker_addr: BrokerOpt = None,
           user_type: TypeOpt = None, password_file: PasswordFileOpt = None, dry_run: DryRunOpt = False) -> None:
    """Create a user (Normal unless --type Super); the password from --password-file or stdin.

    Example: printf '%s' "$PASSWORD" | mq admin user create app1 -c DefaultCluster
    """
    from mqtools.client.admin.models.auth import AuthUser

    where = where_of(cluster, broker_addr)
    user = AuthUser(username, read_password(password_file), checked(user_type, ("Super", "Normal"), "--type"))
    show_changes(s, lambda admin: admin.auth.create_user(user, dry_run=dry_run, **where))


@admin_command(app, "update", output=True)
def update(s: Session, username: UsernameArg, cluster: ClusterWriteOpt = None, broker_addr: BrokerOpt = None,
           user_type: TypeOpt = None, status: StatusOpt = None,
           password: Annotated[bool, typer.Option("--password", help="Set a new password (from stdin or "
                                                  "--password-file).")] = False,
           password_file: PasswordFileOpt = None, dry_run: DryRunOpt = False) -> None:
    """Change a user's type, status (enable/disable) or password; what is not given stays.

    Example: mq admin user update app1 -c DefaultCluster --status disable
    """
    from mqtools.client.admin.models.auth import AuthUser

    if not (password or password_file or user_type or status):
        raise usage("give at least one of --type, --status, --password")
    where = where_of(cluster, broker_addr)
    secret = read_password(password_file) if (password or password_file) else None
    user = AuthUser(username, secret, checked(user_type, ("Super", "Normal"), "--type"),
                    checked(status, ("enable", "disable"), "--status"))
    show_changes(s, lambda admin: admin.auth.update_user(user, dry_run=dry_run, **where))


@admin_command(app, "delete", output=True)
def delete(s: Session, username: UsernameArg, cluster: ClusterWriteOpt = None, broker_addr: BrokerOpt = None,
           dry_run: DryRunOpt = False) -> None:
    """Delete a user and its ACL rules.

    Example: mq admin user delete app1 -c DefaultCluster
    """
    where = where_of(cluster, broker_addr)
    show_changes(s, lambda admin: admin.auth.delete_user(username, dry_run=dry_run, **where))


@admin_command(app, "copy", output=True)
def copy(s: Session,
         from_broker: Annotated[str, typer.Option("--from", help="The broker the users are copied from.")],
         to_broker: Annotated[str, typer.Option("--to", help="The broker they are copied to.")],
         usernames: Annotated[Optional[str], typer.Option(  # noqa: UP045
             "--users", "-u", help="Comma-separated user names (default: every user).")] = None,
         dry_run: DryRunOpt = False) -> None:
    """Copy users (with their passwords, never printed) from one broker to another.

    Example: mq admin user copy --from 127.0.0.1:10911 --to 127.0.0.1:10921
    """
    names = [n.strip() for n in (usernames or "").split(",") if n.strip()] or None
    show_changes(s, lambda admin: admin.auth.copy_users(from_broker, to_broker, names, dry_run=dry_run))
