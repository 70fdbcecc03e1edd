"""The ACL 2.0 model: users, subjects, resources, actions, policy entries, policies and ACLs.

Names and matching follow RocketMQ's auth model (User, Resource, PolicyEntry, Policy, Acl): a
resource key is `*`, `Topic:NAME`, `Topic:*` or `Topic:PREFIX*` (Group: and Cluster: alike); an
entry's actions match a request when any requested action is among them or the entry has All; an
entry without source IPs matches every address. The JSON written to disk is fastjson's rendering
of Apache's classes (enums by their byte code), so the stored values read as Apache stores them.
"""

from __future__ import annotations

import enum
import ipaddress
from dataclasses import dataclass, field
from typing import Any

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"


class NamedEnum(enum.Enum):
    """An enum with Apache's byte code and display name; `by_name` is case-insensitive as getByName is."""

    def __init__(self, code: int, label: str) -> None:
        self.code = code
        self.label = label

    @classmethod
    def by_name(cls, name: str | None) -> Any:
        if name is None:
            return None
        for member in cls:
            if member.label.lower() == name.strip().lower():
                return member
        return None

    @classmethod
    def by_code(cls, code: int | None) -> Any:
        for member in cls:
            if member.code == code:
                return member
        return None


class UserType(NamedEnum):
    SUPER = (1, "Super")
    NORMAL = (2, "Normal")


class UserStatus(NamedEnum):
    ENABLE = (1, "enable")
    DISABLE = (2, "disable")


class Decision(NamedEnum):
    ALLOW = (1, "Allow")
    DENY = (2, "Deny")


class PolicyType(NamedEnum):
    CUSTOM = (1, "Custom")
    DEFAULT = (2, "Default")


class Action(NamedEnum):
    UNKNOWN = (0, "Unknown")
    ALL = (1, "All")
    ANY = (2, "Any")
    PUB = (3, "Pub")
    SUB = (4, "Sub")
    CREATE = (5, "Create")
    UPDATE = (6, "Update")
    DELETE = (7, "Delete")
    GET = (8, "Get")
    LIST = (9, "List")


class ResourceType(NamedEnum):
    UNKNOWN = (0, "Unknown")
    ANY = (1, "Any")
    CLUSTER = (2, "Cluster")
    NAMESPACE = (3, "Namespace")
    TOPIC = (4, "Topic")
    GROUP = (5, "Group")


class ResourcePattern(NamedEnum):
    ANY = (1, "Any")
    LITERAL = (2, "Literal")
    PREFIXED = (3, "Prefixed")


@dataclass(slots=True)
class User:
    username: str
    password: str | None = None
    user_type: UserType | None = None
    user_status: UserStatus | None = None

    @property
    def subject_key(self) -> str:
        return f"User:{self.username}"

    def to_stored(self) -> dict[str, Any]:
        out: dict[str, Any] = {"username": self.username}
        if self.password is not None:
            out["password"] = self.password
        if self.user_type is not None:
            out["userType"] = self.user_type.code
        if self.user_status is not None:
            out["userStatus"] = self.user_status.code
        return out

    @classmethod
    def from_stored(cls, raw: dict[str, Any]) -> User:
        return cls(str(raw["username"]), raw.get("password"), UserType.by_code(raw.get("userType")),
                   UserStatus.by_code(raw.get("userStatus")))


def subject_username(subject_key: str | None) -> str | None:
    """The user name of a `User:NAME` subject key (Subject.of); None for another or no subject type."""
    if not subject_key:
        return None
    kind, _, name = subject_key.partition(":")
    return name if kind.lower() == "user" and name else None


def group_name(name: str) -> str:
    """Resource.ofGroup: a retry (or DLQ) topic names its group."""
    for prefix in (RETRY_PREFIX, DLQ_PREFIX):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


@dataclass(frozen=True, slots=True)
class Resource:
    type: ResourceType
    name: str | None
    pattern: ResourcePattern

    @classmethod
    def topic(cls, name: str) -> Resource:
        return cls(ResourceType.TOPIC, name, ResourcePattern.LITERAL)

    @classmethod
    def group(cls, name: str) -> Resource:
        return cls(ResourceType.GROUP, group_name(name), ResourcePattern.LITERAL)

    @classmethod
    def cluster(cls, name: str) -> Resource:
        return cls(ResourceType.CLUSTER, name, ResourcePattern.LITERAL)

    @classmethod
    def parse(cls, key: str | None) -> Resource | None:
        """Resource.of(resourceKey): None for a blank key or an unknown type."""
        if key is None or not key.strip():
            return None
        if key == "*":
            return cls(ResourceType.ANY, None, ResourcePattern.ANY)
        kind, _, name = key.partition(":")
        rtype = ResourceType.by_name(kind)
        if rtype is None:
            return None
        if name == "*":
            return cls(rtype, None, ResourcePattern.ANY)
        if name.endswith("*"):
            return cls(rtype, name[:name.index("*")], ResourcePattern.PREFIXED)
        return cls(rtype, name, ResourcePattern.LITERAL)

    @property
    def key(self) -> str:
        if self.type is ResourceType.ANY:
            return "*"
        if self.pattern is ResourcePattern.ANY:
            return f"{self.type.label}:*"
        if self.pattern is ResourcePattern.PREFIXED:
            return f"{self.type.label}:{self.name}*"
        return f"{self.type.label}:{self.name}"

    def matches(self, other: Resource) -> bool:
        """Does this (rule) resource cover the requested resource `other`?"""
        if self.type is ResourceType.ANY:
            return True
        if self.type is not other.type:
            return False
        if self.pattern is ResourcePattern.ANY:
            return True
        if self.pattern is ResourcePattern.LITERAL:
            return other.name == self.name
        return other.name is not None and self.name is not None and other.name.startswith(self.name)

    def to_stored(self) -> dict[str, Any]:
        out: dict[str, Any] = {"resourceType": self.type.code, "resourcePattern": self.pattern.code}
        if self.name is not None:
            out["resourceName"] = self.name
        return out

    @classmethod
    def from_stored(cls, raw: dict[str, Any]) -> Resource:
        return cls(ResourceType.by_code(raw.get("resourceType")), raw.get("resourceName"),
                   ResourcePattern.by_code(raw.get("resourcePattern")))


