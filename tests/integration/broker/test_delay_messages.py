"""A real `mq broker`: delay levels re-deliver on time; send-back goes %RETRY% then %DLQ%."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from support.mqproc import MqProcess, start_mq

from mqtools.common import properties as P
from mqtools.common.codec import decode_stored
from mqtools.common.message import MessageExt
from mqtools.remoting import fastjson
from mqtools.remoting.bodies import SubscriptionGroupConfig
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import PullMessageRequestHeader, SendMessageRequestHeader

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

SHORT_LEVELS = "1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s"


def start_broker(tmp_path: Path, levels: str | None = None) -> MqProcess:
    props = tmp_path / "broker.properties"
    text = (f"brokerName=broker-delay\nlistenPort=0\nbrokerIP1=127.0.0.1\n"
            f"storePathRootDir={tmp_path / 'store'}\n")
    if levels:
        text += f"messageDelayLevel={levels}\n"
    props.write_text(text)
    return start_mq(["broker", "start", "-c", str(props)], timeout=30)


async def call(client: RemotingClient, addr: str, code: int, ext: dict[str, str] | None = None,
               body: bytes | None = None) -> RemotingCommand:
    return await client.invoke(addr, RemotingCommand.request(code, ext or {}, body), 10)


async def send(client: RemotingClient, addr: str, topic: str, body: bytes, props: dict[str, str]) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="PG_DELAY", topic=topic, default_topic="TBW102", default_topic_queue_nums=1, queue_id=0,
        sys_flag=0, born_timestamp=int(time.time() * 1000), flag=0, properties=P.properties_to_string(props),
    )
    resp = await call(client, addr, RequestCode.SEND_MESSAGE, header.to_ext(), body)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return resp


async def pull(client: RemotingClient, addr: str, topic: str, offset: int, queue_id: int = 0) -> list[MessageExt]:
    header = PullMessageRequestHeader(
        consumer_group="CG_PULLER", topic=topic, queue_id=queue_id, queue_offset=offset, max_msg_nums=32,
        sys_flag=4, commit_offset=0, suspend_timeout_millis=0, sub_version=0, subscription="*",  # FLAG_SUBSCRIPTION
    )
    resp = await call(client, addr, RequestCode.PULL_MESSAGE, header.to_ext())
    if resp.code != ResponseCode.SUCCESS:
        return []
    body, pos, out = memoryview(resp.body), 0, []
    while pos < len(body):
        msg = decode_stored(body, pos)
        out.append(msg)
        pos += msg.store_size
    return out


async def pull_one(client: RemotingClient, addr: str, topic: str, offset: int, timeout: float = 20) -> MessageExt:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msgs = await pull(client, addr, topic, offset)
        if msgs:
            return msgs[0]
        await asyncio.sleep(0.1)
    raise AssertionError(f"nothing arrived in {topic} at offset {offset} within {timeout}s")


async def test_delay_level_one_delivers_after_a_second(tmp_path: Path) -> None:
    broker = start_broker(tmp_path)
    client = RemotingClient()
    try:
        resp = await send(client, broker.addr, "DelayTopic", b"later", {P.DELAY: "1", P.TAGS: "t"})
        assert resp.ext_fields["queueId"] == "0"
        # it waits in SCHEDULE_TOPIC_XXXX queue 0 (level 1), not in its topic
        parked = await pull_one(client, broker.addr, "SCHEDULE_TOPIC_XXXX", 0)
        assert parked.properties[P.REAL_TOPIC] == "DelayTopic" and parked.properties[P.REAL_QID] == "0"
        msg = await pull_one(client, broker.addr, "DelayTopic", 0)
        assert msg.body == b"later" and msg.properties[P.TAGS] == "t"
        assert P.DELAY not in msg.properties
        assert msg.store_timestamp - parked.store_timestamp >= 1000
        assert len(await pull(client, broker.addr, "DelayTopic", 0)) == 1
    finally:
        await client.close()
        assert broker.stop() == 0
    saved = fastjson.loads((tmp_path / "store" / "config" / "delayOffset.json").read_bytes())
    assert {int(k): v for k, v in saved["offsetTable"].items()}[1] == 1


async def test_send_back_retries_then_dead_letters(tmp_path: Path) -> None:
    broker = start_broker(tmp_path, SHORT_LEVELS)
    client = RemotingClient()
    group = "CG_DLQ"
    try:
        config = SubscriptionGroupConfig(group_name=group, retry_max_times=2)
        resp = await call(client, broker.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=config.to_json())
        assert resp.code == ResponseCode.SUCCESS
        await send(client, broker.addr, "DlqTopic", b"poison", {P.TAGS: "x", P.KEYS: "k1"})
        original = await pull_one(client, broker.addr, "DlqTopic", 0)
        current, retry_offset = original, 0
        for expected_rc in (1, 2):
            ext = {"offset": str(current.commit_log_offset), "group": group, "delayLevel": "0",
                   "originMsgId": current.msg_id, "originTopic": "DlqTopic", "maxReconsumeTimes": "-1"}
            resp = await call(client, broker.addr, RequestCode.CONSUMER_SEND_MSG_BACK, ext)
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            current = await pull_one(client, broker.addr, f"%RETRY%{group}", retry_offset)
            retry_offset += 1
            assert current.reconsume_times == expected_rc and current.body == b"poison"
            assert current.properties[P.RETRY_TOPIC] == "DlqTopic"
            assert current.properties[P.ORIGIN_MESSAGE_ID] == original.msg_id
        ext = {"offset": str(current.commit_log_offset), "group": group, "delayLevel": "0",
               "originMsgId": current.msg_id, "originTopic": "DlqTopic"}
        resp = await call(client, broker.addr, RequestCode.CONSUMER_SEND_MSG_BACK, ext)
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        dead = await pull_one(client, broker.addr, f"%DLQ%{group}", 0, timeout=5)
        assert dead.reconsume_times == 3 and dead.body == b"poison"
        assert dead.properties[P.ORIGIN_MESSAGE_ID] == original.msg_id
        assert P.DELAY not in dead.properties
        assert await pull(client, broker.addr, f"%RETRY%{group}", retry_offset) == []

        # delayLevel < 0 dead-letters at once, whatever the count
        await send(client, broker.addr, "DlqTopic", b"hopeless", {})
        fresh = await pull_one(client, broker.addr, "DlqTopic", 1)
        ext = {"offset": str(fresh.commit_log_offset), "group": group, "delayLevel": "-1"}
        resp = await call(client, broker.addr, RequestCode.CONSUMER_SEND_MSG_BACK, ext)
        assert resp.code == ResponseCode.SUCCESS
        dead2 = await pull_one(client, broker.addr, f"%DLQ%{group}", 1, timeout=5)
        assert dead2.body == b"hopeless" and dead2.reconsume_times == 1
    finally:
        await client.close()
        broker.stop()
