"""Admin-side fixes found in review: the admin's own sends sign and use TLS as its session does, `acl2 delete`
refuses a resource or policy type RocketMQ does not know before anything is sent, and a cluster-wide user or ACL
change says per broker whether it applied (exit 4 when only some did)."""

from __future__ import annotations

import pytest
from support.documents import check
from typer.testing import CliRunner

from mqtools.cli.main import app
from mqtools.client.admin import MQAdmin
from mqtools.client.admin.base import AdminBase
from mqtools.client.admin.models.auth import AuthUser, auth_change_view
from mqtools.client.errors import ConnectFailedError, MQBrokerError, MQClientError, RequestTimeoutError
from mqtools.client.producer import Producer
from mqtools.client.types import SendResult, SendStatus
from mqtools.common.exitcodes import EXIT_PARTIAL, EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE
from mqtools.common.message import Message
from mqtools.common.presentation import Unreachable
from mqtools.common.security import ClientSecurity, SessionCredentials, TlsClientOptions
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import ResponseCode
from mqtools.remoting.command import RemotingCommand

SECURITY = ClientSecurity(SessionCredentials("admin-key", "admin-secret"), TlsClientOptions())


async def test_admin_sends_sign_and_encrypt_as_the_session_does(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[ClientSecurity] = []

    async def send(self: Producer, msg: Message, **_kw: object) -> SendResult:
        seen.append(self.instance.remoting.security)
        return SendResult(SendStatus.SEND_OK, "id", "offset-id", MessageQueue(msg.topic, "b", 0), 0)
    monkeypatch.setattr(Producer, "send", send)
    async with MQAdmin("127.0.0.1:1", security=SECURITY) as admin:
        await admin.messages.send_message("T1", b"x")  # `mq admin msg send`, mqadmin sendMessage
        await admin.messages.send_rt(["broker-a"], 1, 8)  # clusterRT
    assert seen == [SECURITY, SECURITY]


@pytest.mark.parametrize(("args", "message"), [
    (["acl2", "delete", "app1", "-r", "Topics:payroll"], "unknown resource Topics:payroll"),
    (["acl2", "delete", "app1", "-r", "Topic:payroll", "--policy-type", "Defualt"],
     "--policy-type must be one of Custom, Default"),
    (["deleteAcl", "-s", "User:app1", "-r", "Topics:payroll"], "unknown resource Topics:payroll"),
])
def test_acl2_delete_refuses_what_rocketmq_does_not_know(args: list[str], message: str) -> None:
    """A mistyped resource reached the broker as null and deleted every rule of the subject; a mistyped policy
    type became Custom. Neither is sent: one line, exit 2."""
    result = CliRunner().invoke(app, ["admin", *args, "-b", "127.0.0.1:1", "-n", "127.0.0.1:1"],
                                prog_name="mq")
    assert result.exit_code == EXIT_USAGE, result.output
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output

A, B, C = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.3:10911"
REFUSED = MQBrokerError(ResponseCode.NO_PERMISSION, "The user is existed")
HUNG = RequestTimeoutError(f"wait response on {C} timed out")


@pytest.fixture
def outcomes(monkeypatch: pytest.MonkeyPatch) -> dict[str, Exception | None]:
    """Each broker's answer to a write (None: applied), for a cluster of the brokers named in it."""
    table: dict[str, Exception | None] = {}

    async def every_broker(_self: object, cluster: str | None, broker_addr: str | None) -> list[str]:
        return [broker_addr] if broker_addr else list(table)

    async def call(_self: object, addr: str, code: int, *_args: object, **_kw: object) -> RemotingCommand:
        failure = table[addr]
        if failure is not None:
            raise failure
        return RemotingCommand.request(code).response(ResponseCode.SUCCESS)
    monkeypatch.setattr(AdminBase, "every_broker", every_broker)
    monkeypatch.setattr(AdminBase, "call", call)
    return table


async def test_a_cluster_write_says_where_it_applied_and_where_not(outcomes: dict[str, Exception | None]) -> None:
    outcomes.update({A: None, B: REFUSED, C: HUNG})
    async with MQAdmin("127.0.0.1:1") as admin:
        change = await admin.auth.create_user(AuthUser("u1", "pw-123456789"), cluster="C1")
        assert change.brokers == [A]
        assert change.missed == [
            Unreachable(None, B, "refused, not applied: The user is existed (CODE 16 NO_PERMISSION)"),
            Unreachable(None, C, "no answer, not known to have applied: timed out")]
        view = auth_change_view([change])
        doc = check(view)
        assert doc["partial"] is True and doc["changes"][0]["brokers"] == [A]
        assert [u["addr"] for u in doc["unreachable"]] == [B, C]


@pytest.mark.parametrize(("answers", "error", "exit_code"), [
    ({B: REFUSED, C: HUNG}, (f"{B}: refused, not applied: The user is existed (CODE 16 NO_PERMISSION); {C}: no "
                            "answer, not known to have applied: timed out (applied on no broker)"), EXIT_REFUSED),
    ({B: REFUSED, A: REFUSED}, "applied on no broker", EXIT_REFUSED),
    ({C: HUNG, A: ConnectFailedError(f"connect to {A} failed", "connection refused")},
     f"{A}: no answer, not applied: connection refused (applied on no broker)", EXIT_UNREACHABLE),
])
async def test_a_write_applied_nowhere_fails_naming_each_broker(outcomes: dict[str, Exception | None],
                                                                answers: dict[str, Exception], error: str,
                                                                exit_code: int) -> None:
    outcomes.update(answers)
    async with MQAdmin("127.0.0.1:1") as admin:
        with pytest.raises(MQClientError) as raised:
            await admin.auth.delete_acl("User:u1", cluster="C1")
    assert error in str(raised.value) and raised.value.exit_code == exit_code


@pytest.mark.parametrize("args", [["user", "delete", "u1", "-c", "C1"], ["deleteUser", "-u", "u1", "-c", "C1"]],
                         ids=["mq", "mqadmin"])
def test_a_partial_cluster_write_exits_4_naming_where_it_applied(outcomes: dict[str, Exception | None],
                                                                 args: list[str]) -> None:
    outcomes.update({A: None, B: REFUSED})
    result = CliRunner().invoke(app, ["admin", *args, "-n", "127.0.0.1:1"], prog_name="mq")
    assert result.exit_code == EXIT_PARTIAL, result.output
    lines = result.output.splitlines()
    assert [line for line in lines if A in line and "refused" not in line]
    assert [line for line in lines if B in line and "refused, not applied: The user is existed" in line]
