"""ACL 1.0 end to end: one ACL-enabled name server + broker (module-scoped), a matrix of accounts
against the operations that matter, a live edit of plain_acl.yml, and no secret in any log line.

Every refused request is checked to have changed nothing, through the admin account.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.adminsupport import json_of, mq_here, one_line_error
from support.clientsupport import Cluster, broker_cluster, until

from mqtools.common.javaprops import parse_properties
from mqtools.common.security import ClientSecurity, SessionCredentials
from mqtools.remoting import acl
from mqtools.remoting.bodies import TopicConfigSerializeWrapper
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import (
    CreateTopicRequestHeader,
    PullMessageRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueueRequestHeader,
    ResetOffsetRequestHeader,
    SendMessageRequestHeader,
    TopicRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC, GROUP = "acl_t", "acl_g"
ADMIN = SessionCredentials("adminkey1", "adminsecret-XYZZY-1")
SECRETS = ("adminsecret-XYZZY-1", "pubsecret-XYZZY-2", "subsecret-XYZZY-3", "denysecret-XYZZY-4",
           "whitesecret-XYZZY-5")
ACL_YML = f"""
globalWhiteRemoteAddresses: []
accounts:
- accessKey: adminkey1
  secretKey: {SECRETS[0]}
  admin: true
- accessKey: pubonly1
  secretKey: {SECRETS[1]}
  defaultTopicPerm: DENY
  defaultGroupPerm: DENY
  topicPerms: [{TOPIC}=PUB]
- accessKey: subonly1
  secretKey: {SECRETS[2]}
  defaultTopicPerm: DENY
  defaultGroupPerm: DENY
  topicPerms: [{TOPIC}=SUB]
  groupPerms: [{GROUP}=SUB]
- accessKey: denied01
  secretKey: {SECRETS[3]}
  defaultTopicPerm: PUB|SUB
  defaultGroupPerm: SUB
  topicPerms: [{TOPIC}=DENY]
- accessKey: whiteacct1
  secretKey: {SECRETS[4]}
  whiteRemoteAddress: 127.0.0.1
