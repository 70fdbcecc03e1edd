"""Producer auto-batching against real `mq namesrv` + two `mq broker` processes."""

from __future__ import annotations

import asyncio

import pytest
from support.clientsupport import Cluster, create_topic

from mqtools.client.admin import MQAdmin
from mqtools.client.producer import Producer
from mqtools.client.types import SendStatus
from mqtools.common import properties as P
from mqtools.common.message import Message
from mqtools.remoting.codes import RequestCode

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


async def test_2000_async_sends_each_find_their_message_at_their_queue_offset(cluster: Cluster) -> None:
    await create_topic(cluster, "AutoBatchIT", 4)
    # 100-byte bodies: batches go at 32 KiB of bodies (about 330 sends), so 2000 sends make several
    # batches, and the queue rotation takes them to both brokers
    msgs = [Message("AutoBatchIT", f"body-{i}".encode().ljust(100, b"."), properties={"KEYS": f"key-{i}", "n": str(i)})
            for i in range(2000)]
    batches = 0
    async with Producer("PG_AUTO_BATCH", namesrv=cluster.namesrv.addr, auto_batch=True) as producer:
        remoting = producer.instance.remoting
        invoke = remoting.invoke

        async def counting(addr: str, cmd, timeout: float):  # type: ignore[no-untyped-def]
            nonlocal batches
            batches += cmd.code == RequestCode.SEND_BATCH_MESSAGE
            return await invoke(addr, cmd, timeout)

        remoting.invoke = counting  # type: ignore[method-assign]
        results = await asyncio.gather(*(producer.send_async(m) for m in msgs))
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert 0 < batches < 500, f"{batches} batches for 2000 sends: they were gathered"
    assert len({(r.queue, r.queue_offset) for r in results}) == 2000
    assert {r.queue.broker_name for r in results} == set(cluster.brokers)
    async with MQAdmin(cluster.namesrv.addr) as admin:
        limit = asyncio.Semaphore(32)

        async def check(msg: Message, result) -> None:  # type: ignore[no-untyped-def]
            async with limit:
                stored = await admin.messages.message_at(result.queue, result.queue_offset)
            assert stored is not None, f"nothing at {result.queue} {result.queue_offset}"
            assert stored.properties[P.UNIQ_KEY] == result.msg_id == msg.properties[P.UNIQ_KEY]
            assert (bytes(stored.body), stored.properties["KEYS"]) == (bytes(msg.body), msg.properties["KEYS"])
            assert stored.msg_id == result.offset_msg_id

        await asyncio.gather(*(check(m, r) for m, r in zip(msgs, results, strict=True)))
