"""A topic created through the admin API is routable at every name server the moment the call returns."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.mqproc import start_broker, start_namesrv

from mqtools.client.admin import MQAdmin
from mqtools.remoting.bodies import TopicConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


async def test_route_is_at_every_name_server_when_create_topic_returns(tmp_path: Path) -> None:
    first, second = start_namesrv(tmp_path / "ns1"), start_namesrv(tmp_path / "ns2")
    broker = start_broker(tmp_path, f"{first.addr};{second.addr}", "broker-a")
    try:
        async with MQAdmin(f"{first.addr};{second.addr}") as admin:
            for i in range(5):
                topic = f"FreshTopic{i}"
                await admin.topics.create_topic(TopicConfig(topic, 8, 8), broker_addr=broker.addr)
                for ns in (first.addr, second.addr):
                    async with MQAdmin(ns) as one:
                        route = await one.topics.topic_route(topic)
                    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums) for q in route.queue_datas] == [
                        ("broker-a", 8, 8)], ns
    finally:
        broker.stop()
        first.stop()
        second.stop()