"""


@dataclass
class AclCluster:
    cluster: Cluster
    acl_file: Path

    @property
    def broker(self) -> str:
        return self.cluster.broker.addr


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclCluster]:
    work = tmp_path_factory.mktemp("acl")
    acl_file = work / "plain_acl.yml"
    acl_file.write_text(ACL_YML)
    for cluster in broker_cluster(work, ("broker-a",), aclEnable="true", aclFilePath=str(acl_file),
                                  aclWatchIntervalMills="100", autoCreateTopicEnable="false"):
        yield AclCluster(cluster, acl_file)


async def request(addr: str, cmd: RemotingCommand, creds: SessionCredentials | None) -> RemotingCommand:
    client = RemotingClient(security=ClientSecurity(credentials=creds))
    try:
        return await client.invoke(addr, cmd, 5.0)
    finally:
        await client.close()


def admin(addr: str, code: int, ext: dict[str, str] | None = None, body: bytes | None = None
          ) -> Awaitable[RemotingCommand]:
    return request(addr, RemotingCommand.request(code, ext or {}, body), ADMIN)


# ---------------------------------------------------------------- the operations of the matrix

def send_cmd(topic: str = TOPIC, body: bytes = b"acl-body") -> RemotingCommand:
    header = SendMessageRequestHeader("PG_ACL", topic, "TBW102", 4, 0, 0, int(time.time() * 1000), 0, "")
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header.to_v2(), body)


def pull_cmd() -> RemotingCommand:
    header = PullMessageRequestHeader(GROUP, TOPIC, 0, 0, 8, 2, 0, 0, 0, "*", "TAG")
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext())


def commit_cmd() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET,
                                   UpdateConsumerOffsetRequestHeader(GROUP, TOPIC, 0, 1).to_ext())


def create_cmd(row: str) -> RemotingCommand:
    header = CreateTopicRequestHeader(f"acl_new_{row}", "TBW102", 1, 1, 6, "SINGLE_TAG")
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext())


def delete_cmd(row: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, TopicRequestHeader(f"acl_victim_{row}").to_ext())


def config_cmd() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, body=b"shortPollingTimeMills=1200\n")


def reset_cmd() -> RemotingCommand:
    header = ResetOffsetRequestHeader(TOPIC, GROUP, 0, True)
    return RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header.to_ext())


OPS: dict[str, Callable[[str], RemotingCommand]] = {
    "send": lambda _row: send_cmd(), "pull": lambda _row: pull_cmd(), "commit": lambda _row: commit_cmd(),
    "create": create_cmd, "delete": delete_cmd, "config": lambda _row: config_cmd(), "reset": lambda _row: reset_cmd(),
}
ALL = set(OPS)
#: row -> (how the request is made, the operations allowed)
ROWS: dict[str, tuple[str, set[str]]] = {
    "admin": ("adminkey1", ALL),
    "publisher": ("pubonly1", {"send"}),
    "subscriber": ("subonly1", {"pull", "commit"}),
    "denied_topic": ("denied01", set()),
    # the account's own white address passes without a signature (and, as in RocketMQ, without checks)
    "white_address_no_signature": ("whiteacct1:unsigned", ALL),
    "unknown_key": ("nobody999", set()),
    "no_key": ("", set()),
}


def credentials_of(who: str) -> SessionCredentials | None:
    keys = {"adminkey1": 0, "pubonly1": 1, "subonly1": 2, "denied01": 3, "whiteacct1": 4}
    if who in keys:
        return SessionCredentials(who, SECRETS[keys[who]])
    if who == "nobody999":
        return SessionCredentials(who, "whatever-secret")
    return None


async def snapshot(addr: str) -> tuple:
    """What a refused request must not change, read through the admin account."""
    max_offset = await admin(addr, RequestCode.GET_MAX_OFFSET, QueueRequestHeader(TOPIC, 0).to_ext())
    committed = await admin(addr, RequestCode.QUERY_CONSUMER_OFFSET,
                            QueryConsumerOffsetRequestHeader(GROUP, TOPIC, 0).to_ext())
    topics = await admin(addr, RequestCode.GET_ALL_TOPIC_CONFIG)
    config = await admin(addr, RequestCode.GET_BROKER_CONFIG)
    assert max_offset.code == ResponseCode.SUCCESS and topics.code == ResponseCode.SUCCESS
    return (max_offset.ext_fields.get("offset"), committed.code, committed.ext_fields.get("offset"),
            sorted(TopicConfigSerializeWrapper.from_json(topics.body).topic_config_table),
            parse_properties(bytes(config.body).decode()).get("shortPollingTimeMills"))


@pytest.fixture(scope="module")
def prepared(acl_cluster: AclCluster) -> AclCluster:
    """The cluster with the matrix's topics created by the admin account."""
    async def create_all() -> None:
        for topic in [TOPIC] + [f"acl_victim_{row}" for row in ROWS]:
            header = CreateTopicRequestHeader(topic, "TBW102", 1, 1, 6, "SINGLE_TAG")
            answer = await admin(acl_cluster.broker, RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext())
            assert answer.code == ResponseCode.SUCCESS, answer.remark

    asyncio.run(create_all())
    return acl_cluster


@pytest.mark.parametrize("row", list(ROWS))
async def test_matrix(prepared: AclCluster, row: str) -> None:
    who, allowed = ROWS[row]
    addr = prepared.broker
    for op, make in OPS.items():
        cmd = make(row)
        before = await snapshot(addr)
        if who.endswith(":unsigned"):
            cmd.ext_fields[acl.ACCESS_KEY] = who.split(":")[0]
            answer = await request(addr, cmd, None)
        else:
            answer = await request(addr, cmd, credentials_of(who))
        if op in allowed:
            assert answer.code != ResponseCode.NO_PERMISSION, (row, op, answer.remark)
        else:
            assert answer.code == ResponseCode.NO_PERMISSION, (row, op, answer.code, answer.remark)
            assert await snapshot(addr) == before, (row, op)
            assert not any(secret in (answer.remark or "") for secret in SECRETS)


