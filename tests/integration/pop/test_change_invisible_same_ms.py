"""A change of invisible time in the millisecond of its POP: a proxy that makes a popped message its client left
visible again at once does that. The new checkpoint must not share the old one's merge key (topic, group, queue,
start offset, pop time), or the revive takes it for the old one and the ack that follows for an ack of both: the
message would never come back. The broker and name server run in this process on a clock the test holds still,
so the change is made in the POP's millisecond every time."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mqtools.client.admin import MQAdmin
from mqtools.client.pop_consumer import PopConsumer
from mqtools.client.producer import Producer
from mqtools.common.message import Message
from mqtools.remoting.bodies import TopicConfig
from mqtools.remoting.pop import pop_retry_topic_v1
from mqtools.server.broker.app import BrokerController
from mqtools.server.broker.config import BrokerConfig
from mqtools.server.namesrv.app import NamesrvController
from mqtools.server.namesrv.config import NamesrvConfig

pytestmark = pytest.mark.timeout(60)

TOPIC, GROUP = "PopSameMs", "CG_POP_SAME_MS"


async def test_a_change_in_the_millisecond_of_its_pop_brings_the_message_back(tmp_path: Path) -> None:
    now = [time.time()]  # held still from here (near the client's clock: a POP born too long ago is refused)
    namesrv = NamesrvController(NamesrvConfig(listen_port=0, bind_address="127.0.0.1",
                                              kv_config_path=str(tmp_path / "kv.json"),
                                              config_store_path=str(tmp_path / "ns.properties")))
    await namesrv.start()
    ns = f"127.0.0.1:{namesrv.port}"
    cfg = BrokerConfig(listen_port=0, bind_address="127.0.0.1", broker_ip1="127.0.0.1", namesrv_addr=ns,
                       store_path_root_dir=str(tmp_path / "store"), broker_name="broker-ms")
    cfg.validate()
    broker = BrokerController(cfg, clock=lambda: now[0])
    await broker.start()
    consumer = PopConsumer(GROUP, namesrv=ns)
    try:
        revive = broker.pop.s.revive
        await revive.shutdown()  # this test runs the revive rounds itself, on its clock
        async with MQAdmin(ns) as admin:
            await admin.topics.create_topic(TopicConfig(TOPIC, read_queue_nums=1, write_queue_nums=1),
                                            broker_addr=broker.broker_addr)
        async with Producer("PG_POP_SAME_MS", namesrv=ns) as producer:
            await producer.send(Message(TOPIC, b"left-by-its-client"))
        await consumer.start()
        (msg,) = (await consumer.pop(TOPIC, 1, 60_000, 0)).messages
        await consumer.change_invisible_time(msg, 1000)  # the same millisecond: the clock stands still
        await revive.run_once()
        pending = [(ck.start_offset, ck.invisible_time) for ledger in revive.ledgers.values()
                   for ck in ledger.pending.values()]
        assert pending == [(0, 1000)], "the message is popped and not acknowledged, under its new checkpoint"
        now[0] += 2.0  # past the new invisible time
        await revive.run_once()
        retry = pop_retry_topic_v1(TOPIC, GROUP)
        assert broker.store.get_max_offset_in_queue(retry, 0) == 1, "revived into the group's POP retry topic"
    finally:
        await consumer.shutdown()
        await broker.shutdown()
        await namesrv.shutdown()
