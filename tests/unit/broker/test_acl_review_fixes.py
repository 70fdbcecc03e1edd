"""ACL 1.0 fixes found in review: the AUTH_* codes are admin-only, an update merges into the account (Apache keeps a
field the request leaves out), the unique-key query flag is signed as Apache 4.9.4+ clients sign it, and an admin
write starts from the file on disk (a hand edit the watch has not loaded yet is kept)."""

from __future__ import annotations

from pathlib import Path

import pytest
from unit.broker.plain_acl_helpers import plain_acl_manager

from mqtools.common.auth.signature import SignedRequest, signature_matches, signature_of
from mqtools.common.security import SessionCredentials
from mqtools.remoting import acl
from mqtools.remoting.bodies import PlainAccessConfig
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.server.broker.acl.manager import PlainPermissionManager
from mqtools.server.broker.acl.plain_acl import PlainAclFile
from mqtools.server.broker.acl.service import AclService

PUBLISHER = SessionCredentials("pub-only-key", "pub-only-secret")
YML = """accounts:
- accessKey: pub-only-key
  secretKey: pub-only-secret
  whiteRemoteAddress: 10.9.9.9
  defaultTopicPerm: PUB
  defaultGroupPerm: SUB
  topicPerms:
  - payroll=DENY
  groupPerms:
  - billing=DENY
"""
PEER = "127.0.0.1:5555"


@pytest.fixture
def manager(tmp_path: Path) -> PlainPermissionManager:
    return plain_acl_manager(tmp_path, YML)


def _signed(code: int, credentials: SessionCredentials = PUBLISHER, **ext: str) -> RemotingCommand:
    cmd = RemotingCommand.request(code, dict(ext))
    acl.sign(cmd, credentials)
    return cmd


def _send(topic: str) -> RemotingCommand:
    return _signed(RequestCode.SEND_MESSAGE_V2, a="pg", b=topic)


AUTH_CODES = [code for code in RequestCode if code.name.startswith("AUTH_")]


@pytest.mark.parametrize("code", AUTH_CODES, ids=lambda c: c.name)
def test_every_acl_2_admin_request_needs_an_acl_1_admin_account(manager: PlainPermissionManager,
                                                                 code: RequestCode) -> None:
    """In a migration window (aclEnable on, 2.0 not enforcing) a publisher must not list or create 2.0 users."""
    assert len(AUTH_CODES) == 10
    reason = manager.refusal(_signed(code, username="rocketmq"), PEER)
    assert reason == f"request code {int(code)} needs an admin account; accessKey=pub-only-key is not admin"


async def _update(manager: PlainPermissionManager, ext: dict[str, str]) -> RemotingCommand:
    service = AclService(manager, lambda: ("c", "b", "a"))
    return await service.update_account(None, RemotingCommand.request(  # type: ignore[arg-type]
        RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, ext))


async def test_an_update_keeps_every_field_its_header_leaves_out(manager: PlainPermissionManager) -> None:
    assert "no PUB permission on topic payroll" in manager.refusal(_send("payroll"), PEER)
    # what Java's `updateAclConfig -a pub-only-key -i PUB|SUB` sends: no secret, lists or white address
    answer = await _update(manager, {"accessKey": "pub-only-key", "secretKey": "", "defaultTopicPerm": "PUB|SUB",
                                     "admin": "false"})
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    assert "no PUB permission on topic payroll" in manager.refusal(_send("payroll"), PEER)
    kept = PlainAclFile.parse(manager.path.read_text()).account("pub-only-key")
    assert kept == PlainAccessConfig("pub-only-key", "pub-only-secret", "10.9.9.9", False, "PUB|SUB", "SUB",
                                     ["payroll=DENY"], ["billing=DENY"])


async def test_an_explicit_empty_list_or_white_address_clears_it(manager: PlainPermissionManager) -> None:
    answer = await _update(manager, {"accessKey": "pub-only-key", "secretKey": "", "admin": "false",
                                     "topicPerms": "", "whiteRemoteAddress": ""})
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    assert manager.refusal(_send("payroll"), PEER) is None
    account = manager.file.account("pub-only-key")
    assert account is not None
    assert (account.topic_perms, account.group_perms, account.white_remote_address) == ([], ["billing=DENY"], None)


async def test_a_new_account_still_needs_a_secret(manager: PlainPermissionManager) -> None:
    answer = await _update(manager, {"accessKey": "newcomer-key", "secretKey": "", "admin": "false"})
    assert answer.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
    assert answer.remark == "the secretKey of newcomer-key must be longer than 6 characters"