async def test_refusal_names_resource_and_permission(prepared: AclCluster) -> None:
    answer = await request(prepared.broker, send_cmd(), credentials_of("subonly1"))
    assert answer.remark == f"accessKey=subonly1 has no PUB permission on topic {TOPIC}"
    answer = await request(prepared.broker, create_cmd("x"), credentials_of("pubonly1"))
    assert "needs an admin account" in answer.remark
    answer = await request(prepared.broker, send_cmd(), SessionCredentials("pubonly1", "wrong-secret-000"))
    assert answer.remark == "signature check failed for accessKey=pubonly1"


async def test_even_an_admin_cannot_switch_security_off_remotely(prepared: AclCluster) -> None:
    for body in (b"aclEnable=false\n", b"aclFilePath=/tmp/other_acl.yml\n", b"tls.server.certPath=/tmp/x.pem\n"):
        answer = await admin(prepared.broker, RequestCode.UPDATE_BROKER_CONFIG, body=body)
        assert answer.code == ResponseCode.NO_PERMISSION and "black list" in answer.remark, answer.remark
    config = await admin(prepared.broker, RequestCode.GET_BROKER_CONFIG)
    assert parse_properties(bytes(config.body).decode()).get("aclEnable") == "true"
    assert (await request(prepared.broker, send_cmd(), None)).code == ResponseCode.NO_PERMISSION


async def test_tampered_replay_is_refused_and_stores_nothing(prepared: AclCluster) -> None:
    addr = prepared.broker
    signed = send_cmd(body=b"original")
    acl.sign(signed, credentials_of("pubonly1"))
    before = await snapshot(addr)
    tampered = RemotingCommand.request(signed.code, dict(signed.ext_fields), b"tampered")
    answer = await request(addr, tampered, None)  # sent as captured: no new signature
    assert answer.code == ResponseCode.NO_PERMISSION and "signature" in answer.remark
    assert await snapshot(addr) == before
    # RocketMQ 4.x signs no nonce or time: the untouched request replays (documented in docs/compatibility.md)
    replay = RemotingCommand.request(signed.code, dict(signed.ext_fields), b"original")
    assert (await request(addr, replay, None)).code == ResponseCode.SUCCESS


async def test_edit_of_plain_acl_yml_takes_effect_without_restart(prepared: AclCluster) -> None:
    addr = prepared.broker
    assert (await request(addr, send_cmd(), None)).code == ResponseCode.NO_PERMISSION
    prepared.acl_file.write_text(ACL_YML.replace("globalWhiteRemoteAddresses: []",
                                                 "globalWhiteRemoteAddresses: ['127.0.0.*']"))

    async def unsigned_send_ok() -> bool:
        return (await request(addr, send_cmd(), None)).code == ResponseCode.SUCCESS

    try:
        await until(unsigned_send_ok, 10, "the global white address to take effect")
    finally:
        prepared.acl_file.write_text(ACL_YML)

    async def refused_again() -> bool:
        return (await request(addr, send_cmd(), None)).code == ResponseCode.NO_PERMISSION

    await until(refused_again, 10, "the restored file to take effect")


async def test_no_secret_in_the_logs(prepared: AclCluster) -> None:
    await request(prepared.broker, send_cmd(), SessionCredentials("pubonly1", "wrong-secret-000"))
    prepared.acl_file.write_text("accounts: [ {accessKey: broken, secretKey: " + SECRETS[1])  # a bad edit is logged
    try:
        await until(lambda: "not reloaded" in prepared.cluster.broker.output(), 10, "the bad edit to be logged")
    finally:
        prepared.acl_file.write_text(ACL_YML)
    logs = prepared.cluster.broker.output() + prepared.cluster.namesrv.output()
    assert "refused" in logs
    for secret in (*SECRETS, "wrong-secret-000"):
        assert secret not in logs


# ---------------------------------------------------------------- the tools: mq admin acl, mqadmin names, credentials

def admin_env() -> dict[str, str]:
    return {"MQ_ACCESS_KEY": ADMIN.access_key, "MQ_SECRET_KEY": ADMIN.secret_key}


