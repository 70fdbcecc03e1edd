"""Interop both ways between our Python client and the C++ client (rocketmq==0.4.4)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.clientsupport import Cluster, create_topic, two_broker_cluster, until
from support.cppclient import CppClient

from mqtools.client.producer import Producer
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult
from mqtools.common.message import Message, MessageExt

pytestmark = [pytest.mark.compat, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from two_broker_cluster(tmp_path_factory.mktemp("interop"))


async def test_python_producer_to_cpp_push_consumer(cluster: Cluster, tmp_path: Path) -> None:
    await create_topic(cluster, "InteropPy2Cpp", 2)
    cpp = CppClient.consume(cluster.namesrv.addr, "InteropPy2Cpp", "CG_CPP_INTEROP", ["color", "UNIQ_KEY"],
                            tmp_path / "home")
    try:
        await cpp.started()
        sent = {}
        async with Producer("PG_PY_INTEROP", namesrv=cluster.namesrv.addr) as producer:
            for i in range(20):
                msg = Message("InteropPy2Cpp", f"py-body-{i}".encode(),
                              properties={"TAGS": f"Tag{i % 2}", "KEYS": f"py-key-{i}", "color": f"c{i}"})
                sent[f"py-body-{i}"] = (msg, await producer.send(msg))
        await cpp.until_received(20)
    finally:
        cpp.stop()
    by_body = {e["body"]: e for e in cpp.received()}
    assert set(by_body) == set(sent)
    for body, (msg, result) in sent.items():
        got = by_body[body]
        assert got["tags"] == msg.properties["TAGS"]
        assert got["keys"] == msg.properties["KEYS"]
        assert got["props"]["color"] == msg.properties["color"]
        assert got["props"]["UNIQ_KEY"] == result.msg_id


async def test_cpp_producer_to_python_push_consumer(cluster: Cluster, tmp_path: Path) -> None:
    await create_topic(cluster, "InteropCpp2Py", 2)
    cpp = CppClient.produce(cluster.namesrv.addr, "InteropCpp2Py", 20, tmp_path / "home")
    assert cpp.wait(90) == 0, f"{cpp.stderr_tail()}\nevents: {cpp.events}\n{cpp.log_tail()}"
    sent = [e for e in cpp.events if "sent" in e]
    assert len(sent) == 20 and all(e["status"] == 0 for e in sent)
    got: list[MessageExt] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        got.extend(msgs)
        return ConsumeResult.CONSUME_SUCCESS

    consumer = PushConsumer("CG_PY_INTEROP", namesrv=cluster.namesrv.addr,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe("InteropCpp2Py", "TagCpp").register_listener(listener)
    async with consumer:
        await until(lambda: len(got) >= 20, 60, "20 C++ messages at our consumer")
    by_body = {m.body.decode(): m for m in got}
    assert set(by_body) == {f"cpp-body-{i}" for i in range(20)}
    for i in range(20):
        msg = by_body[f"cpp-body-{i}"]
        assert msg.tags == "TagCpp"
        assert msg.keys == [f"cpp-key-{i}"]
        assert msg.properties["origin"] == "cpp"
    assert {m.properties.get("UNIQ_KEY") for m in got} == {e["msg_id"] for e in sent}