def test_the_tool_sends_a_list_it_was_asked_to_clear() -> None:
    """mq's `acl update --topic-perm ''` (a list of one blank item) sends an empty topicPerms, which clears it;
    a list not given (empty) is left out, which keeps it."""
    cleared = PlainAccessConfig("pub-only-key", "", "", topic_perms=[""], group_perms=[]).to_ext()
    assert cleared["topicPerms"] == "" and cleared["whiteRemoteAddress"] == ""
    assert "groupPerms" not in cleared
    assert "whiteRemoteAddress" not in PlainAccessConfig("pub-only-key", "").to_ext()


QUERY = {"topic": "T1", "key": "C0A8", "maxNum": "32", "beginTimestamp": "0", "endTimestamp": "9",
         "_UNIQUE_KEY_QUERY": "true"}


def test_the_unique_key_query_flag_is_signed_as_apaches_clients_sign_it() -> None:
    cmd = RemotingCommand.request(RequestCode.QUERY_MESSAGE, dict(QUERY))
    cmd.version = 407
    acl.sign(cmd, PUBLISHER)
    content = "".join(v for k, v in sorted(cmd.ext_fields.items()) if k != "Signature").encode()
    assert cmd.ext_fields["Signature"] == signature_of(content, PUBLISHER.secret_key)  # AclClientRPCHook's
    assert signature_matches(SignedRequest.of(cmd.ext_fields, None, cmd.version), PUBLISHER.secret_key)
    assert acl.verify(cmd, PUBLISHER.secret_key)
    cmd.ext_fields["_UNIQUE_KEY_QUERY"] = "false"  # a relay flipping the flag
    assert not acl.verify(cmd, PUBLISHER.secret_key)


def test_clients_of_4_9_3_and_older_leave_the_flag_out() -> None:
    ext = {**QUERY, "AccessKey": PUBLISHER.access_key}
    unsigned_flag = "".join(v for k, v in sorted(ext.items()) if k != "_UNIQUE_KEY_QUERY").encode()
    cmd = RemotingCommand.request(RequestCode.QUERY_MESSAGE,
                                  {**ext, "Signature": signature_of(unsigned_flag, PUBLISHER.secret_key)})
    cmd.version = 399
    assert acl.verify(cmd, PUBLISHER.secret_key)
    cmd.version = 400
    assert not acl.verify(cmd, PUBLISHER.secret_key)


BOB = """- accessKey: bob-key-1
  secretKey: bob-secret
  admin: true
"""


async def test_an_admin_write_keeps_a_hand_edit_the_watch_has_not_loaded(manager: PlainPermissionManager) -> None:
    manager.path.write_text(YML + BOB)  # the operator adds bob; no poll has seen it yet
    await manager.update_account(PlainAccessConfig("carol-key", "carol-secret"))
    on_disk = PlainAclFile.parse(manager.path.read_text())
    assert [a.access_key for a in on_disk.accounts] == ["pub-only-key", "bob-key-1", "carol-key"]
    assert sorted(manager.rules.accounts) == ["bob-key-1", "carol-key", "pub-only-key"]
    assert await manager.delete_account("bob-key-1")


async def test_an_admin_write_refuses_a_file_that_does_not_parse(manager: PlainPermissionManager) -> None:
    broken = YML + "- accessKey: [unclosed\n"
    manager.path.write_text(broken)
    answer = await _update(manager, {"accessKey": "carol-key", "secretKey": "carol-secret", "admin": "false"})
    assert answer.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
    assert answer.remark == (f"{manager.path} is not a valid ACL file (not valid YAML at line 12); "
                             "fix it before changing accounts")
    assert manager.path.read_text() == broken
    assert sorted(manager.rules.accounts) == ["pub-only-key"]


@pytest.mark.parametrize("args", [
    ["admin", "acl", "update", "pub-only-key", "-b", "127.0.0.1:10911", "--topic-perm", "", "--white-addr", ""],
    ["admin", "updateAclConfig", "-a", "pub-only-key", "-b", "127.0.0.1:10911", "-t", "", "-w", ""],
], ids=["mq", "mqadmin"])
def test_both_dialects_send_a_list_given_empty_as_empty(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> None:
    from typer.testing import CliRunner

    from mqtools.cli.admin import acl as acl_cli
    from mqtools.cli.admin.mqadmin import acl as mqadmin_acl
    from mqtools.cli.main import app

    sent: list[dict[str, str]] = []

    def capture(_at: object, _timeout: object, account: PlainAccessConfig, _where: object) -> list[str]:
        sent.append(account.to_ext())
        return ["127.0.0.1:10911"]
    monkeypatch.setattr(acl_cli, "apply_update", capture)
    monkeypatch.setattr(mqadmin_acl, "apply_update", capture)
    result = CliRunner().invoke(app, args, input="pub-only-secret\n", prog_name="mq")
    assert result.exit_code == 0, result.output
    assert sent[0]["topicPerms"] == "" and sent[0]["whiteRemoteAddress"] == ""
    assert "groupPerms" not in sent[0]
