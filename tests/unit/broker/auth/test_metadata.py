"""ACL 2.0 metadata: the manager's rules and remarks, the store's round trip through its JSON files, the
broker properties, the request contexts and the ACL 1.0 migration."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mqtools.common.auth.model import Action, PolicyType, Resource, UserStatus, UserType
from mqtools.common.auth.policy import AuthError
from mqtools.remoting.auth_bodies import (
    AclInfo,
    PolicyEntryInfo,
    PolicyInfo,
    UserInfo,
    acl_info_of,
    acl_of,
    migrate_plain_access,
    user_of,
)
from mqtools.remoting.bodies import ConsumerData, HeartbeatData, PlainAccessConfig, SubscriptionData
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.server.broker.auth.config import AuthConfig
from mqtools.server.broker.auth.contexts import ContextBuilder
from mqtools.server.broker.auth.manager import AuthMetadataManager
from mqtools.server.broker.auth.store import AuthMetadataStore


def rules(subject: str, *entries: tuple[str, list[str], str], ips: list[str] | None = None) -> AclInfo:
    return AclInfo(subject, [PolicyInfo("Custom", [PolicyEntryInfo(r, a, ips, d) for r, a, d in entries])])


def test_users_and_acls_round_trip_through_the_files(tmp_path: Path) -> None:
    async def write() -> None:
        manager = AuthMetadataManager(AuthMetadataStore(tmp_path))
        await manager.create_user(user_of(UserInfo("app", "pw")))
        await manager.create_user(user_of(UserInfo("ops", "pw2", "Super", "disable")))
        await manager.create_or_update_acl(acl_of(rules("User:app", ("Topic:ord*", ["Pub", "Sub"], "Allow"),
                                                        ("Group:g1", ["Sub"], "Deny")), None))
    asyncio.run(write())
    stored = json.loads((tmp_path / "users.json").read_text())
    assert stored["app"] == {"username": "app", "password": "pw", "userType": 2, "userStatus": 1}
    acls = json.loads((tmp_path / "acls.json").read_text())
    assert acls["User:app"]["policies"][0]["entries"][0]["resource"] == {
        "resourceType": 4, "resourceName": "ord", "resourcePattern": 3}
    again = AuthMetadataStore(tmp_path)
    again.load()
    assert again.user("ops").user_type is UserType.SUPER  # type: ignore[union-attr]
    assert again.user("ops").user_status is UserStatus.DISABLE  # type: ignore[union-attr]
    info = acl_info_of(again.acl("User:app"))  # type: ignore[arg-type]
    assert info == rules("User:app", ("Topic:ord*", ["Pub", "Sub"], "Allow"), ("Group:g1", ["Sub"], "Deny"))


def test_the_managers_refusals_carry_apaches_remarks(tmp_path: Path) -> None:
    manager = AuthMetadataManager(AuthMetadataStore(tmp_path))

    def refused(coro) -> str:  # type: ignore[no-untyped-def]
        with pytest.raises(AuthError) as exc:
            asyncio.run(coro)
        return str(exc.value)

    assert refused(manager.create_user(user_of(UserInfo("app", "")))) == "password can not be blank"
    asyncio.run(manager.create_user(user_of(UserInfo("app", "pw"))))
    assert refused(manager.create_user(user_of(UserInfo("app", "pw")))) == "The user is existed"
    assert refused(manager.update_user(user_of(UserInfo("nobody", "pw")))) == "The user is not exist"
    assert refused(manager.create_or_update_acl(acl_of(rules("User:ghost", ("Topic:t", ["Pub"], "Allow")), None))) \
        == "The subject of User:ghost is not exist."
    assert refused(manager.create_or_update_acl(acl_of(rules("User:app", ("Topic:t", ["Any"], "Allow")), None))) \
        == "The actions can not be Any."
    assert refused(manager.create_or_update_acl(acl_of(rules("User:app", ("Topic:t", ["Pub"], "Allow"),
                                                              ips=["10.0.0.300"]), None))) == "The source ip is invalid."
    assert refused(manager.create_or_update_acl(acl_of(rules("User:app", ("Topic:t", ["Pub"], "Maybe")), None))) \
        == "The decision is null or illegal."
    assert refused(manager.delete_acl("User:app", None, None)) == "The acl is not exist."


def test_update_keeps_what_is_not_given_and_acl_writes_merge_by_resource(tmp_path: Path) -> None:
    manager = AuthMetadataManager(AuthMetadataStore(tmp_path))

    async def run() -> None:
        await manager.create_user(user_of(UserInfo("app", "pw")))
        await manager.update_user(user_of(UserInfo("app", None, None, "disable")))
        await manager.create_or_update_acl(acl_of(rules("User:app", ("Topic:a", ["Pub"], "Allow")), None))
        await manager.create_or_update_acl(acl_of(rules("User:app", ("Topic:a", ["Sub"], "Deny"),
                                                        ("Topic:b", ["Pub"], "Allow")), None))
        await manager.delete_acl("User:app", PolicyType.CUSTOM, Resource.parse("Topic:b"))
    asyncio.run(run())
    user = manager.store.user("app")
    assert (user.password, user.user_status) == ("pw", UserStatus.DISABLE)  # type: ignore[union-attr]
    entries = manager.store.acl("User:app").policies[0].entries  # type: ignore[union-attr]
    assert [(e.resource.key, [a.label for a in e.actions], e.decision.label) for e in entries] == [
        ("Topic:a", ["Sub"], "Deny")]
    assert [a.subject for a in manager.list_acls(None, "Topic:zzz")] == []
    assert [a.subject for a in manager.list_acls("app", "Topic:a")] == ["User:app"]
    asyncio.run(manager.delete_user("app"))
    assert manager.store.acl("User:app") is None


def test_apaches_broker_conf_is_read_unchanged() -> None:
    pkg = "org.apache.rocketmq.auth"
    config = AuthConfig.from_properties({
        "authenticationEnabled": "true", "authorizationEnabled": "true",
        "authenticationProvider": f"{pkg}.authentication.provider.DefaultAuthenticationProvider",
        "authenticationMetadataProvider": f"{pkg}.authentication.provider.LocalAuthenticationMetadataProvider",
        "authorizationProvider": f"{pkg}.authorization.provider.DefaultAuthorizationProvider",
        "authorizationMetadataProvider": f"{pkg}.authorization.provider.LocalAuthorizationMetadataProvider",
        "initAuthenticationUser": '{"username":"rocketmq","password":"12345678"}',
        "innerClientAuthenticationCredentials": '{"accessKey":"rocketmq","secretKey":"12345678"}',
        "authenticationWhitelist": "10, 310", "migrateAuthFromV1Enabled": "true", "userCacheMaxNum": "10"})
    assert config.authentication_enabled and config.authorization_enabled and config.has_metadata
    assert config.authentication_whitelist == {"10", "310"} and config.migrate_from_v1
    assert [u.username for u in config.initial_users] == ["rocketmq", "rocketmq"]
    with pytest.raises(ValueError, match="authenticationProvider"):
        AuthConfig.from_properties({"authenticationProvider": "com.example.Mine"})
    with pytest.raises(ValueError, match="initAuthenticationUser"):
        AuthConfig.from_properties({"initAuthenticationUser": "rocketmq:12345678"})
    assert not AuthConfig.from_properties({}).any_enabled


def test_requests_become_apaches_authorization_contexts() -> None:
    build = ContextBuilder("DefaultCluster").build

    def asks(code: int, ext: dict[str, str], body: bytes | None = None) -> list[tuple[str, tuple[str, ...]]]:
        return [(c.resource.key, tuple(a.label for a in c.actions))
                for c in build(RemotingCommand.request(code, {"AccessKey": "app", **ext}, body), "1.2.3.4")]

    assert asks(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "orders"}) == [("Topic:orders", ("Pub",))]
    assert asks(RequestCode.SEND_MESSAGE_V2, {"a": "cg", "b": "%RETRY%cg"}) == [("Group:cg", ("Sub",))]
    assert asks(RequestCode.PULL_MESSAGE, {"consumerGroup": "cg", "topic": "orders"}) == [
        ("Topic:orders", ("Sub",)), ("Group:cg", ("Sub",))]
    heartbeat = HeartbeatData("c1", [], [ConsumerData("cg", subscription_data_set=[
        SubscriptionData("orders"), SubscriptionData("%RETRY%cg")])]).to_json()
    assert asks(RequestCode.HEART_BEAT, {}, heartbeat) == [("Group:cg", ("Sub",)), ("Topic:orders", ("Sub",))]
    assert asks(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "t"}) == [("Topic:t", ("Create",))]
    assert asks(RequestCode.AUTH_CREATE_USER, {"username": "x"}) == [("Cluster:DefaultCluster", ("Update",))]
    assert asks(RequestCode.GET_BROKER_RUNTIME_INFO, {}) == []  # not annotated in Apache: authentication only
    with pytest.raises(AuthError, match="parse authorization context error."):
        build(RemotingCommand.request(RequestCode.HEART_BEAT, {"AccessKey": "app"}, b"[1"), "1.2.3.4")
    assert Action.PUB.label == "Pub"


def test_plain_acl_accounts_migrate_as_apaches_auth_migrator_does() -> None:
    user, acl = migrate_plain_access(PlainAccessConfig(
        "ak", "sk", "10.0.0.*", True, "DENY", "SUB", ["orders=PUB|SUB", "audit=DENY", "broken"], ["g1=SUB"]))
    assert (user.username, user.password, user.user_type) == ("ak", "sk", "Super")
    assert acl == AclInfo("User:ak", [
        PolicyInfo("Custom", [PolicyEntryInfo("Topic:orders", ["Pub", "Sub"], None, "Allow"),
                              PolicyEntryInfo("Topic:audit", ["All"], None, "Deny"),
                              PolicyEntryInfo("Group:g1", ["Sub"], None, "Allow")]),
        PolicyInfo("Default", [PolicyEntryInfo("Topic:*", ["All"], None, "Deny"),
                               PolicyEntryInfo("Group:*", ["Sub"], None, "Allow")])])
    assert migrate_plain_access(PlainAccessConfig("bare", "sk"))[1] is None
