"""Typed results of the ACL 2.0 admin requests (users and ACL rules) and their documents.

A user's password travels in clear in Apache's AUTH_GET_USER and AUTH_LIST_USER answers; the models
keep it (copying users needs it) but no document shows it: tables and JSON carry `****` where a
password exists. Dry runs and writes are `AuthChange` documents: what was (or would be) done, where, and where a
write sent to several brokers did not apply (partial: exit 4; applied nowhere is an error naming each broker).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mqtools.common.presentation import Column, Unreachable, View, renders
from mqtools.common.security import MASK


@dataclass(frozen=True, slots=True)
class AuthUser:
    username: str
    password: str | None = None
    user_type: str | None = None
    user_status: str | None = None

    def __repr__(self) -> str:
        return f"AuthUser(username={self.username!r}, password='***', user_type={self.user_type!r})"


@dataclass(frozen=True, slots=True)
class AuthRule:
    """One entry of a policy: resource key (`Topic:orders`, `Group:g*`, `*`), actions, source IPs, decision."""

    resource: str
    actions: tuple[str, ...]
    source_ips: tuple[str, ...] = ()
    decision: str = "Allow"


@dataclass(frozen=True, slots=True)
class AuthPolicy:
    policy_type: str
    entries: tuple[AuthRule, ...]


@dataclass(frozen=True, slots=True)
class AuthAcl:
    """The rules of one subject (`User:NAME`)."""

    subject: str
    policies: tuple[AuthPolicy, ...]


@dataclass(frozen=True, slots=True)
class BrokerUsers:
    broker_addr: str
    users: list[AuthUser]


@dataclass(frozen=True, slots=True)
class BrokerAcls:
    broker_addr: str
    acls: list[AuthAcl]


@dataclass(frozen=True, slots=True)
class AuthChange:
    """One change to users or rules: `action` (create-user, update-user, delete-user, create-acl, ...), the
    user or subject, the brokers it applied on (a dry run: would apply on), whether it was only planned and what
    it sets. `missed`: the brokers it was sent to that refused it or did not answer, each with its outcome (each
    broker keeps its own users and rules, so those are now out of step)."""

    action: str
    target: str
    brokers: list[str]
    dry_run: bool
    detail: str = ""
    missed: list[Unreachable] = field(default_factory=list)


@dataclass(slots=True)
class AuthRead:
    """What a read of several brokers found, and the brokers it could not read."""

    found: list = field(default_factory=list)
    unreachable: list[Unreachable] = field(default_factory=list)


# -- documents ---------------------------------------------------------------------------------------


def user_doc(user: AuthUser) -> dict[str, object]:
    return {"username": user.username, "password": MASK if user.password else None,
            "userType": user.user_type, "userStatus": user.user_status}


@renders("UserList")
def user_list_view(found: list[BrokerUsers], unreachable: list[Unreachable] | None = None) -> View:
    """Every user of every broker read, one row each; the password is never shown."""
    rows = [[b.broker_addr, u.username, u.user_type, u.user_status] for b in found for u in b.users]
    doc = {"brokers": [{"brokerAddr": b.broker_addr, "users": [user_doc(u) for u in b.users]} for b in found]}
    columns = [Column("BROKER"), Column("USERNAME"), Column("TYPE"), Column("STATUS")]
    return View("UserList", columns, rows, doc, unreachable=list(unreachable or []))


def rule_doc(rule: AuthRule) -> dict[str, object]:
    return {"resource": rule.resource, "actions": list(rule.actions), "sourceIps": list(rule.source_ips),
            "decision": rule.decision}


def acl_doc(acl: AuthAcl) -> dict[str, object]:
    return {"subject": acl.subject, "policies": [
        {"policyType": p.policy_type, "entries": [rule_doc(e) for e in p.entries]} for p in acl.policies]}


@renders("AclRuleList")
def acl_rule_list_view(found: list[BrokerAcls], unreachable: list[Unreachable] | None = None) -> View:
    """Every rule of every subject of every broker read, one row per policy entry."""
    rows = [[b.broker_addr, a.subject, p.policy_type, e.resource, ",".join(e.actions),
             ",".join(e.source_ips) or None, e.decision]
            for b in found for a in b.acls for p in a.policies for e in p.entries]
    doc = {"brokers": [{"brokerAddr": b.broker_addr, "acls": [acl_doc(a) for a in b.acls]} for b in found]}
    columns = [Column("BROKER"), Column("SUBJECT"), Column("POLICY"), Column("RESOURCE"), Column("ACTIONS"),
               Column("SOURCE IPS"), Column("DECISION")]
    return View("AclRuleList", columns, rows, doc, unreachable=list(unreachable or []))


@renders("AuthChange")
def auth_change_view(changes: list[AuthChange]) -> View:
    """What a write did, or with --dry-run would do, per user or subject: BROKERS are where it applied; a broker
    that refused it or did not answer is named with its outcome as the document's unreachable (partial, exit 4)."""
    rows = [[c.action, c.target, ",".join(c.brokers), c.dry_run, c.detail or None] for c in changes]
    doc = {"changes": [{"action": c.action, "target": c.target, "brokers": list(c.brokers), "dryRun": c.dry_run,
                        "detail": c.detail} for c in changes]}
    columns = [Column("ACTION"), Column("TARGET"), Column("BROKERS"), Column("DRY RUN"), Column("DETAIL")]
    return View("AuthChange", columns, rows, doc, unreachable=[u for c in changes for u in c.missed])

