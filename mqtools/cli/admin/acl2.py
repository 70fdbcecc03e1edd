"""`mq admin acl2 create|update|delete|get|list|copy|migrate`: ACL 2.0 rules (RocketMQ 5.3+).

A noun of its own beside `mq admin acl` (ACL 1.0): the two models differ in kind (accounts with
permission strings in one YAML file versus subjects with policies of resource/action/decision
entries, answered by different request codes), a cluster can run either, and one noun covering both
would need every option to say which model it means. `migrate` is the bridge: plain_acl.yml accounts
become users and rules, as Apache's AuthMigrator makes them (a dry run unless --apply).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from mqtools.cli.admin.common import BrokerOpt, DryRunOpt, usage
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.admin.user import ClusterWriteOpt, checked, show_changes, show_read, where_of

app = typer.Typer(help="ACL 2.0 rules (RocketMQ 5.3+ auth): User:NAME may Pub/Sub/... on Topic:/Group:/Cluster:.",
                  no_args_is_help=True)
SubjectArg = Annotated[str, typer.Argument(help="User:NAME (or just NAME).")]
ResourcesOpt = Annotated[str, typer.Option(
    "--resources", "-r", help="Comma-separated: Topic:NAME, Topic:PREFIX*, Topic:*, Group:..., Cluster:..., *")]
ActionsOpt = Annotated[str, typer.Option(
    "--actions", "-a", help="Comma-separated: All, Pub, Sub, Create, Update, Delete, Get, List.")]
DecisionOpt = Annotated[str, typer.Option("--decision", "-d", help="Allow or Deny.")]
SourceIpOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--source-ip", "-i", help="Comma-separated IPs or CIDRs the rule applies to (default: any).")]


def subject_of(text: str) -> str:
    return text if text.startswith("User:") else f"User:{text}"


def split(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def _rule(subject: str, resources: str, actions: str, source_ip: str | None, decision: str):  # type: ignore[no-untyped-def]
    from mqtools.client.admin.auth import rule_acl

    return rule_acl(subject_of(subject), split(resources), split(actions), split(source_ip), decision)


@admin_command(app, "list", output=True)
def list_(s: Session, subject: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--subject", "-s", help="Only subjects containing this.")] = None,
        resource: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--resource", "-r", help="Only rules whose resource contains this.")] = None,
        cluster: ClusterWriteOpt = None, broker_addr: BrokerOpt = None) -> None:
    """Every rule of every subject, one row per policy entry.

    Example: mq admin acl2 list -c DefaultCluster --subject app1
    """
    where = where_of(cluster, broker_addr)
    show_read(s, lambda admin: admin.auth.list_acls(subject, resource, **where), "AclRuleList")


@admin_command(app, "get", output=True)
def get(s: Session, subject: SubjectArg, cluster: ClusterWriteOpt = None, broker_addr: BrokerOpt = None) -> None:
    """The rules of one subject on each broker.

    Example: mq admin acl2 get User:app1 -b 127.0.0.1:10911
    """
    where = where_of(cluster, broker_addr)
    show_read(s, lambda admin: admin.auth.get_acl(subject_of(subject), **where), "AclRuleList")


@admin_command(app, "create", output=True)
def create(s: Session, subject: SubjectArg, resources: ResourcesOpt, actions: ActionsOpt, decision: DecisionOpt,
           source_ip: SourceIpOpt = None, cluster: ClusterWriteOpt = None, broker_addr: BrokerOpt = None,
           dry_run: DryRunOpt = False) -> None:
    """Add rules for a user (one per resource); a resource already ruled gets the new actions and decision.

    Example: mq admin acl2 create app1 -r Topic:orders,Group:billing -a Pub,Sub -d Allow -c DefaultCluster
    """
    where = where_of(cluster, broker_addr)
    acl = _rule(subject, resources, actions, source_ip, decision)
    show_changes(s, lambda admin: admin.auth.create_acl(acl, dry_run=dry_run, **where))


@admin_command(app, "update", output=True)
def update(s: Session, subject: SubjectArg, resources: ResourcesOpt, actions: ActionsOpt, decision: DecisionOpt,
           source_ip: SourceIpOpt = None, cluster: ClusterWriteOpt = None, broker_addr: BrokerOpt = None,
           dry_run: DryRunOpt = False) -> None:
    """Change the rules of a user's resources (as create: RocketMQ merges both the same way).

    Example: mq admin acl2 update app1 -r Topic:orders -a Pub -d Deny -c DefaultCluster
    """
    where = where_of(cluster, broker_addr)
    acl = _rule(subject, resources, actions, source_ip, decision)
    show_changes(s, lambda admin: admin.auth.update_acl(acl, dry_run=dry_run, **where))


@admin_command(app, "delete", output=True)
def delete(s: Session, subject: SubjectArg,
           resource: Annotated[Optional[str], typer.Option(  # noqa: UP045
               "--resource", "-r", help="Only this resource's rule (default: every rule of the subject).")] = None,
           policy_type: Annotated[Optional[str], typer.Option(  # noqa: UP045
               "--policy-type", help="Custom (default) or Default.")] = None,
           cluster: ClusterWriteOpt = None, broker_addr: BrokerOpt = None, dry_run: DryRunOpt = False) -> None:
    """Delete a subject's rules, or one resource's rule.

    Example: mq admin acl2 delete app1 -r Topic:orders -c DefaultCluster
    """
    from mqtools.client.admin.auth import POLICY_TYPES, check_resources

    if resource is not None:
        check_resources([resource])  # a resource the broker reads as null would delete every rule
    policy_type = checked(policy_type, POLICY_TYPES, "--policy-type")  # the broker reads a typo as Custom
    where = where_of(cluster, broker_addr)
    show_changes(s, lambda admin: admin.auth.delete_acl(subject_of(subject), resource, policy_type,
                                                          dry_run=dry_run, **where))


@admin_command(app, "copy", output=True)
def copy(s: Session,
         from_broker: Annotated[str, typer.Option("--from", help="The broker the rules are copied from.")],
         to_broker: Annotated[str, typer.Option("--to", help="The broker they are copied to.")],
         subjects: Annotated[Optional[str], typer.Option(  # noqa: UP045
             "--subjects", "-s", help="Comma-separated subjects (default: every subject).")] = None,
         dry_run: DryRunOpt = False) -> None:
    """Copy ACL rules from one broker to another.

    Example: mq admin acl2 copy --from 127.0.0.1:10911 --to 127.0.0.1:10921 -s User:app1
    """
    names = [subject_of(n) for n in split(subjects)] or None
    show_changes(s, lambda admin: admin.auth.copy_acls(from_broker, to_broker, names, dry_run=dry_run))


@admin_command(app, "migrate", output=True)
def migrate(s: Session,
            acl_file: Annotated[Path, typer.Option("--file", "-f", help="The plain_acl.yml to migrate.")],
            cluster: ClusterWriteOpt = None, broker_addr: BrokerOpt = None,
            apply: Annotated[bool, typer.Option("--apply", help="Make the changes (default: a dry run).")] = False,
            dry_run: DryRunOpt = False) -> None:
    """ACL 1.0 accounts to ACL 2.0 users and rules, as RocketMQ's AuthMigrator converts them: admin is
    Super, topicPerms/groupPerms a Custom policy, the default perms a Default policy; users that exist
    are left alone. Shows the plan unless --apply.

    Example: mq admin acl2 migrate -f conf/plain_acl.yml -c DefaultCluster --apply
    """
    from mqtools.client.admin.auth import read_plain_acl

    if apply and dry_run:
        raise usage("--apply and --dry-run contradict each other")
    where = where_of(cluster, broker_addr)
    accounts = read_plain_acl(acl_file)
    show_changes(s, lambda admin: admin.auth.migrate_plain_acl(accounts, dry_run=not apply, **where))
