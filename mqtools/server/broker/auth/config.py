"""The broker properties that switch ACL 2.0 on: Apache 5.5's AuthConfig keys, read unchanged.

`authenticationEnabled` and `authorizationEnabled` switch the checks; the provider keys name Java
classes, and mq accepts Apache's own (the Default providers, the Local metadata providers) or none:
another class cannot be loaded here and stops start-up with its name. As in Apache, the metadata
providers must be named for users and ACLs to exist at all: without them every check is refused
with Apache's "not configured" remark. `initAuthenticationUser` ({"username":..,"password":..}) and
`innerClientAuthenticationCredentials` ({"accessKey":..,"secretKey":..}) create Super users at
start-up when missing (one with a blank name or password stops start-up, as Apache's createUser refuses
it); the whitelists name request codes that skip a check; with
`migrateAuthFromV1Enabled` the accounts of plain_acl.yml become users and ACLs at start-up.
The cache keys are accepted and ignored (the metadata is held in memory).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

PACKAGE = "org.apache.rocketmq.auth"
AUTHENTICATION_PROVIDERS = {"", f"{PACKAGE}.authentication.provider.DefaultAuthenticationProvider"}
AUTHORIZATION_PROVIDERS = {"", f"{PACKAGE}.authorization.provider.DefaultAuthorizationProvider"}
AUTHENTICATION_METADATA = f"{PACKAGE}.authentication.provider.LocalAuthenticationMetadataProvider"
AUTHORIZATION_METADATA = f"{PACKAGE}.authorization.provider.LocalAuthorizationMetadataProvider"
STRATEGIES = {"", f"{PACKAGE}.authentication.strategy.StatelessAuthenticationStrategy",
              f"{PACKAGE}.authorization.strategy.StatelessAuthorizationStrategy",
              f"{PACKAGE}.authentication.strategy.StatefulAuthenticationStrategy",
              f"{PACKAGE}.authorization.strategy.StatefulAuthorizationStrategy"}


def _bool(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def _codes(value: str | None) -> frozenset[str]:
    return frozenset(c.strip() for c in (value or "").split(",") if c.strip())


@dataclass(frozen=True, slots=True)
class InitialUser:
    """A Super user a broker property asks for; `key` names that property in refusals."""

    key: str
    username: str
    password: str


def _text(value: object) -> str:
    """A JSON value as fastjson reads it into a String field: null stays empty (blank), not "None"."""
    return "" if value is None else str(value)


@dataclass(frozen=True, slots=True)
class AuthConfig:
    authentication_enabled: bool = False
    authorization_enabled: bool = False
    authentication_metadata: bool = False
    authorization_metadata: bool = False
    authentication_whitelist: frozenset[str] = field(default_factory=frozenset)
    authorization_whitelist: frozenset[str] = field(default_factory=frozenset)
    initial_users: tuple[InitialUser, ...] = ()
    migrate_from_v1: bool = False

    @property
    def any_enabled(self) -> bool:
        return self.authentication_enabled or self.authorization_enabled

    @property
    def has_metadata(self) -> bool:
        """Apache builds a metadata manager when either metadata provider is named."""
        return self.authentication_metadata or self.authorization_metadata

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> AuthConfig:
        """ValueError naming the key when a value cannot be used here."""
        def get(key: str) -> str:
            return (props.get(key) or "").strip()

        for key, allowed in (("authenticationProvider", AUTHENTICATION_PROVIDERS),
                             ("authorizationProvider", AUTHORIZATION_PROVIDERS),
                             ("authenticationStrategy", STRATEGIES), ("authorizationStrategy", STRATEGIES)):
            if get(key) not in allowed:
                raise ValueError(f"{key}={get(key)}: mq implements Apache's default classes only")
        for key, allowed_one in (("authenticationMetadataProvider", AUTHENTICATION_METADATA),
                                 ("authorizationMetadataProvider", AUTHORIZATION_METADATA)):
            if get(key) not in ("", allowed_one):
                raise ValueError(f"{key}={get(key)}: mq implements {allowed_one} only")
        users: list[InitialUser] = []
        for key, name_key, secret_key in (("initAuthenticationUser", "username", "password"),
                                          ("innerClientAuthenticationCredentials", "accessKey", "secretKey")):
            if not get(key):
                continue
            try:
                raw = json.loads(get(key))
                users.append(InitialUser(key, _text(raw[name_key]), _text(raw[secret_key])))
            except (ValueError, KeyError, TypeError):
                raise ValueError(f"{key} is not JSON with {name_key} and {secret_key}") from None
        return cls(_bool(props.get("authenticationEnabled")), _bool(props.get("authorizationEnabled")),
                   bool(get("authenticationMetadataProvider")), bool(get("authorizationMetadataProvider")),
                   _codes(props.get("authenticationWhitelist")), _codes(props.get("authorizationWhitelist")),
                   tuple(users), _bool(props.get("migrateAuthFromV1Enabled")))


#: Apache 5.5's AuthConfig fields. Apache keeps AuthConfig apart from the broker's Configuration, so these keys
#: are never in GET_BROKER_CONFIG's answer (they hold Super users' passwords) and UPDATE_BROKER_CONFIG refuses
#: them (a remote request must not switch ACL 2.0 off).
CONFIG_KEYS = frozenset({
    "configName", "clusterName", "authConfigPath",
    "authenticationEnabled", "authenticationProvider", "authenticationMetadataProvider", "authenticationStrategy",
    "authenticationWhitelist", "initAuthenticationUser", "innerClientAuthenticationCredentials",
    "authorizationEnabled", "authorizationProvider", "authorizationMetadataProvider", "authorizationStrategy",
    "authorizationWhitelist", "migrateAuthFromV1Enabled",
    "userCacheMaxNum", "userCacheExpiredSecond", "userCacheRefreshSecond",
    "aclCacheMaxNum", "aclCacheExpiredSecond", "aclCacheRefreshSecond",
    "statefulAuthenticationCacheMaxNum", "statefulAuthenticationCacheExpiredSecond",
    "statefulAuthorizationCacheMaxNum", "statefulAuthorizationCacheExpiredSecond",
})
