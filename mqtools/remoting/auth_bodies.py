"""ACL 2.0 bodies (RocketMQ 5.3+ auth module): users and ACL rules as the AUTH_* requests carry them, their
conversion to the model (mqtools.common.auth) the broker and the gRPC proxy decide with, and the migration of
an ACL 1.0 account (plain_acl.yml) to a 2.0 user and rule, which the broker and the toolkit both need (neither
may import the other)."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any

from mqtools.common.auth.model import (
    Acl,
    Action,
    Decision,
    Policy,
    PolicyEntry,
    PolicyType,
    Resource,
    User,
    UserStatus,
    UserType,
)
from mqtools.common.auth.policy import AuthError
from mqtools.remoting import fastjson
from mqtools.remoting.bodies import REQUEST_LENIENT_MAX, Body, PlainAccessConfig
from mqtools.remoting.body_codec import from_obj, to_obj
from mqtools.remoting.errors import BodyError

T = typing.TypeVar("T")


@dataclass(slots=True)
class UserInfo(Body):
    """An ACL 2.0 user as the AUTH_*_USER requests carry it (RocketMQ's UserInfo): userType is
    "Super" or "Normal", userStatus "enable" or "disable"; None where a request leaves it unchanged."""

    username: str | None = None
    password: str | None = None
    user_type: str | None = None
    user_status: str | None = None

    def __repr__(self) -> str:
        return f"UserInfo(username={self.username!r}, password='***', userType={self.user_type!r})"


@dataclass(slots=True)
class PolicyEntryInfo(Body):
    """One rule of an ACL 2.0 policy (AclInfo.PolicyEntryInfo): a resource key such as `Topic:orders`,
    `Group:g*` or `*`, action names (Pub, Sub, ...), source IPs or CIDRs, and Allow or Deny."""

    resource: str | None = None
    actions: list[str] | None = None
    source_ips: list[str] | None = None
    decision: str | None = None


@dataclass(slots=True)
class PolicyInfo(Body):
    """A policy of an ACL (AclInfo.PolicyInfo): its type (Custom or Default) and its entries."""

    policy_type: str | None = None
    entries: list[PolicyEntryInfo] | None = None


@dataclass(slots=True)
class AclInfo(Body):
    """The ACL of one subject (`User:NAME`) as AUTH_*_ACL requests carry it (RocketMQ's AclInfo)."""

    subject: str | None = None
    policies: list[PolicyInfo] | None = None


def bodies_to_json(items: list[Any]) -> bytes:
    """A JSON array of bodies (AUTH_LIST_USER's and AUTH_LIST_ACL's answers)."""
    return fastjson.dumps([to_obj(i) for i in items])


def bodies_from_json(cls: type[T], data: bytes | bytearray | memoryview | str | None) -> list[T]:
    """A JSON array of `cls` bodies; an empty answer (Apache sends none for an empty list) is []."""
    if not data:
        return []
    try:
        raw = fastjson.loads(data, lenient_max=REQUEST_LENIENT_MAX)
        if not isinstance(raw, list):
            raise TypeError("not a JSON array")
        return [from_obj(cls, item) for item in raw]
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise BodyError(f"bad {cls.__name__} list: {type(exc).__name__}: {str(exc)[:200]}") from None


def _v1_actions(perm: str) -> list[str]:
    """AuthMigrator's reading of a 1.0 permission: PUB, SUB, PUB|SUB (either order); anything else All."""
    perm = perm.strip()
    if perm == "PUB":
        return ["Pub"]
    if perm == "SUB":
        return ["Sub"]
    if perm in ("PUB|SUB", "SUB|PUB"):
        return ["Pub", "Sub"]
    return ["All"]


def _v1_entry(resource: str, perm: str) -> PolicyEntryInfo:
    decision = "Deny" if not perm.strip() or perm.strip() == "DENY" else "Allow"
    return PolicyEntryInfo(resource, _v1_actions(perm), None, decision)


def migrate_plain_access(account: PlainAccessConfig) -> tuple[UserInfo, AclInfo | None]:
    """The ACL 2.0 user and rules RocketMQ's AuthMigrator makes of one plain_acl.yml account: admin
    becomes Super; topicPerms and groupPerms (NAME=PERM) a Custom policy, defaultTopicPerm and
    defaultGroupPerm a Default policy on `Topic:*` and `Group:*`; DENY an All-actions Deny. A perm
    that is not NAME=PERM is skipped as AuthMigrator skips it. The account's white address has no
    2.0 equivalent (2.0 source IPs narrow a rule, they do not skip the signature) and is dropped."""
    user = UserInfo(account.access_key, account.secret_key, "Super" if account.admin else "Normal", "enable")
    custom: list[PolicyEntryInfo] = []
    for kind, perms in (("Topic", account.topic_perms), ("Group", account.group_perms)):
        for perm in perms:
            parts = [p for p in perm.split("=") if p]
            if len(parts) != 2:
                continue
            custom.append(_v1_entry(f"{kind}:{parts[0].strip()}", parts[1]))
    defaults = [
        _v1_entry(f"{kind}:*", perm)
        for kind, perm in (("Topic", account.default_topic_perm), ("Group", account.default_group_perm))
        if perm and perm.strip()
    ]
    policies = ([PolicyInfo("Custom", custom)] if custom else []) + (
        [PolicyInfo("Default", defaults)] if defaults else []
    )
    return user, (AclInfo(f"User:{account.access_key}", policies) if policies else None)


# -- the model (Apache's UserConverter and AclConverter) ---------------------------------------------


def user_of(info: UserInfo) -> User:
    return User(info.username or "", info.password, UserType.by_name(info.user_type),
                UserStatus.by_name(info.user_status))


def info_of(user: User) -> UserInfo:
    return UserInfo(user.username, user.password, user.user_type.label if user.user_type else None,
                    user.user_status.label if user.user_status else None)


def _entry_of(e: PolicyEntryInfo | None) -> PolicyEntry:
    if e is None:
        raise AuthError("The policy entry is null.")
    if e.source_ips and None in e.source_ips:
        raise AuthError("The source ip is empty.")
    return PolicyEntry(Resource.parse(e.resource),  # type: ignore[arg-type]
                       [a for a in (Action.by_name(n) for n in e.actions or []) if a is not None],
                       list(e.source_ips) if e.source_ips else None, Decision.by_name(e.decision))


def acl_of(info: AclInfo, subject: str | None) -> Acl:
    """AclConverter.convertAcl: unknown action names are dropped; the subject defaults to the header's. AuthError
    for a null policy, entry or source IP (a JSON null in a list), which the metadata rules cannot name."""
    policies = []
    for p in info.policies or []:
        if p is None:
            raise AuthError("The policy is null.")
        if not p.entries:
            continue
        policies.append(Policy(PolicyType.by_name(p.policy_type), [_entry_of(e) for e in p.entries]))
    return Acl(info.subject or subject or "", policies)


def acl_info_of(acl: Acl) -> AclInfo:
    return AclInfo(acl.subject, [PolicyInfo(p.policy_type.label, [
        PolicyEntryInfo(e.resource.key, [a.label for a in e.actions] or None, list(e.source_ips) if e.source_ips else None,
                        e.decision.label) for e in p.entries]) for p in acl.policies])
