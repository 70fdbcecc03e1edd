"""The C++ RocketMQ client (rocketmq==0.4.4) with session credentials against an ACL-enabled broker:
it produces and pulls with the right secret; with a wrong secret, or on a topic without PUB, its
sends are refused and the broker stores nothing. Its signatures (AccessKey, OnsChannel and the
header fields, HmacSHA1) are verified by our broker, so this is also the cross-check of
mqtools.remoting.acl against a third-party implementation.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.clientsupport import Cluster, broker_cluster, until
from support.cppclient import run_cpp

from mqtools.client.admin import MQAdmin
from mqtools.client.errors import MQBrokerError
from mqtools.common.security import ClientSecurity, SessionCredentials
from mqtools.remoting.bodies import TopicConfig

pytestmark = [pytest.mark.compat, pytest.mark.timeout(180)]

ADMIN = SessionCredentials("cppadmin1", "cpp-admin-secret-1")
USER_KEY, USER_SECRET = "cppuser01", "cpp-user-secret-77"
TOPIC, NO_PUB_TOPIC, GROUP = "cpp_acl", "cpp_nopub", "CG_CPP_ACL"
ACL_YML = f"""
accounts:
- accessKey: {ADMIN.access_key}
  secretKey: {ADMIN.secret_key}
  admin: true
- accessKey: {USER_KEY}
  secretKey: {USER_SECRET}
  defaultTopicPerm: DENY
  defaultGroupPerm: DENY
  topicPerms: [{TOPIC}=PUB|SUB, {NO_PUB_TOPIC}=SUB]
  groupPerms: [{GROUP}=SUB, PG_CPP_ACL=SUB]
"""

SCRIPT = r'''
import json, os, sys
from rocketmq.client import Message, Producer, PullConsumer

def out(**kv):
    print(json.dumps(kv), flush=True)

mode, ns, topic = sys.argv[1], sys.argv[2], sys.argv[3]
key, secret = os.environ["CPP_ACCESS_KEY"], os.environ["CPP_SECRET_KEY"]
if mode == "produce":
    producer = Producer("PG_CPP_ACL")
    producer.set_namesrv_addr(ns)
    producer.set_session_credentials(key, secret, "LOCAL")
    producer.start()
    for i in range(int(sys.argv[4])):
        msg = Message(topic)
        msg.set_tags("acl")
        msg.set_body(f"acl-{i}")
        try:
            r = producer.send_sync(msg)
            out(sent=i, status=int(r.status))
        except Exception as exc:
            out(failed=i, error=type(exc).__name__)
    producer.shutdown()
else:
    consumer = PullConsumer(sys.argv[4])
    consumer.set_namesrv_addr(ns)
    consumer.set_session_credentials(key, secret, "LOCAL")
    consumer.start()
    for msg in consumer.pull(topic, expression="*", max_num=32):
        out(body=msg.body.decode())
    consumer.shutdown()
out(done=True)
'''


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("aclcpp")
    acl_file = work / "plain_acl.yml"
    acl_file.write_text(ACL_YML)
    yield from broker_cluster(work, ("broker-acl",), aclEnable="true", aclFilePath=str(acl_file),
                              autoCreateTopicEnable="false")


async def _prepare(cluster: Cluster) -> None:
    async with MQAdmin(cluster.namesrv.addr, security=ClientSecurity(credentials=ADMIN)) as admin:
        for topic in (TOPIC, NO_PUB_TOPIC):
            await admin.topics.create_topic(TopicConfig(topic, 2, 2), broker_addr=cluster.broker.addr)

        async def routed() -> bool:
            try:
                return all([await admin.topics.topic_route(t) for t in (TOPIC, NO_PUB_TOPIC)])
            except MQBrokerError:
                return False

        await until(routed, 20, "routes of the ACL topics")


async def _stored(cluster: Cluster, topic: str) -> int:
    async with MQAdmin(cluster.namesrv.addr, security=ClientSecurity(credentials=ADMIN)) as admin:
        stats = await admin.topics.topic_stats(topic)
    return sum(offset.max_offset for offset in stats.values())


def _cpp(args: list[str], home: Path, secret: str) -> list[dict]:
    import os

    os.environ["CPP_ACCESS_KEY"], os.environ["CPP_SECRET_KEY"] = USER_KEY, secret
    try:
        return run_cpp(SCRIPT, args, home, timeout=120)
    finally:
        del os.environ["CPP_ACCESS_KEY"], os.environ["CPP_SECRET_KEY"]


async def test_cpp_client_with_credentials_produces_and_pulls(cluster: Cluster) -> None:
    await _prepare(cluster)
    events = _cpp(["produce", cluster.namesrv.addr, TOPIC, "10"], cluster.workdir / "p", USER_SECRET)
    assert [e["status"] for e in events if "sent" in e] == [0] * 10, events  # SEND_OK
    assert await _stored(cluster, TOPIC) == 10
    pulled = _cpp(["pull", cluster.namesrv.addr, TOPIC, GROUP], cluster.workdir / "c", USER_SECRET)
    assert sorted(e["body"] for e in pulled if "body" in e) == sorted(f"acl-{i}" for i in range(10))


async def test_cpp_client_refused_with_wrong_secret_or_without_pub(cluster: Cluster) -> None:
    await _prepare(cluster)
    before = await _stored(cluster, TOPIC)
    events = _cpp(["produce", cluster.namesrv.addr, TOPIC, "3"], cluster.workdir / "w", "not-the-secret-1")
    assert len([e for e in events if "failed" in e]) == 3 and not [e for e in events if "sent" in e], events
    events = _cpp(["produce", cluster.namesrv.addr, NO_PUB_TOPIC, "3"], cluster.workdir / "n", USER_SECRET)
    assert len([e for e in events if "failed" in e]) == 3 and not [e for e in events if "sent" in e], events
    assert await _stored(cluster, TOPIC) == before
    assert await _stored(cluster, NO_PUB_TOPIC) == 0
    log = cluster.broker.output()  # refusals are logged rate-limited (the client retries and heartbeats)
    assert "refused SEND_MESSAGE" in log and "signature check failed for accessKey=cppuser01" in log
    assert USER_SECRET not in log and "not-the-secret-1" not in log