def test_mq_admin_acl_commands(prepared: AclCluster) -> None:
    ns, broker = prepared.cluster.namesrv.addr, prepared.broker
    outputs: list[str] = []

    def run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None):
        result = mq_here("admin", *args, namesrv=ns, stdin=stdin, env=env if env is not None else admin_env())
        outputs.append(result.stdout + result.stderr)
        return result

    new_secret = "newacct-secret-XYZZY-9"
    try:
        done = run("acl", "update", "newacct01", "-b", broker, "--topic-perm", f"{TOPIC}=PUB",
                   "--default-topic-perm", "DENY", stdin=new_secret + "\n")
        assert done.returncode == 0, done.stderr
        listed = json_of(run("acl", "list", "-b", broker, "-o", "json"), "AclConfig")
        accounts = {a["accessKey"]: a for a in listed["brokers"][0]["accounts"]}
        assert accounts["newacct01"]["topicPerms"] == [f"{TOPIC}=PUB"] and accounts["adminkey1"]["admin"] is True
        got = json_of(run("acl", "get", "newacct01", "-b", broker, "-o", "json"), "AclConfig")
        assert [a["accessKey"] for a in got["brokers"][0]["accounts"]] == ["newacct01"]
        # the new account works at once (the broker applied its own write)
        assert asyncio.run(request(broker, send_cmd(), SessionCredentials("newacct01", new_secret))).code == 0
        version = json_of(run("acl", "version", "-b", broker, "-o", "json"), "AclVersion")
        assert version["brokers"][0]["counter"] >= 1
        assert run("clusterAclConfigVersion", "-c", "TestCluster").stdout.startswith("#Cluster Name")
        shown = run("getAclConfig", "-b", broker).stdout
        assert "newacct01" in shown and "****" in shown
        assert run("updateAclConfig", "-a", "newacct02", "-b", broker, "-i", "SUB", stdin=new_secret).returncode == 0
        assert run("deleteAclConfig", "-a", "newacct02", "-b", broker).returncode == 0
        assert run("acl", "delete", "newacct01", "-b", broker).returncode == 0
        one_line_error(run("acl", "get", "newacct01", "-b", broker), 1, "no ACL account newacct01")
        # a publisher may not administer: one line naming what is missing, exit 1
        refused = run("acl", "list", "-b", broker,
                      env={"MQ_ACCESS_KEY": "pubonly1", "MQ_SECRET_KEY": SECRETS[1]})
        one_line_error(refused, 1, "needs an admin account", "NO_PERMISSION")
        assert run("updateGlobalWhiteAddr", "-g", "10.99.99.*", "-b", broker).returncode == 0
        assert json_of(run("acl", "list", "-b", broker, "-o", "json"),
                       "AclConfig")["brokers"][0]["globalWhiteAddrs"] == ["10.99.99.*"]
        one_line_error(run("acl", "update", "shortkey", "-b", broker, stdin="tiny\n"), 1, "longer than 6")
    finally:
        prepared.acl_file.write_text(ACL_YML)
    for text in outputs:
        for secret in (*SECRETS, new_secret, "tiny"):
            assert secret not in text, text


def test_context_credentials_reach_the_tools(prepared: AclCluster, tmp_path: Path) -> None:
    env = {"MQ_CONFIG_DIR": str(tmp_path), "MQ_ACCESS_KEY": "", "MQ_SECRET_KEY": ""}
    ns = prepared.cluster.namesrv.addr
    assert mq_here("context", "add", "acl", "-n", ns, env=env).returncode == 0
    assert mq_here("context", "credentials", "acl", "--access-key", ADMIN.access_key, stdin=ADMIN.secret_key + "\n",
              env=env).returncode == 0
    shown = mq_here("context", "show", env=env)
    assert "accessKey adminkey1, secretKey ****" in shown.stdout and ADMIN.secret_key not in shown.stdout
    listed = mq_here("admin", "acl", "version", "-b", prepared.broker, "-o", "json", env=env)
    assert json_of(listed, "AclVersion")["brokers"][0]["brokerAddr"] == prepared.broker
    assert ADMIN.secret_key not in (tmp_path / "contexts.json").read_text()
    # mq top signs too: the broker answers its runtime questions (refused without credentials)
    top = mq_here("top", "--once", "-o", "json", env=env)
    assert top.returncode == 0, top.stderr
    (row,) = json.loads(top.stdout)["views"]["brokers"]["rows"]
    assert row["version"] == "V4_9_7" and row["status"] == "ok", row
    assert ADMIN.secret_key not in top.stdout + top.stderr
