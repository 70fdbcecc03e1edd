"""plain_acl.yml: the accounts and global white addresses (RocketMQ's PlainPermissionManager), sans-IO.

`PlainAclFile` is the file's content as data (parse from YAML text, render back); `PlainAcl` is
the compiled form the validator consults (address matchers, permission maps). Reading the file,
watching its mtime and writing it back live in `manager.py`; everything here takes text or values,
so the rules are tested without a broker.

Deviation: an account whose keys are too short, or a bad permission or address pattern, makes the
whole file invalid (RocketMQ skips or fails per entry); the broker keeps the last good rules and
logs one line, so a typo never opens or closes the broker by accident.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import yaml

from mqtools.common.topics import RMQ_SYS_TRACE_TOPIC, is_retry_topic
from mqtools.remoting.bodies import DataVersion, PlainAccessConfig
from mqtools.remoting.body_codec import from_obj, to_obj
from mqtools.remoting.command import RemotingCommand
from mqtools.server.broker.acl import addresses, permission
from mqtools.server.broker.acl.codes import served_code


#: PlainAccessConfig attribute -> its key in the file and in GET_BROKER_CLUSTER_ACL_CONFIG's body
class AclConfigError(ValueError):
    """A rule the broker cannot use; its text never carries a secret."""


#: AclConstants.ACCESS_KEY_MIN_LENGTH / SECRET_KEY_MIN_LENGTH: keys must be longer than this
KEY_MIN_LENGTH = 6


def check_account(config: PlainAccessConfig) -> None:
    """AclConfigError naming the access key (never the secret) when the account cannot be used."""
    if len(config.access_key or "") <= KEY_MIN_LENGTH:
        raise AclConfigError(f"accessKey {config.access_key!r} must be longer than {KEY_MIN_LENGTH} characters")
    if len(config.secret_key or "") <= KEY_MIN_LENGTH:
        raise AclConfigError(f"the secretKey of {config.access_key} must be longer than {KEY_MIN_LENGTH} characters")
    for name in (config.default_topic_perm, config.default_group_perm):
        if name is not None and not permission.is_valid_perm(name):
            raise AclConfigError(f"bad default permission {name!r} for {config.access_key}")
    permission.parse_resource_perms(config.topic_perms, groups=False)
    permission.parse_resource_perms(config.group_perms, groups=True)
    addresses.matcher(config.white_remote_address)


def account_to_yaml(config: PlainAccessConfig) -> dict[str, object]:
    return {key: value for key, value in to_obj(config).items() if value != []}


def account_from_yaml(raw: object) -> PlainAccessConfig:
    if not isinstance(raw, dict):
        raise AclConfigError("an account is not a mapping")
    for key in ("topicPerms", "groupPerms"):
        if not isinstance(raw.get(key) or [], list):
            raise AclConfigError(f"{key} is not a list")
    config = from_obj(PlainAccessConfig, raw)
    config.admin = raw.get("admin") in (True, "true", "True")
    return config


def masked(config: PlainAccessConfig) -> PlainAccessConfig:
    """The account with its secret replaced: what leaves the broker."""
    return dataclasses.replace(config, secret_key="****")


@dataclass(slots=True)
class PlainAclFile:
    """The content of plain_acl.yml."""

    global_white_remote_addresses: list[str] = field(default_factory=list)
    accounts: list[PlainAccessConfig] = field(default_factory=list)
    data_version: DataVersion = field(default_factory=DataVersion)

    @classmethod
    def parse(cls, text: str) -> PlainAclFile:
        """ValueError (without any secret in it) when the YAML or a rule is malformed."""
        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            raise AclConfigError(f"not valid YAML{where}") from None
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise AclConfigError("the file is not a YAML mapping")
        whites = raw.get("globalWhiteRemoteAddresses") or []
        accounts = raw.get("accounts") or []
        if not isinstance(whites, list) or not isinstance(accounts, list):
            raise AclConfigError("globalWhiteRemoteAddresses and accounts must be lists")
        try:
            parsed = cls([str(w) for w in whites], [account_from_yaml(a) for a in accounts])
            versions = raw.get("dataVersion") or []
            if isinstance(versions, list) and versions and isinstance(versions[0], dict):
                first = versions[0]
                parsed.data_version = DataVersion(timestamp=int(first.get("timestamp", 0)),
                                                  counter=int(first.get("counter", 0)))
        except AclConfigError:
            raise
        except (TypeError, ValueError, AttributeError) as exc:
            raise AclConfigError(f"a value of the wrong type ({type(exc).__name__})") from None
        parsed.compile()  # every rule checked before the file is accepted
        return parsed

    def render(self) -> str:
        doc = {
            "globalWhiteRemoteAddresses": list(self.global_white_remote_addresses),
            "accounts": [account_to_yaml(a) for a in self.accounts],
            "dataVersion": [{"counter": self.data_version.counter, "timestamp": self.data_version.timestamp}],
        }
        return yaml.safe_dump(doc, sort_keys=False)

    def account(self, access_key: str) -> PlainAccessConfig | None:
        return next((a for a in self.accounts if a.access_key == access_key), None)

    def compile(self) -> PlainAcl:
        seen: set[str] = set()
        for account in self.accounts:
            check_account(account)
            if account.access_key in seen:
                raise AclConfigError(f"accessKey {account.access_key} appears twice")
            seen.add(account.access_key)
        return PlainAcl([addresses.matcher(w) for w in self.global_white_remote_addresses],
                        {a.access_key: Account.of(a) for a in self.accounts})


@dataclass(frozen=True, slots=True)
class Account:
    """One account compiled for checks: a PlainAccessResource in RocketMQ's terms."""

    access_key: str
    secret_key: str
    admin: bool
    #: None without a white address (the common case skips the peer's host entirely)
    white: addresses.Matcher | None
    default_topic_perm: int
    default_group_perm: int
    perms: dict[str, int]

    @classmethod
    def of(cls, config: PlainAccessConfig) -> Account:
        perms = permission.parse_resource_perms(config.group_perms, groups=True)
        perms.update(permission.parse_resource_perms(config.topic_perms, groups=False))
        return cls(config.access_key, config.secret_key or "", config.admin,
                   addresses.matcher(config.white_remote_address) if config.white_remote_address else None,
                   permission.parse_perm(config.default_topic_perm),
                   permission.parse_perm(config.default_group_perm), perms)

    def missing(self, request: RemotingCommand) -> str | None:
        """Why this account may not make the request (None: it may), naming resource and permission."""
        code = served_code(request.code)
        if code in permission.ADMIN_CODES and not self.admin:
            return f"request code {code} needs an admin account; accessKey={self.access_key} is not admin"
        if self.admin and not self.perms:
            return None
        needed = permission.needed(request)
        if needed.get(RMQ_SYS_TRACE_TOPIC) == permission.PUB:  # traces are accepted, as PlainPermissionManager does
            return None
        for resource, need in needed.items():
            owned = self.perms.get(resource)
            if owned is None:
                owned = self.default_group_perm if is_retry_topic(resource) else self.default_topic_perm
            if not permission.check(need, owned):
                return (f"accessKey={self.access_key} has no {permission.perm_name(need)} permission on "
                        f"{permission.describe(resource)}")
        return None


@dataclass(frozen=True, slots=True)
class PlainAcl:
    global_white: list[addresses.Matcher]
    accounts: dict[str, Account]

    def globally_white(self, host: str) -> bool:
        return any(match(host) for match in self.global_white)
