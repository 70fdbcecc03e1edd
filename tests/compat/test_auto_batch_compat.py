"""The C++ client (rocketmq==0.4.4) consumes what our auto-batching producer sent: batches arrive as
single messages with their own tags, keys, properties and unique keys."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.clientsupport import Cluster, create_topic, two_broker_cluster
from support.cppclient import CppClient

from mqtools.client.producer import Producer
from mqtools.common.message import Message

pytestmark = [pytest.mark.compat, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from two_broker_cluster(tmp_path_factory.mktemp("autobatch"))


async def test_cpp_push_consumer_reads_auto_batched_sends(cluster: Cluster, tmp_path: Path) -> None:
    await create_topic(cluster, "AutoBatchCpp", 2)
    msgs = [Message("AutoBatchCpp", f"ab-body-{i}".encode(),
                    properties={"TAGS": f"Tag{i % 2}", "KEYS": f"ab-key-{i}", "color": f"c{i}"}) for i in range(200)]
    cpp = CppClient.consume(cluster.namesrv.addr, "AutoBatchCpp", "CG_CPP_AUTOBATCH", ["color", "UNIQ_KEY"],
                            tmp_path / "home")
    try:
        await cpp.started()
        async with Producer("PG_PY_AUTOBATCH", namesrv=cluster.namesrv.addr, auto_batch=True) as producer:
            results = await asyncio.gather(*(producer.send_async(m) for m in msgs))
        assert len({r.offset_msg_id for r in results}) == 200
        await cpp.until_received(200)
    finally:
        cpp.stop()
    by_body = {e["body"]: e for e in cpp.received()}
    assert set(by_body) == {f"ab-body-{i}" for i in range(200)}
    for msg, result in zip(msgs, results, strict=True):
        got = by_body[bytes(msg.body).decode()]
        assert got["tags"] == msg.properties["TAGS"]
        assert got["keys"] == msg.properties["KEYS"]
        assert got["props"]["color"] == msg.properties["color"]
        assert got["props"]["UNIQ_KEY"] == result.msg_id
        assert got["id"] == result.msg_id
