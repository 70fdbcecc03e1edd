"""ACL 2.0 fixes found in review: a change the disk refuses is not in force, merging a large policy does not block
the loop, a malformed AUTH_* body is one limited log line and an answer naming the fault, and an ACL created with
two policies of one type keeps one (matching reads only the first: a Deny in the second was never applied)."""

from __future__ import annotations

import errno
import json
import logging
from pathlib import Path

import pytest

from mqtools.common.auth.model import (
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
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.server.broker.auth import store as store_module
from mqtools.server.broker.auth.config import AuthConfig
from mqtools.server.broker.auth.service import AuthService
from mqtools.server.broker.auth.store import AuthMetadataStore

PKG = "org.apache.rocketmq.auth"
METADATA = {"authenticationMetadataProvider": f"{PKG}.authentication.provider.LocalAuthenticationMetadataProvider",
            "authorizationMetadataProvider": f"{PKG}.authorization.provider.LocalAuthorizationMetadataProvider"}


def service(tmp_path: Path) -> AuthService:
    """Authentication off: the admin requests carry no AccessKey and count as a Super user's."""
    store = AuthMetadataStore(tmp_path)
    store.users["u1"] = User("u1", "pw-123456789", UserType.NORMAL, UserStatus.ENABLE)
    store.write_now()
    return AuthService(AuthConfig.from_properties(METADATA), store, "DefaultCluster")


async def call(auth: AuthService, code: RequestCode, ext: dict[str, str], body: object = None) -> RemotingCommand:
    raw = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    handler = {RequestCode.AUTH_CREATE_USER: auth.create_user, RequestCode.AUTH_DELETE_USER: auth.delete_user,
               RequestCode.AUTH_CREATE_ACL: auth.create_acl, RequestCode.AUTH_DELETE_ACL: auth.delete_acl}[code]
    return await handler(None, RemotingCommand.request(code, ext, raw))  # type: ignore[arg-type]


def rule(resource: str, decision: str, policy_type: str = "Custom") -> dict[str, object]:
    return {"policyType": policy_type, "entries": [{"resource": resource, "actions": ["Pub"], "decision": decision}]}


@pytest.fixture
def disk_full(monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    state = {"full": False}
    real = store_module.write_atomic

    def maybe_full(path: Path, data: bytes) -> None:
        if state["full"]:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, data)
    monkeypatch.setattr(store_module, "write_atomic", maybe_full)
    return state


async def test_a_change_the_disk_refuses_is_not_in_force(tmp_path: Path, disk_full: dict[str, bool],
                                                        caplog: pytest.LogCaptureFixture) -> None:
    auth = service(tmp_path)
    assert (await call(auth, RequestCode.AUTH_CREATE_ACL, {"subject": "User:u1"},
                       {"policies": [rule("Topic:a", "Allow")]})).code == ResponseCode.SUCCESS
    disk_full["full"] = True
    answers = [await call(auth, RequestCode.AUTH_DELETE_USER, {"username": "u1"}),
               await call(auth, RequestCode.AUTH_DELETE_USER, {"username": "u1"}),
               await call(auth, RequestCode.AUTH_CREATE_USER, {"username": "u2"}, {"password": "pw-2345678901"}),
               await call(auth, RequestCode.AUTH_CREATE_ACL, {"subject": "User:u1"},
                          {"policies": [rule("Topic:a", "Deny")]}),
               await call(auth, RequestCode.AUTH_DELETE_ACL, {"subject": "User:u1", "resource": "Topic:a"})]
    refused = (ResponseCode.SYSTEM_ERROR, "The change was not saved and is not in force: No space left on device")
    for answer in answers:
        assert (answer.code, answer.remark) == refused, answer
    assert not [r for r in caplog.records if r.exc_info]
    assert sorted(auth.store.users) == ["u1"]
    acl = auth.store.acl("User:u1")
    assert acl is not None and acl.policies[0].entries[0].decision is Decision.ALLOW
    disk_full["full"] = False
    assert (await call(auth, RequestCode.AUTH_DELETE_USER, {"username": "u1"})).code == ResponseCode.SUCCESS
    again = AuthMetadataStore(tmp_path)
    again.load()
    assert (again.users, again.acls) == ({}, {})


def _entries(prefix: str, n: int) -> list[PolicyEntry]:
    return [PolicyEntry(Resource.topic(f"{prefix}{i}"), [Action.PUB], None, Decision.ALLOW) for i in range(n)]


def test_merging_a_large_policy_is_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted, not timed: scanning the policy for each new entry compared resources 5,000 x 5,000 times (the
    loop blocked 4.5 s); looked up by resource, a merge compares about one pair an entry at most."""
    compared = 0
    equal = Resource.__eq__

    def counting(self: Resource, other: object) -> bool:
        nonlocal compared
        compared += 1
        return equal(self, other)

    policy = Policy(PolicyType.CUSTOM, _entries("a", 5_000))
    monkeypatch.setattr(Resource, "__eq__", counting)
    policy.update_entries(_entries("b", 5_000) + _entries("a", 5_000))
    assert compared <= 2 * 10_000
    assert len(policy.entries) == 10_000


def test_a_merge_keeps_the_order_and_the_last_word_per_resource() -> None:
    policy = Policy(PolicyType.CUSTOM, _entries("t", 3))
    deny = PolicyEntry(Resource.topic("t1"), [Action.SUB], ["10.0.0.1"], Decision.DENY)
    new = PolicyEntry(Resource.topic("n"), [Action.PUB], None, Decision.ALLOW)
    newer = PolicyEntry(Resource.topic("n"), [Action.ALL], None, Decision.DENY)
    original = policy.entries[1]
    policy.update_entries([new, deny, newer])
    assert [(e.resource.key, e.decision) for e in policy.entries] == [
        ("Topic:t0", Decision.ALLOW), ("Topic:t1", Decision.DENY), ("Topic:t2", Decision.ALLOW),
        ("Topic:n", Decision.DENY)]
    assert (policy.entries[1].actions, policy.entries[1].source_ips) == ([Action.SUB], ["10.0.0.1"])
    assert policy.entries[3].actions == [Action.ALL]
    assert original.decision is Decision.ALLOW  # an entry is replaced, never changed where another holds it


@pytest.mark.parametrize(("body", "remark"), [
    (b'{"policies":[null]}', "The policy is null."),
    (b'{"policies":[{"entries":[null]}]}', "The policy entry is null."),
    (b'{"policies":[{"entries":[{"resource":"Topic:a","actions":["Pub"],"sourceIps":[null],"decision":"Allow"}]}]}',
     "The source ip is empty."),
])
async def test_null_items_are_refused_with_a_remark(tmp_path: Path, caplog: pytest.LogCaptureFixture, body: bytes,
                                                    remark: str) -> None:
    auth = service(tmp_path)
    answer = await call(auth, RequestCode.AUTH_CREATE_ACL, {"subject": "User:u1"}, body)
    assert (answer.code, answer.remark) == (ResponseCode.NO_PERMISSION, remark)
    assert auth.store.acl("User:u1") is None
    assert not [r for r in caplog.records if r.exc_info]


async def test_a_null_user_body_is_one_limited_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    auth = service(tmp_path)
    caplog.set_level(logging.INFO)
    for _ in range(50):
        answer = await call(auth, RequestCode.AUTH_CREATE_USER, {"username": "u3"}, b"null")
        assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR,
                                                "bad UserInfo body: TypeError: not a JSON object")
    lines = [r for r in caplog.records if "AUTH_CREATE_USER" in r.getMessage()]
    assert 1 <= len(lines) <= 10 and not [r for r in lines if r.exc_info]


async def test_two_policies_of_one_type_are_merged_when_the_acl_is_created(tmp_path: Path) -> None:
    auth = service(tmp_path)
    body = {"policies": [rule("Topic:a", "Allow", "Bogus"), rule("Topic:a", "Deny"), rule("Topic:b", "Allow")]}
    assert (await call(auth, RequestCode.AUTH_CREATE_ACL, {"subject": "User:u1"}, body)).code == ResponseCode.SUCCESS
    acl = auth.store.acl("User:u1")
    assert acl is not None and len(acl.policies) == 1
    assert [(e.resource.key, e.decision) for e in acl.policies[0].entries] == [
        ("Topic:a", Decision.DENY), ("Topic:b", Decision.ALLOW)]