def valid_ip_or_cidr(text: str) -> bool:
    """IPAddressUtils.isValidIPOrCidr: an IPv4 or IPv6 address or network."""
    try:
        ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        return False
    return True


def ip_in_range(ip: str, cidr: str) -> bool:
    """IPAddressUtils.isIPInRange: `ip` equals `cidr` or lies inside it; False when either is malformed."""
    try:
        addr = ipaddress.ip_address(ip.strip().strip("[]"))
        net = ipaddress.ip_network(cidr.strip(), strict=False)
    except ValueError:
        return False
    return addr.version == net.version and addr in net


@dataclass(slots=True)
class PolicyEntry:
    resource: Resource
    actions: list[Action]
    source_ips: list[str] | None
    decision: Decision

    def matches_actions(self, requested: list[Action]) -> bool:
        if not self.actions:
            return False
        if Action.ANY in requested:
            return True
        return any(a in self.actions or Action.ALL in self.actions for a in requested)

    def matches_source(self, source_ip: str | None) -> bool:
        if not self.source_ips:
            return True
        if not source_ip:
            return False
        return any(ip_in_range(source_ip, allowed) for allowed in self.source_ips)

    def to_stored(self) -> dict[str, Any]:
        out: dict[str, Any] = {"resource": self.resource.to_stored(), "actions": [a.code for a in self.actions],
                               "decision": self.decision.code}
        out["environment"] = {"sourceIps": list(self.source_ips)} if self.source_ips else {}
        return out

    @classmethod
    def from_stored(cls, raw: dict[str, Any]) -> PolicyEntry:
        env = raw.get("environment") or {}
        return cls(Resource.from_stored(raw["resource"]), [Action.by_code(c) for c in raw.get("actions") or []],
                   list(env.get("sourceIps") or []) or None, Decision.by_code(raw.get("decision")))


@dataclass(slots=True)
class Policy:
    policy_type: PolicyType
    entries: list[PolicyEntry] = field(default_factory=list)

    def update_entries(self, new: list[PolicyEntry]) -> None:
        """Policy.updateEntry: a resource already ruled gets the new actions, IPs and decision in its place, others
        are added in order. Indexed by resource, so merging n entries into m costs n + m, not n * m (5,000 into
        5,000 blocked the loop 4.5 s). An entry is replaced, never changed in place: a copy of the policy
        (`Acl.copy`) shares its entries."""
        where = {e.resource: i for i, e in enumerate(self.entries)}
        for entry in new:
            i = where.get(entry.resource)
            if i is None:
                where[entry.resource] = len(self.entries)
                self.entries.append(entry)
            else:
                self.entries[i] = entry

    def to_stored(self) -> dict[str, Any]:
        return {"policyType": self.policy_type.code, "entries": [e.to_stored() for e in self.entries]}

    @classmethod
    def from_stored(cls, raw: dict[str, Any]) -> Policy:
        return cls(PolicyType.by_code(raw.get("policyType")),
                   [PolicyEntry.from_stored(e) for e in raw.get("entries") or []])


@dataclass(slots=True)
class Acl:
    """The rules of one subject (`User:NAME`): at most one Custom and one Default policy."""

    subject: str
    policies: list[Policy] = field(default_factory=list)

    def policy(self, policy_type: PolicyType) -> Policy | None:
        return next((p for p in self.policies if p.policy_type is policy_type), None)

    def copy(self) -> Acl:
        """A copy to change while this one stays in force: its own policies and entry lists, the entries shared
        (they are replaced, never changed in place)."""
        return Acl(self.subject, [Policy(p.policy_type, list(p.entries)) for p in self.policies])

    def update_policies(self, new: list[Policy]) -> None:
        """Acl.updatePolicy: merge each policy into the one of its type (two of one type in `new` become one)."""
        for policy in new:
            old = self.policy(policy.policy_type)
            if old is None:
                self.policies.append(Policy(policy.policy_type, list(policy.entries)))
            else:
                old.update_entries(policy.entries)

    def delete_entry(self, policy_type: PolicyType, resource: Resource) -> None:
        """Acl.deletePolicy: drop the resource's entry; a policy left empty goes too."""
        policy = self.policy(policy_type)
        if policy is None:
            return
        policy.entries = [e for e in policy.entries if e.resource != resource]
        if not policy.entries:
            self.policies.remove(policy)

    def to_stored(self) -> dict[str, Any]:
        return {"subject": {"subjectKey": self.subject, "subjectType": 1, "username": subject_username(self.subject)},
                "policies": [p.to_stored() for p in self.policies]}

    @classmethod
    def from_stored(cls, subject: str, raw: dict[str, Any]) -> Acl:
        return cls(subject, [Policy.from_stored(p) for p in raw.get("policies") or []])
