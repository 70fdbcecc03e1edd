"""ACL 1.0 rules without a broker: address patterns, permission resolution, the file and its reloads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from unit.broker.plain_acl_helpers import plain_acl_manager

from mqtools.common.security import SessionCredentials
from mqtools.remoting import acl
from mqtools.remoting.bodies import (
    ConsumerData,
    HeartbeatData,
    PlainAccessConfig,
    SubscriptionData,
    comma_list,
)
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.server.broker.acl import addresses, permission
from mqtools.server.broker.acl.manager import PlainPermissionManager, default_acl_path
from mqtools.server.broker.acl.plain_acl import PlainAclFile


@pytest.mark.parametrize(("pattern", "address", "matches"), [
    ("", "10.0.0.1", False),
    ("*", "10.0.0.1", True),
    ("*.*.*.*", "8.8.8.8", True),
    ("192.168.0.1", "192.168.0.1", True),
    ("192.168.0.1", "192.168.0.2", False),
    ("192.168.0.{1,2}", "192.168.0.2", True),
    ("192.168.0.{1,2}", "192.168.0.3", False),
    ("10.0.0.1,10.0.0.5", "10.0.0.5", True),
    ("192.168.1.1-10", "192.168.1.10", True),
    ("192.168.1.1-10", "192.168.1.11", False),
    ("192.168.1.1-10", "192.168.2.5", False),
    ("192.168.*.*", "192.168.200.7", True),
    ("192.168.*.*", "192.169.0.1", False),
    ("10.*.3.*", "10.9.3.1", True),
    ("::1", "0:0::1", True),
])
def test_address_patterns(pattern: str, address: str, matches: bool) -> None:
    assert addresses.matcher(pattern)(address) is matches


@pytest.mark.parametrize("pattern", ["192.168.1.300", "192.168.1.10-1", "a.b.c.d", "1.2.3.{x}", "1:2:*", "192.168.*"])
def test_bad_address_patterns_are_refused_when_read(pattern: str) -> None:
    with pytest.raises(ValueError):
        addresses.matcher(pattern)


def test_host_of_strips_the_port() -> None:
    assert addresses.host_of("127.0.0.1:4000") == "127.0.0.1"


def _req(code: int, body: bytes | None = None, **ext: str) -> RemotingCommand:
    return RemotingCommand.request(code, dict(ext), body)


@pytest.mark.parametrize(("request_", "expected"), [
    (_req(RequestCode.SEND_MESSAGE_V2, a="PG", b="T1"), {"T1": permission.PUB}),
    (_req(RequestCode.SEND_BATCH_MESSAGE, a="PG", b="T1"), {"T1": permission.PUB}),
    (_req(RequestCode.SEND_MESSAGE_V2, a="G", b="%RETRY%G"), {"%RETRY%G": permission.SUB}),
    (_req(RequestCode.SEND_MESSAGE, producerGroup="PG", topic="T1"), {"T1": permission.PUB}),
    (_req(RequestCode.PULL_MESSAGE, topic="T1", consumerGroup="G"), {"T1": permission.SUB, "%RETRY%G": permission.SUB}),
    (_req(RequestCode.UPDATE_CONSUMER_OFFSET, topic="T1", consumerGroup="G"),
     {"T1": permission.SUB, "%RETRY%G": permission.SUB}),
    (_req(RequestCode.CONSUMER_SEND_MSG_BACK, group="G", originTopic="T1"), {"%RETRY%G": permission.SUB}),
    (_req(RequestCode.QUERY_MESSAGE, topic="T1"), {"T1": permission.SUB}),
    (_req(RequestCode.UNREGISTER_CLIENT, consumerGroup="G"), {"%RETRY%G": permission.SUB}),
    (_req(RequestCode.GET_CONSUMER_LIST_BY_GROUP, consumerGroup="G"), {"%RETRY%G": permission.SUB}),
    (_req(RequestCode.UPDATE_AND_CREATE_TOPIC, topic="T1"), {}),
    (_req(RequestCode.HEART_BEAT, HeartbeatData("c1", [], [ConsumerData("G", subscription_data_set=[
        SubscriptionData("T1")])]).to_json()), {"%RETRY%G": permission.SUB, "T1": permission.SUB}),
])
def test_resources_each_request_needs(request_: RemotingCommand, expected: dict[str, int]) -> None:
    assert permission.needed(request_) == expected


def test_permission_check_and_names() -> None:
    assert permission.check(permission.PUB, permission.parse_perm("PUB|SUB"))
    assert not permission.check(permission.PUB, permission.parse_perm("SUB"))
    assert not permission.check(permission.SUB, permission.parse_perm("DENY"))
    assert permission.parse_perm("nonsense") == permission.DENY
    assert permission.perm_name(permission.PUB | permission.SUB) == "PUB|SUB"


YML = """
globalWhiteRemoteAddresses:
- 10.10.103.*
accounts:
- accessKey: RocketMQ
  secretKey: "12345678"
  whiteRemoteAddress:
  admin: false
  defaultTopicPerm: DENY
  defaultGroupPerm: SUB
  topicPerms:
  - topicA=DENY
  - topicB=PUB|SUB
  - topicC=SUB
  groupPerms:
  - groupA=DENY
  - groupB=PUB|SUB
