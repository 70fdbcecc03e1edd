"""ACL 2.0 decisions (sans-IO): resources and wildcards, the most specific entry deciding, Deny over
Allow, Custom before Default, source IPs, Super users, and authentication of a signed request."""

from __future__ import annotations

import pytest

from mqtools.common.auth.model import (
    Acl,
    Action,
    Decision,
    Policy,
    PolicyEntry,
    PolicyType,
    Resource,
    ResourcePattern,
    ResourceType,
    User,
    UserStatus,
    UserType,
)
from mqtools.common.auth.policy import (
    AccessRequest,
    AuthError,
    authenticate,
    authorize,
    matching_entry,
)
from mqtools.common.auth.signature import SignedRequest, signature_of

APP = User("app", "pw", UserType.NORMAL, UserStatus.ENABLE)
ROOT = User("root", "rootpw", UserType.SUPER, UserStatus.ENABLE)


def entry(resource: str, actions: str, decision: str = "Allow", ips: list[str] | None = None) -> PolicyEntry:
    parsed = Resource.parse(resource)
    assert parsed is not None
    return PolicyEntry(parsed, [Action.by_name(a) for a in actions.split(",")], ips, Decision.by_name(decision))


def acl(*entries: PolicyEntry, default: tuple[PolicyEntry, ...] = ()) -> Acl:
    policies = [Policy(PolicyType.CUSTOM, list(entries))] if entries else []
    if default:
        policies.append(Policy(PolicyType.DEFAULT, list(default)))
    return Acl("User:app", policies)


def ask(rules: Acl, resource: Resource, *actions: Action, ip: str = "10.0.0.7", user: User = APP) -> str | None:
    """None when allowed, else the refusal's remark."""
    try:
        authorize(AccessRequest(user.username, resource, actions, ip), {user.username: user}.get,
                  {rules.subject: rules}.get)
    except AuthError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize(("key", "resource", "pattern", "name"), [
    ("*", "*", ResourcePattern.ANY, None),
    ("Topic:*", "Topic:*", ResourcePattern.ANY, None),
    ("Topic:ord*", "Topic:ord*", ResourcePattern.PREFIXED, "ord"),
    ("group:billing", "Group:billing", ResourcePattern.LITERAL, "billing"),
])
def test_resource_keys_parse_and_print_as_apache_writes_them(key: str, resource: str, pattern: ResourcePattern,
                                                             name: str | None) -> None:
    parsed = Resource.parse(key)
    assert parsed is not None and (parsed.key, parsed.pattern, parsed.name) == (resource, pattern, name)


def test_unknown_or_blank_resource_keys_are_none() -> None:
    assert Resource.parse("Queue:x") is None and Resource.parse(" ") is None and Resource.parse(None) is None


def test_wildcards_match_by_type_and_prefix() -> None:
    orders = Resource.topic("orders")
    assert Resource.parse("*").matches(orders)  # type: ignore[union-attr]
    assert Resource.parse("Topic:*").matches(orders)  # type: ignore[union-attr]
    assert Resource.parse("Topic:ord*").matches(orders)  # type: ignore[union-attr]
    assert not Resource.parse("Topic:orx*").matches(orders)  # type: ignore[union-attr]
    assert not Resource.parse("Group:*").matches(orders)  # type: ignore[union-attr]
    assert not Resource.parse("Topic:order").matches(orders)  # type: ignore[union-attr]


def test_a_retry_topic_names_its_group() -> None:
    assert Resource.group("%RETRY%billing") == Resource(ResourceType.GROUP, "billing", ResourcePattern.LITERAL)


def test_allow_needs_a_matching_action() -> None:
    rules = acl(entry("Topic:orders", "Pub"))
    assert ask(rules, Resource.topic("orders"), Action.PUB) is None
    assert ask(rules, Resource.topic("orders"), Action.SUB) == (
        "User:app has no permission to access Topic:orders from 10.0.0.7, no matched policies.")
    assert ask(acl(entry("Topic:orders", "All")), Resource.topic("orders"), Action.DELETE) is None
    # any one of the requested actions is enough (a route query asks Pub, Sub or Get)
    assert ask(rules, Resource.topic("orders"), Action.SUB, Action.PUB) is None


def test_a_narrow_deny_beats_a_broad_allow_and_a_narrow_allow_a_broad_deny() -> None:
    rules = acl(entry("*", "All"), entry("Topic:*", "Pub"), entry("Topic:test*", "Pub"),
                entry("Topic:test_*", "Pub", "Deny"), entry("Topic:test_001", "Pub", "Deny"),
                entry("Topic:test_ok", "Pub"))
    assert ask(rules, Resource.topic("test_001"), Action.PUB).endswith("the decision is deny.")  # type: ignore[union-attr]
    assert ask(rules, Resource.topic("test_002"), Action.PUB).endswith("the decision is deny.")  # type: ignore[union-attr]
    assert ask(rules, Resource.topic("test_ok"), Action.PUB) is None  # literal Allow inside the prefix Deny
    assert ask(rules, Resource.topic("testing"), Action.PUB) is None  # Topic:test* Allow
    assert ask(rules, Resource.group("g"), Action.SUB) is None  # only `*` matches


