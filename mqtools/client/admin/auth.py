"""ACL 2.0 administration (RocketMQ 5.3+): users and ACL rules, on one broker (-b) or a cluster (-c),
with the AUTH_* requests of Apache's RequestCode, as mqadmin's createUser ... copyAcl send them.

Writes to a cluster go to every broker of it, masters and slaves, as mqadmin's createUser does (each
broker keeps its own users and rules), all at once; the AuthChange names where a write applied and, with
their outcome (refused, no answer), the brokers where it did not: partial (exit 4) when some applied, an
error naming each broker when none did (exit 3 when none answered, else 1). Reads ask each broker set's
master, else a slave. A set no replica answered for is named in the result (`AuthRead.unreachable`)
instead of sinking it or being left out. Every write can be planned first: `dry_run=True` returns the
same AuthChange list and sends nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from mqtools.client.admin.base import AdminService
from mqtools.client.admin.models.auth import (
    AuthAcl,
    AuthChange,
    AuthPolicy,
    AuthRead,
    AuthRule,
    AuthUser,
    BrokerAcls,
    BrokerUsers,
)
from mqtools.client.errors import MQClientError, UnreachableError, settled, write_outcome
from mqtools.common.auth.model import Resource
from mqtools.common.exitcodes import EXIT_USAGE
from mqtools.common.presentation import Unreachable
from mqtools.remoting.auth_bodies import (
    AclInfo,
    PolicyEntryInfo,
    PolicyInfo,
    UserInfo,
    bodies_from_json,
    migrate_plain_access,
)
from mqtools.remoting.bodies import PlainAccessConfig
from mqtools.remoting.codes import RequestCode

ACTIONS = ("All", "Pub", "Sub", "Create", "Update", "Delete", "Get", "List")
DECISIONS = ("Allow", "Deny")
POLICY_TYPES = ("Custom", "Default")
USER_TYPES = ("Super", "Normal")
USER_STATUSES = ("enable", "disable")


def _user(info: UserInfo) -> AuthUser:
    return AuthUser(info.username or "", info.password, info.user_type, info.user_status)


def _acl(info: AclInfo) -> AuthAcl:
    return AuthAcl(info.subject or "", tuple(
        AuthPolicy(p.policy_type or "Custom", tuple(
            AuthRule(e.resource or "", tuple(e.actions or ()), tuple(e.source_ips or ()), e.decision or "")
            for e in p.entries or ())) for p in info.policies or ()))


def acl_body(acl: AuthAcl) -> AclInfo:
    return AclInfo(acl.subject, [PolicyInfo(p.policy_type, [
        PolicyEntryInfo(e.resource, list(e.actions), list(e.source_ips) or None, e.decision) for e in p.entries])
        for p in acl.policies])


class AclRuleError(MQClientError, ValueError):
    """An action or decision RocketMQ does not know, in a rule given to `rule_acl`: a usage error (exit 2),
    caught by no command (the CLI's frame prints it); a ValueError still for callers that parse values."""

    exit_code = EXIT_USAGE


def check_resources(resources: list[str]) -> None:
    """AclRuleError for a resource key RocketMQ does not know: the broker reads one as null, which for a delete
    means every rule of the subject."""
    bad = [r for r in resources if Resource.parse(r) is None]
    if bad:
        raise AclRuleError(f"unknown resource {', '.join(bad)} (Topic:NAME, Topic:PREFIX*, Topic:*, Group:..., "
                           "Cluster:..., *)")


def rule_acl(subject: str, resources: list[str], actions: list[str], source_ips: list[str],
             decision: str) -> AuthAcl:
    """The ACL mqadmin's createAcl sends: one Custom policy, an entry per resource, same actions/IPs/decision.
    AclRuleError for a resource, action or decision RocketMQ does not know (the broker would drop or refuse it)."""
    check_resources(resources)
    bad = [a for a in actions if a.lower() not in {x.lower() for x in ACTIONS}]
    if bad:
        raise AclRuleError(f"unknown action {', '.join(bad)} (one of {', '.join(ACTIONS)})")
    if decision.lower() not in {d.lower() for d in DECISIONS}:
        raise AclRuleError(f"unknown decision {decision} (Allow or Deny)")
    if not subject.startswith("User:"):
        subject = f"User:{subject}"
    entries = tuple(AuthRule(r, tuple(actions), tuple(source_ips), decision) for r in resources)
    return AuthAcl(subject, (AuthPolicy("Custom", entries),))


class AclFileError(MQClientError):
    """A plain_acl.yml that cannot be read or is not one: a usage error (exit 2)."""

    exit_code = EXIT_USAGE


def read_plain_acl(path: str | Path) -> list[PlainAccessConfig]:
    """The accounts of a plain_acl.yml (RocketMQ 4.x ACL 1.0), for migration; AclFileError when the file
    cannot be read or is not one."""
    import yaml

    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise AclFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise AclFileError(f"cannot read {path}: not valid YAML ({exc})") from None
    if not isinstance(raw, dict):
        raise AclFileError(f"cannot read {path}: not a plain_acl.yml (not a mapping)")
    out = []
    for item in raw.get("accounts") or []:
        if not isinstance(item, dict) or not item.get("accessKey"):
            continue
        out.append(PlainAccessConfig(
            str(item["accessKey"]), str(item.get("secretKey") or ""), item.get("whiteRemoteAddress"),
            str(item.get("admin", False)).lower() == "true", item.get("defaultTopicPerm"),
            item.get("defaultGroupPerm"), [str(p) for p in item.get("topicPerms") or []],
            [str(p) for p in item.get("groupPerms") or []]))
    return out


def not_applied_error(missed: dict[str, MQClientError]) -> MQClientError:
    """A change no broker applied, as one error naming each broker's outcome: UnreachableError (exit 3) when none
    answered, else a refusal (exit 1). Sent to one broker, that broker's error as it is."""
    if len(missed) == 1:
        return next(iter(missed.values()))
    message = "; ".join(f"{addr}: {write_outcome(exc)}" for addr, exc in missed.items()) + " (applied on no broker)"
    if all(isinstance(exc, UnreachableError) for exc in missed.values()):
        return UnreachableError(message)
    return MQClientError(message)


class AuthAdmin(AdminService):
    # -- where -------------------------------------------------------------------------------------

    async def _read(self, cluster: str | None, broker_addr: str | None, fn) -> AuthRead:  # type: ignore[no-untyped-def]
        found, unreachable = await self.admin.read_brokers(cluster, broker_addr, fn)
        return AuthRead(found, unreachable)

    async def _send(self, plan: AuthChange, code: int, ext: dict[str, str], body: bytes | None = None) -> AuthChange:
        """`plan` carried out: its request to each of its brokers at once (each keeps its own users and rules), and
        the change naming where it applied and, with their outcome, where not (one broker's failure never hides
        where the others applied it); not_applied_error when it applied nowhere. A dry run is the plan."""
        if plan.dry_run:
            return plan
        answers = await asyncio.gather(*(settled(self.admin.call(a, code, ext, body)) for a in plan.brokers))
        failed = {a: r for a, r in zip(plan.brokers, answers, strict=True) if isinstance(r, MQClientError)}
        if failed and len(failed) == len(plan.brokers):
            raise not_applied_error(failed)
        return dataclasses.replace(plan, brokers=[a for a in plan.brokers if a not in failed],
                                   missed=[Unreachable(None, a, write_outcome(exc)) for a, exc in failed.items()])

    # -- users -------------------------------------------------------------------------------------

    async def broker_users(self, broker_addr: str, filter_: str | None = None) -> BrokerUsers:
        resp = await self.admin.call(broker_addr, RequestCode.AUTH_LIST_USER, {"filter": filter_} if filter_ else {})
        return BrokerUsers(broker_addr, [_user(u) for u in bodies_from_json(UserInfo, resp.body)])

    async def broker_user(self, broker_addr: str, username: str) -> BrokerUsers:
        resp = await self.admin.call(broker_addr, RequestCode.AUTH_GET_USER, {"username": username})
        return BrokerUsers(broker_addr, [_user(UserInfo.from_json(resp.body))] if resp.body else [])

    async def list_users(self, filter_: str | None = None, *, cluster: str | None = None,
                         broker_addr: str | None = None) -> AuthRead:
        return await self._read(cluster, broker_addr, lambda a: self.broker_users(a, filter_))

    async def get_user(self, username: str, *, cluster: str | None = None, broker_addr: str | None = None) -> AuthRead:
        return await self._read(cluster, broker_addr, lambda a: self.broker_user(a, username))

    async def create_user(self, user: AuthUser, *, cluster: str | None = None, broker_addr: str | None = None,
                          dry_run: bool = False) -> AuthChange:
        return await self._user_write(RequestCode.AUTH_CREATE_USER, "create-user", user, cluster, broker_addr,
                                      dry_run)

    async def update_user(self, user: AuthUser, *, cluster: str | None = None, broker_addr: str | None = None,
                          dry_run: bool = False) -> AuthChange:
        return await self._user_write(RequestCode.AUTH_UPDATE_USER, "update-user", user, cluster, broker_addr,
                                      dry_run)

    async def _user_write(self, code: int, action: str, user: AuthUser, cluster: str | None,
                          broker_addr: str | None, dry_run: bool) -> AuthChange:
        addrs = await self.admin.every_broker(cluster, broker_addr)
        sets = [f"type={user.user_type}" if user.user_type else "", f"status={user.user_status}" if user.user_status
                else "", "password" if user.password else ""]
        body = UserInfo(user.username, user.password, user.user_type, user.user_status).to_json()
        return await self._send(AuthChange(action, user.username, addrs, dry_run, " ".join(s for s in sets if s)),
                                code, {"username": user.username}, body)

    async def delete_user(self, username: str, *, cluster: str | None = None, broker_addr: str | None = None,
                          dry_run: bool = False) -> AuthChange:
        addrs = await self.admin.every_broker(cluster, broker_addr)
        return await self._send(AuthChange("delete-user", username, addrs, dry_run, "the user and its ACL"),
                                RequestCode.AUTH_DELETE_USER, {"username": username})

    # -- ACLs --------------------------------------------------------------------------------------

    async def broker_acls(self, broker_addr: str, subject_filter: str | None = None,
                          resource_filter: str | None = None) -> BrokerAcls:
        ext = {k: v for k, v in (("subjectFilter", subject_filter), ("resourceFilter", resource_filter)) if v}
        resp = await self.admin.call(broker_addr, RequestCode.AUTH_LIST_ACL, ext)
        return BrokerAcls(broker_addr, [_acl(a) for a in bodies_from_json(AclInfo, resp.body)])

    async def broker_acl(self, broker_addr: str, subject: str) -> BrokerAcls:
        resp = await self.admin.call(broker_addr, RequestCode.AUTH_GET_ACL, {"subject": subject})
        return BrokerAcls(broker_addr, [_acl(AclInfo.from_json(resp.body))] if resp.body else [])

    async def list_acls(self, subject_filter: str | None = None, resource_filter: str | None = None, *,
                        cluster: str | None = None, broker_addr: str | None = None) -> AuthRead:
        return await self._read(cluster, broker_addr, lambda a: self.broker_acls(a, subject_filter, resource_filter))

    async def get_acl(self, subject: str, *, cluster: str | None = None, broker_addr: str | None = None) -> AuthRead:
        return await self._read(cluster, broker_addr, lambda a: self.broker_acl(a, subject))

    async def create_acl(self, acl: AuthAcl, *, cluster: str | None = None, broker_addr: str | None = None,
                         dry_run: bool = False) -> AuthChange:
        return await self._acl_write(RequestCode.AUTH_CREATE_ACL, "create-acl", acl, cluster, broker_addr, dry_run)

    async def update_acl(self, acl: AuthAcl, *, cluster: str | None = None, broker_addr: str | None = None,
                         dry_run: bool = False) -> AuthChange:
        return await self._acl_write(RequestCode.AUTH_UPDATE_ACL, "update-acl", acl, cluster, broker_addr, dry_run)

    async def _acl_write(self, code: int, action: str, acl: AuthAcl, cluster: str | None, broker_addr: str | None,
                         dry_run: bool) -> AuthChange:
        addrs = await self.admin.every_broker(cluster, broker_addr)
        detail = "; ".join(f"{p.policy_type} {e.resource} {','.join(e.actions)} {e.decision}"
                           + (f" from {','.join(e.source_ips)}" if e.source_ips else "")
                           for p in acl.policies for e in p.entries)
        return await self._send(AuthChange(action, acl.subject, addrs, dry_run, detail), code,
                                {"subject": acl.subject}, acl_body(acl).to_json())

    async def delete_acl(self, subject: str, resource: str | None = None, policy_type: str | None = None, *,
                         cluster: str | None = None, broker_addr: str | None = None,
                         dry_run: bool = False) -> AuthChange:
        addrs = await self.admin.every_broker(cluster, broker_addr)
        ext = {"subject": subject}
        if resource:
            ext["resource"] = resource
        if policy_type:
            ext["policyType"] = policy_type
        return await self._send(AuthChange("delete-acl", subject, addrs, dry_run, resource or "every rule"),
                                RequestCode.AUTH_DELETE_ACL, ext)

    # -- copies and migration ----------------------------------------------------------------------

    async def copy_users(self, from_broker: str, to_broker: str, usernames: list[str] | None = None, *,
                         dry_run: bool = False) -> list[AuthChange]:
        """copyUser: the named users (all when none is named) of one broker created, or updated where they
        exist, on another."""
        if usernames:
            users = [u for n in usernames for u in (await self.broker_user(from_broker, n)).users]
        else:
            users = (await self.broker_users(from_broker)).users
        changes = []
        for user in users:
            exists = bool((await self.broker_user(to_broker, user.username)).users)
            write = self.update_user if exists else self.create_user
            changes.append(await write(user, broker_addr=to_broker, dry_run=dry_run))
        return changes

    async def copy_acls(self, from_broker: str, to_broker: str, subjects: list[str] | None = None, *,
                        dry_run: bool = False) -> list[AuthChange]:
        """copyAcl: the named subjects' ACLs (all when none is named) of one broker written to another."""
        if subjects:
            acls = [a for s in subjects for a in (await self.broker_acl(from_broker, s)).acls]
        else:
            acls = (await self.broker_acls(from_broker)).acls
        changes = []
        for acl in acls:
            exists = bool((await self.broker_acl(to_broker, acl.subject)).acls)
            write = self.update_acl if exists else self.create_acl
            changes.append(await write(acl, broker_addr=to_broker, dry_run=dry_run))
        return changes

    async def migrate_plain_acl(self, accounts: list[PlainAccessConfig], *, cluster: str | None = None,
                                broker_addr: str | None = None, dry_run: bool = True) -> list[AuthChange]:
        """ACL 1.0 accounts to 2.0 users and rules, as Apache's AuthMigrator converts them (a dry run unless
        dry_run=False). A user that already exists on a target broker is skipped there, as AuthMigrator
        skips it; the rest are created with their rules."""
        addrs = await self.admin.every_broker(cluster, broker_addr)
        changes: list[AuthChange] = []
        for account in accounts:
            info, acl_info = migrate_plain_access(account)
            user = _user(info)
            fresh = [a for a in addrs if not (await self.broker_user(a, user.username)).users]
            skipped = [a for a in addrs if a not in fresh]
            if skipped:
                changes.append(AuthChange("skip-user", user.username, skipped, dry_run, "already exists"))
            if not fresh:
                continue
            body = UserInfo(user.username, user.password, user.user_type, user.user_status).to_json()
            created = await self._send(AuthChange("create-user", user.username, fresh, dry_run,
                                                  f"type={user.user_type}"),
                                       RequestCode.AUTH_CREATE_USER, {"username": user.username}, body)
            changes.append(created)
            if acl_info is not None:  # where the user was made: elsewhere its rules have no subject
                changes.append(await self._acl_write_to(created.brokers, _acl(acl_info), dry_run))
        return changes

    async def _acl_write_to(self, addrs: list[str], acl: AuthAcl, dry_run: bool) -> AuthChange:
        detail = "; ".join(f"{p.policy_type} {e.resource} {','.join(e.actions)} {e.decision}"
                           for p in acl.policies for e in p.entries)
        return await self._send(AuthChange("create-acl", acl.subject, addrs, dry_run, detail),
                                RequestCode.AUTH_CREATE_ACL, {"subject": acl.subject}, acl_body(acl).to_json())
