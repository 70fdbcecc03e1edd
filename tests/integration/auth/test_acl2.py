"""ACL 2.0 end to end: an mq name server and broker started with Apache 5.5's auth properties (module
scoped), managed with `mq admin user|acl2` and the mqadmin names, then mq's own Producer signed as 2.0
users: allowed where a rule allows, refused with NO_PERMISSION and Apache's remark where none does, and
a hostile pass (unsigned, wrong signature, unknown user, a user disabled mid-session, Deny over Allow).
Every refusal is checked to have stored nothing; the broker's output has no traceback and no password.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from support.adminsupport import mq
from support.authprops import AUTH_PROPS, ROOT, ROOT_ENV
from support.clientsupport import Cluster, broker_cluster, until

from mqtools.client.errors import MQClientError, NoPermissionError
from mqtools.client.producer import Producer
from mqtools.common.message import Message
from mqtools.common.security import ClientSecurity, SessionCredentials
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import SendMessageRequestHeader

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

APP = SessionCredentials("app1", "app-XYZZY-pass1")
OTHER = SessionCredentials("app2", "app-XYZZY-pass2")
PASSWORDS = (ROOT.secret_key, APP.secret_key, OTHER.secret_key)
TOPIC, SECRET_TOPIC, FREE_TOPIC = "orders", "orders_secret", "audit"


@dataclass
class AuthCluster:
    cluster: Cluster

    @property
    def broker(self) -> str:
        return self.cluster.broker.addr

    @property
    def namesrv(self) -> str:
        return self.cluster.namesrv.addr


def admin(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = mq("admin", *args, stdin=stdin, env=ROOT_ENV if env is None else env)
    return result.returncode, result.stdout, result.stderr


@pytest.fixture(scope="module")
def auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthCluster]:
    work = tmp_path_factory.mktemp("acl2")
    for cluster in broker_cluster(work, ("broker-a",), **AUTH_PROPS):
        c = AuthCluster(cluster)
        for topic in (TOPIC, SECRET_TOPIC, FREE_TOPIC):
            code, out, err = admin("topic", "create", topic, "-b", c.broker, "-n", c.namesrv)
            assert code == 0, (out, err)
        yield c
        output = cluster.broker.output()
        assert "Traceback" not in output, output
        assert not any(p in output for p in PASSWORDS), "a password reached the broker's output"


async def send_as(c: AuthCluster, creds: SessionCredentials | None, topic: str) -> None:
    producer = Producer("PG_ACL2", namesrv=c.namesrv, security=ClientSecurity(credentials=creds), retry_times=0)
    try:
        await producer.send(Message(topic, b"acl2-body"))
    finally:
        await producer.shutdown()


async def raw_send(c: AuthCluster, ext_extra: dict[str, str], sign: SessionCredentials | None = None,
                   topic: str = TOPIC) -> RemotingCommand:
    header = SendMessageRequestHeader("PG_ACL2", topic, "TBW102", 4, 0, 0, int(time.time() * 1000), 0, "")
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {**header.to_v2(), **ext_extra}, b"raw")
    client = RemotingClient(security=ClientSecurity(credentials=sign))
    try:
        return await client.invoke(c.broker, cmd, 5.0)
    finally:
        await client.close()


def refused(send) -> NoPermissionError:  # type: ignore[no-untyped-def]
    """The NO_PERMISSION answer behind a failed send (the producer retries NO_PERMISSION, as Java's does,
    and reports the last answer as the cause)."""
    with pytest.raises(MQClientError) as failed:
        asyncio.run(send)
    cause = failed.value if isinstance(failed.value, NoPermissionError) else failed.value.__cause__
    assert isinstance(cause, NoPermissionError), failed.value
    return cause


def max_offset(c: AuthCluster, topic: str) -> int:
    code, out, err = admin("topic", "status", topic, "-n", c.namesrv, "-o", "json")
    assert code == 0, (out, err)
    return sum(q["maxOffset"] for q in json.loads(out)["queues"])


def test_the_init_user_is_super_and_users_are_managed(auth: AuthCluster) -> None:
    code, out, err = admin("user", "list", "-b", auth.broker, "-n", auth.namesrv, "-o", "json")
    assert code == 0, err
    users = json.loads(out)["brokers"][0]["users"]
    assert users == [{"username": "rocketmq", "password": "****", "userType": "Super", "userStatus": "enable"}]
    code, out, err = admin("user", "create", APP.access_key, "-b", auth.broker, "-n", auth.namesrv, "--dry-run",
                           "-o", "json", stdin=APP.secret_key)
    assert code == 0, err
    assert json.loads(out)["changes"][0]["dryRun"] is True
    code, out, _ = admin("user", "get", APP.access_key, "-b", auth.broker, "-n", auth.namesrv, "-o", "json")
    assert json.loads(out)["brokers"][0]["users"] == [], "a dry run created the user"
    for creds in (APP, OTHER):
        code, out, err = admin("user", "create", creds.access_key, "-b", auth.broker, "-n", auth.namesrv,
                               stdin=creds.secret_key)
        assert code == 0, err
    code, out, err = admin("user", "create", APP.access_key, "-b", auth.broker, "-n", auth.namesrv,
                           stdin=APP.secret_key)
    assert code != 0 and "The user is existed" in err, (out, err)
    code, out, err = admin("getUser", "-b", auth.broker, "-u", APP.access_key, "-n", auth.namesrv)
    assert code == 0, err
    assert out.splitlines()[1].split() == ["app1", "****", "Normal", "enable"]
    assert APP.secret_key not in out


def test_rules_allow_and_refuse_a_signed_producer(auth: AuthCluster) -> None:
    for args in (("acl2", "create", APP.access_key, "-r", f"Topic:{TOPIC[:3]}*", "-a", "Pub", "-d", "Allow"),
                 ("createAcl", "-s", f"User:{APP.access_key}", "-r", f"Topic:{SECRET_TOPIC}", "-a", "Pub",
                  "-d", "Deny")):
        code, out, err = admin(*args, "-b", auth.broker, "-n", auth.namesrv)
        assert code == 0, (out, err)
    code, out, err = admin("listAcl", "-b", auth.broker, "-n", auth.namesrv, "-s", "app1")
    assert [line.split()[2] for line in out.splitlines()[1:]] == ["Topic:ord*", "Topic:orders_secret"], out

    before = max_offset(auth, TOPIC)
    asyncio.run(send_as(auth, APP, TOPIC))  # Topic:ord* Allow covers it
    assert max_offset(auth, TOPIC) == before + 1

    for topic, why in ((SECRET_TOPIC, "the decision is deny."), (FREE_TOPIC, "no matched policies.")):
        before = max_offset(auth, topic)
        answer = refused(send_as(auth, APP, topic))
        assert answer.remark == f"User:app1 has no permission to access Topic:{topic} from 127.0.0.1, {why}"
        assert max_offset(auth, topic) == before

    assert "no matched policies" in refused(send_as(auth, OTHER, TOPIC)).remark  # app2 has no rule at all


def test_hostile_requests_are_refused_and_store_nothing(auth: AuthCluster) -> None:
    before = max_offset(auth, TOPIC)

    async def run() -> list[RemotingCommand]:
        return [await raw_send(auth, {}),  # unsigned
                await raw_send(auth, {"AccessKey": APP.access_key, "Signature": "AAAAAAAAAAAAAAAAAAAAAAAAAAA="}),
                await raw_send(auth, {}, SessionCredentials(APP.access_key, "not-the-password")),
                await raw_send(auth, {}, SessionCredentials("ghost", "whatever"))]

    unsigned, forged, wrong, ghost = asyncio.run(run())
    assert (unsigned.code, unsigned.remark) == (ResponseCode.NO_PERMISSION, "username cannot be null.")
    assert (forged.code, forged.remark) == (ResponseCode.NO_PERMISSION, "check signature failed.")
    assert (wrong.code, wrong.remark) == (ResponseCode.NO_PERMISSION, "check signature failed.")
    assert (ghost.code, ghost.remark) == (ResponseCode.NO_PERMISSION, "User:ghost is not found.")
    assert max_offset(auth, TOPIC) == before
    code, out, err = admin("user", "list", "-b", auth.broker, "-n", auth.namesrv, env={})
    assert code != 0 and "username cannot be null." in err, (out, err)
    code, out, err = admin("user", "create", "mallory", "--type", "Super", "-b", auth.broker, "-n", auth.namesrv,
                           stdin="x", env={"MQ_ACCESS_KEY": APP.access_key, "MQ_SECRET_KEY": APP.secret_key})
    assert code != 0 and "no permission to access Cluster:TestCluster" in err, (out, err)


def test_a_user_disabled_mid_session_is_refused_on_its_open_connection(auth: AuthCluster) -> None:
    async def run() -> None:
        producer = Producer("PG_ACL2", namesrv=auth.namesrv, security=ClientSecurity(credentials=APP), retry_times=0)
        try:
            await producer.send(Message(TOPIC, b"before"))
            code, out, err = await asyncio.to_thread(
                admin, "user", "update", APP.access_key, "--status", "disable", "-b", auth.broker, "-n", auth.namesrv)
            assert code == 0, err
            with pytest.raises(MQClientError) as failed:
                await producer.send(Message(TOPIC, b"after"))
            assert isinstance(failed.value.__cause__, NoPermissionError), failed.value
            assert failed.value.__cause__.remark == "User:app1 is disabled."
            code, out, err = await asyncio.to_thread(
                admin, "updateUser", "-b", auth.broker, "-u", APP.access_key, "-s", "enable", "-n", auth.namesrv)
            assert code == 0 and f"update user to {auth.broker} success." in out, err
            await until(lambda: _sends(producer), 30, "the re-enabled user to send again")
        finally:
            await producer.shutdown()

    asyncio.run(run())


async def _sends(producer: Producer) -> bool:
    try:
        await producer.send(Message(TOPIC, b"again"))
    except MQClientError:
        return False
    return True


def test_a_narrow_deny_wins_over_a_broad_allow_and_deletes_take_effect(auth: AuthCluster) -> None:
    code, out, err = admin("acl2", "create", OTHER.access_key, "-r", "Topic:*", "-a", "All", "-d", "Allow",
                           "-b", auth.broker, "-n", auth.namesrv)
    assert code == 0, err
    asyncio.run(send_as(auth, OTHER, FREE_TOPIC))
    code, out, err = admin("acl2", "create", OTHER.access_key, "-r", f"Topic:{FREE_TOPIC}", "-a", "Pub", "-d", "Deny",
                           "-b", auth.broker, "-n", auth.namesrv)
    assert code == 0, err
    before = max_offset(auth, FREE_TOPIC)
    assert refused(send_as(auth, OTHER, FREE_TOPIC)).remark.endswith("the decision is deny.")
    assert max_offset(auth, FREE_TOPIC) == before
    asyncio.run(send_as(auth, OTHER, TOPIC))  # the broad Allow still covers the rest
    code, out, err = admin("deleteAcl", "-s", f"User:{OTHER.access_key}", "-r", f"Topic:{FREE_TOPIC}",
                           "-b", auth.broker, "-n", auth.namesrv)
    assert code == 0 and f"delete acl to {auth.broker} success." in out, (out, err)
    asyncio.run(send_as(auth, OTHER, FREE_TOPIC))
    code, out, err = admin("user", "delete", OTHER.access_key, "-b", auth.broker, "-n", auth.namesrv)
    assert code == 0, err
    code, out, _ = admin("acl2", "list", "-b", auth.broker, "-n", auth.namesrv, "-o", "json")
    assert [a["subject"] for a in json.loads(out)["brokers"][0]["acls"]] == ["User:app1"]
    assert refused(send_as(auth, OTHER, TOPIC)).remark == "User:app2 is not found."


def test_metadata_is_stored_with_apaches_keys_and_values(auth: AuthCluster) -> None:
    store = auth.cluster.workdir / "broker-a" / "config"
    users = json.loads((store / "users.json").read_text())
    acls = json.loads((store / "acls.json").read_text())
    assert set(users) == {"rocketmq", "app1"} and users["app1"]["userType"] == 2
    assert set(acls) == {"User:app1"}


def test_plain_acl_accounts_migrate_after_a_dry_run(auth: AuthCluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    plain = tmp_path / "plain_acl.yml"
    plain.write_text("accounts:\n- accessKey: legacy1\n  secretKey: legacy-XYZZY-secret\n  admin: false\n"
                     f"  defaultTopicPerm: DENY\n  topicPerms: [{TOPIC}=PUB]\n"
                     "- accessKey: app1\n  secretKey: other-secret\n  admin: true\n")
    code, out, err = admin("acl2", "migrate", "-f", str(plain), "-b", auth.broker, "-n", auth.namesrv, "-o", "json")
    assert code == 0, err
    plan = json.loads(out)["changes"]
    assert [(c["action"], c["target"], c["dryRun"]) for c in plan] == [
        ("create-user", "legacy1", True), ("create-acl", "User:legacy1", True), ("skip-user", "app1", True)]
    assert "legacy-XYZZY-secret" not in out
    code, out, _ = admin("user", "get", "legacy1", "-b", auth.broker, "-n", auth.namesrv, "-o", "json")
    assert json.loads(out)["brokers"][0]["users"] == [], "the dry run created the user"
    code, out, err = admin("acl2", "migrate", "-f", str(plain), "-b", auth.broker, "-n", auth.namesrv, "--apply")
    assert code == 0, err
    legacy = SessionCredentials("legacy1", "legacy-XYZZY-secret")
    asyncio.run(send_as(auth, legacy, TOPIC))
    assert refused(send_as(auth, legacy, FREE_TOPIC)).remark.endswith("the decision is deny.")  # Default Topic:* Deny
    code, out, _ = admin("user", "get", "app1", "-b", auth.broker, "-n", auth.namesrv, "-o", "json")
    assert json.loads(out)["brokers"][0]["users"][0]["userType"] == "Normal"  # an existing user is left alone