def test_the_longer_prefix_decides() -> None:
    rules = acl(entry("Topic:a*", "Pub", "Deny"), entry("Topic:ab*", "Pub"))
    assert ask(rules, Resource.topic("abc"), Action.PUB) is None
    assert ask(rules, Resource.topic("ac"), Action.PUB) is not None


def test_deny_wins_between_entries_of_equal_specificity() -> None:
    allow, deny = entry("Topic:*", "Pub"), entry("Topic:*", "Pub", "Deny")
    rules = Acl("User:app", [Policy(PolicyType.CUSTOM, [allow, deny])])
    assert matching_entry(rules, AccessRequest("app", Resource.topic("x"), (Action.PUB,), None)) is deny
    rules = Acl("User:app", [Policy(PolicyType.CUSTOM, [deny, allow])])
    assert matching_entry(rules, AccessRequest("app", Resource.topic("x"), (Action.PUB,), None)) is deny


def test_the_default_policy_applies_only_where_no_custom_entry_matches() -> None:
    rules = acl(entry("Topic:orders", "Pub"), default=(entry("Topic:*", "All", "Deny"),))
    assert ask(rules, Resource.topic("orders"), Action.PUB) is None
    assert ask(rules, Resource.topic("other"), Action.PUB).endswith("the decision is deny.")  # type: ignore[union-attr]


def test_source_ips_narrow_a_rule() -> None:
    rules = acl(entry("Topic:orders", "Pub", ips=["192.168.0.0/24", "10.1.2.3"]))
    assert ask(rules, Resource.topic("orders"), Action.PUB, ip="192.168.0.77") is None
    assert ask(rules, Resource.topic("orders"), Action.PUB, ip="10.1.2.3") is None
    assert ask(rules, Resource.topic("orders"), Action.PUB, ip="192.168.1.1") == (
        "User:app has no permission to access Topic:orders from 192.168.1.1, no matched policies.")
    assert ask(rules, Resource.topic("orders"), Action.PUB, ip="::1") is not None
    deny_remote = acl(entry("Topic:*", "All"), entry("Topic:orders", "Pub", "Deny", ["10.0.0.0/8"]))
    assert ask(deny_remote, Resource.topic("orders"), Action.PUB, ip="10.9.9.9") is not None
    assert ask(deny_remote, Resource.topic("orders"), Action.PUB, ip="127.0.0.1") is None


def test_a_super_user_needs_no_rule_and_a_user_without_acl_is_refused() -> None:
    assert ask(Acl("User:root", []), Resource.topic("x"), Action.PUB, user=ROOT) is None
    assert ask(Acl("User:other", []), Resource.topic("x"), Action.PUB) == (
        "User:app has no permission to access Topic:x from 10.0.0.7, no matched policies.")
    with pytest.raises(AuthError, match="User:ghost not found."):
        authorize(AccessRequest("ghost", Resource.topic("x"), (Action.PUB,), None), {}.get, {}.get)
    with pytest.raises(AuthError, match="Authorization failed"):
        authorize(AccessRequest(None, Resource.topic("x"), (Action.PUB,), None), {}.get, {}.get)


def signed(ext: dict[str, str], body: bytes, password: str, version: int = 500) -> SignedRequest:
    unsigned = SignedRequest.of(ext, body, version)
    return SignedRequest.of({**ext, "Signature": signature_of(unsigned.content, password)}, body, version)


def test_authentication_checks_user_status_and_signature() -> None:
    ext = {"AccessKey": "app", "topic": "orders", "b": "x"}
    good = signed(ext, b"body", "pw")
    authenticate(good, APP)
    with pytest.raises(AuthError, match=r"^check signature failed\.$"):
        authenticate(signed(ext, b"body", "other"), APP)
    with pytest.raises(AuthError, match=r"^check signature failed\.$"):  # the body is signed
        authenticate(SignedRequest(good.username, good.signature, good.content + b"!"), APP)
    with pytest.raises(AuthError, match=r"^User:app is disabled\.$"):
        authenticate(good, User("app", "pw", UserType.NORMAL, UserStatus.DISABLE))
    with pytest.raises(AuthError, match=r"^User:app is not found\.$"):
        authenticate(good, None)
    with pytest.raises(AuthError, match=r"^username cannot be null\.$"):
        authenticate(SignedRequest.of({"topic": "orders"}, b"", 500), APP)
    with pytest.raises(AuthError, match=r"^check signature failed\.$"):
        authenticate(SignedRequest.of(ext, b"body", 500), APP)  # no Signature at all


def test_the_signature_is_the_acl_1_hmac_and_old_clients_skip_the_query_flag() -> None:
    from mqtools.common.security import SessionCredentials
    from mqtools.remoting import acl as v1
    from mqtools.remoting.command import RemotingCommand

    cmd = RemotingCommand.request(10, {"topic": "orders", "producerGroup": "pg"}, b"payload")
    v1.sign(cmd, SessionCredentials("app", "pw"))
    authenticate(SignedRequest.of(cmd.ext_fields, cmd.body, cmd.version), APP)  # what mq's clients send passes
    ext = {"AccessKey": "app", "_UNIQUE_KEY_QUERY": "true", "topic": "t"}
    assert b"true" not in SignedRequest.of(ext, None, 399).content
    assert b"true" in SignedRequest.of(ext, None, 400).content
