"""A FIFO (orderly) POP batch outlives a broker restart, as Apache's consumerOrderInfo.json has it: the restarted
broker still holds the queue for the batch being processed, takes its receipts, and counts its deliveries on.
Until stop 106 the table lived in memory, and a second consumer got the batch at once after a restart."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from support.inprocbroker import inproc_broker

from mqtools.common.codec import decode_entries
from mqtools.common.message import MessageExtBrokerInner
from mqtools.remoting.bodies import TopicConfig
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.pop import (
    NORMAL_MARK,
    AckMessageRequestHeader,
    ExtraInfo,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    parse_order_count_info,
)
from mqtools.server.broker.app import BrokerController
from mqtools.server.broker.pop.order import FILE_NAME

pytestmark = pytest.mark.timeout(60)

TOPIC, GROUP, BROKER = "FifoRestart", "CG_FIFO_RESTART", "b1"
#: The first batch's invisible time: long enough for a restart on a slow machine, short enough to wait out.
FIRST_INVISIBLE_MS = 5_000


async def pop(client: RemotingClient, broker: BrokerController, invisible_ms: int = 60_000,
              poll_ms: int = 0, attempt: str | None = None) -> tuple[PopMessageResponseHeader, list[bytes]]:
    h = PopMessageRequestHeader(GROUP, TOPIC, 0, 2, invisible_ms, poll_ms, int(time.time() * 1000), 0, order=True,
                                attempt_id=attempt)
    cmd = RemotingCommand.request(RequestCode.POP_MESSAGE, h.to_ext())
    resp = await client.invoke(broker.broker_addr, cmd, poll_ms / 1000 + 5)
    if resp.code != ResponseCode.SUCCESS:
        return PopMessageResponseHeader.from_ext(resp.ext_fields), []
    return PopMessageResponseHeader.from_ext(resp.ext_fields), [bytes(m.body) for m in decode_entries(resp.body)]


async def ack(client: RemotingClient, broker: BrokerController, popped: PopMessageResponseHeader, offset: int) -> int:
    extra = ExtraInfo(offset, popped.pop_time, popped.invisible_time, popped.revive_qid, NORMAL_MARK, BROKER, 0,
                      offset).format()
    h = AckMessageRequestHeader(GROUP, TOPIC, 0, extra, offset)
    resp = await client.invoke(broker.broker_addr, RemotingCommand.request(RequestCode.ACK_MESSAGE, h.to_ext()), 5)
    return resp.code


async def test_a_batch_in_flight_holds_its_queue_across_a_restart(tmp_path: Path) -> None:
    async with inproc_broker(tmp_path, broker_name=BROKER) as (broker, client):
        broker.topics.update(TopicConfig(TOPIC, read_queue_nums=1, write_queue_nums=1))
        for i in range(3):
            put = await broker.store.put_message(MessageExtBrokerInner(topic=TOPIC, body=f"f-{i}".encode(), queue_id=0))
            assert put.status.name == "PUT_OK"
        first, bodies = await pop(client, broker, FIRST_INVISIBLE_MS)
        assert bodies == [b"f-0", b"f-1"]
        assert await ack(client, broker, first, 1) == ResponseCode.SUCCESS  # f-0 is still being processed
    assert (tmp_path / "store" / "config" / FILE_NAME).exists()

    async with inproc_broker(tmp_path, broker_name=BROKER) as (broker, client):
        _, bodies = await pop(client, broker)
        assert time.time() * 1000 < first.pop_time + FIRST_INVISIBLE_MS, "restarted too slowly to tell"
        assert bodies == [], "the restarted broker gave out a batch still being processed"
        # parked until the batch's invisible time ends, then the batch again, each message's second delivery
        again, bodies = await pop(client, broker, poll_ms=20_000)
        assert time.time() * 1000 >= first.pop_time + FIRST_INVISIBLE_MS
        assert bodies == [b"f-0", b"f-1"]
        assert parse_order_count_info(again.order_count_info) == {"0@qo0%0": 1, "0@qo0%1": 1, "0@0": 1}
        assert await ack(client, broker, first, 0) == ResponseCode.SUCCESS  # a stale receipt: nothing moves
        for offset in (0, 1):
            assert await ack(client, broker, again, offset) == ResponseCode.SUCCESS
        assert broker.offsets.query_offset(GROUP, TOPIC, 0) == 2
        rest, bodies = await pop(client, broker)
        assert bodies == [b"f-2"] and parse_order_count_info(rest.order_count_info) == {"0@0": 0}


async def test_a_receive_tried_again_with_its_attempt_id_gets_the_held_batch_at_once(tmp_path: Path) -> None:
    """A 5.x client whose FIFO receive's answer was lost tries it again with the same attemptId (the proxy passes
    it on): Apache's broker answers the batch again, not after its invisible time; another attempt waits."""
    async with inproc_broker(tmp_path, broker_name=BROKER) as (broker, client):
        broker.topics.update(TopicConfig(TOPIC, read_queue_nums=1, write_queue_nums=1))
        for i in range(2):
            await broker.store.put_message(MessageExtBrokerInner(topic=TOPIC, body=f"a-{i}".encode(), queue_id=0))
        _, bodies = await pop(client, broker, attempt="attempt-1")
        assert bodies == [b"a-0", b"a-1"]
        assert (await pop(client, broker, attempt="attempt-2"))[1] == []
        again, bodies = await pop(client, broker, attempt="attempt-1")
        assert bodies == [b"a-0", b"a-1"] and parse_order_count_info(again.order_count_info) == {"0@0": 0}