- accessKey: rocketmq2
  secretKey: "12345678"
  whiteRemoteAddress: 192.168.1.*
  admin: true
"""


def _signed(code: int, secret: str = "12345678", key: str = "RocketMQ", **ext: str) -> RemotingCommand:
    cmd = _req(code, b"body", **ext)
    acl.sign(cmd, SessionCredentials(key, secret))
    return cmd


@pytest.fixture
def manager(tmp_path: Path) -> PlainPermissionManager:
    return plain_acl_manager(tmp_path, YML)


def test_decisions_follow_the_file(manager: PlainPermissionManager) -> None:
    peer = "127.0.0.1:5000"
    send = RequestCode.SEND_MESSAGE_V2
    assert manager.refusal(_signed(send, a="PG", b="topicB"), peer) is None
    assert "no PUB permission on topic topicA" in manager.refusal(_signed(send, a="PG", b="topicA"), peer)
    assert "topic other" in manager.refusal(_signed(send, a="PG", b="other"), peer)  # defaultTopicPerm DENY
    assert manager.refusal(_signed(send, a="PG", b="RMQ_SYS_TRACE_TOPIC"), peer) is None  # traces always pass
    pull = RequestCode.PULL_MESSAGE
    assert manager.refusal(_signed(pull, topic="topicC", consumerGroup="groupB"), peer) is None
    assert "group groupA" in manager.refusal(_signed(pull, topic="topicC", consumerGroup="groupA"), peer)
    assert "admin" in manager.refusal(_signed(RequestCode.UPDATE_AND_CREATE_TOPIC, topic="x"), peer)
    assert "signature" in manager.refusal(_signed(send, secret="wrong-secret", a="PG", b="topicB"), peer)
    assert "no ACL account" in manager.refusal(_signed(send, key="nobody1", a="PG", b="topicB"), peer)
    assert "no AccessKey" in manager.refusal(_req(send, a="PG", b="topicB"), peer)
    # white addresses: global passes everything, an account's own passes that account without a signature
    assert manager.refusal(_req(RequestCode.UPDATE_AND_CREATE_TOPIC, topic="x"), "10.10.103.7:1") is None
    unsigned = _req(send, a="PG", b="topicA", AccessKey="rocketmq2")
    assert manager.refusal(unsigned, "192.168.1.20:1") is None
    assert "signature" in manager.refusal(unsigned, "192.168.2.20:1")


def test_admin_without_resource_rules_passes_everything(manager: PlainPermissionManager) -> None:
    cmd = _signed(RequestCode.DELETE_TOPIC_IN_BROKER, key="rocketmq2", topic="topicA")
    assert manager.refusal(cmd, "127.0.0.1:1") is None


def test_no_secret_in_refusals_or_errors(manager: PlainPermissionManager) -> None:
    cmd = _signed(RequestCode.SEND_MESSAGE_V2, secret="wrong-secret", a="PG", b="topicB")
    assert "12345678" not in manager.refusal(cmd, "127.0.0.1:1")
    with pytest.raises(ValueError) as info:
        PlainAclFile.parse("accounts:\n- accessKey: shortone\n  secretKey: s3cr\n")
    assert "s3cr" not in str(info.value)


def test_reload_on_change_keeps_the_last_good_rules(manager: PlainPermissionManager) -> None:
    assert not manager.reload_if_changed()
    manager.path.write_text(YML.replace("topicA=DENY", "topicA=PUB"))
    os.utime(manager.path, ns=(1, 1))  # a different mtime even within one clock tick
    assert not manager.reload_if_changed()  # first sight of a change: the writer may not be done
    assert manager.reload_if_changed()
    cmd = _signed(RequestCode.SEND_MESSAGE_V2, a="PG", b="topicA")
    assert manager.refusal(cmd, "127.0.0.1:1") is None
    manager.path.write_text("accounts: [ {accessKey: x")  # broken YAML: previous rules stay
    assert not manager.reload_if_changed()
    assert not manager.reload_if_changed()
    assert manager.refusal(cmd, "127.0.0.1:1") is None


async def test_admin_updates_rewrite_the_file(manager: PlainPermissionManager) -> None:
    await manager.update_account(PlainAccessConfig("newuser1", "newsecret1", topic_perms=["t9=PUB"]))
    await manager.update_global_white(["127.0.0.*"])
    assert await manager.delete_account("RocketMQ")
    assert not await manager.delete_account("RocketMQ")
    reread = PlainAclFile.parse(manager.path.read_text())
    assert [a.access_key for a in reread.accounts] == ["rocketmq2", "newuser1"]
    assert reread.global_white_remote_addresses == ["127.0.0.*"]
    assert reread.data_version.counter == 3
    with pytest.raises(ValueError):
        await manager.update_account(PlainAccessConfig("newuser1", "short"))


def test_file_location() -> None:
    assert default_acl_path("/x/acl.yml", {}) == Path("/x/acl.yml")
    assert default_acl_path("", {"ROCKETMQ_HOME": "/opt/rmq"}) == Path("/opt/rmq/conf/plain_acl.yml")
    with pytest.raises(ValueError):
        default_acl_path("", {})


@pytest.mark.parametrize("text", [
    "dataVersion: [{timestamp: {a: 1}}]",
    "accounts: [{accessKey: abcdefgh, secretKey: abcdefgh, topicPerms: 5}]",
    "accounts: [{accessKey: abcdefgh, secretKey: abcdefgh, topicPerms: [t=MAYBE]}]",
    "accounts: [{accessKey: abcdefgh, secretKey: abcdefgh, whiteRemoteAddress: 1.2.3.999}]",
    "accounts: [{accessKey: abcdefgh, secretKey: abcdefgh}, {accessKey: abcdefgh, secretKey: abcdefgh}]",
    "globalWhiteRemoteAddresses: 10.0.0.1",
    "- just a list",
])
def test_malformed_files_are_refused_as_one_error(text: str) -> None:
    with pytest.raises(ValueError):
        PlainAclFile.parse(text)


def test_account_header_round_trips_between_tool_and_broker() -> None:
    account = PlainAccessConfig("app1", "secret-1", "10.0.0.*", True, "PUB", "SUB", ["t1=PUB", "t2=DENY"], ["g1=SUB"])
    ext = account.to_ext()
    assert ext["topicPerms"] == "t1=PUB,t2=DENY" and ext["admin"] == "true"
    assert PlainAccessConfig.from_ext(ext) == account
    bare = PlainAccessConfig("app2", "secret-2")
    assert set(bare.to_ext()) == {"accessKey", "secretKey", "admin"}
    assert PlainAccessConfig.from_ext(bare.to_ext()) == bare
    assert comma_list(" a, b,,c ") == ["a", "b", "c"] and comma_list(None) == []
