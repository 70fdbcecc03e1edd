"""The real C++ RocketMQ client (rocketmq==0.4.4) reading routes from `mq namesrv`.

The C++ producer runs in a subprocess (namesrv_cpp_probe.py) with a timeout and a private
HOME; its own log (~/logs/rocketmq-cpp/) tells what it parsed from our answers. A name
server that answered garbage or nothing would show up there as a response timeout.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cppclient import cpp_env
from support.mqproc import MqProcess, start_mq
from support.ports import free_port

from mqtools.remoting.bodies import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import RegisterBrokerRequestHeader

pytestmark = [pytest.mark.compat, pytest.mark.timeout(120)]

PROBE = Path(__file__).with_name("namesrv_cpp_probe.py")
TIMEOUT_MARK = "wait response timeout"


@pytest.fixture(scope="module")
def namesrv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MqProcess]:
    store = tmp_path_factory.mktemp("ns-compat")
    proc = start_mq(["namesrv", "start", "--listen-port", "0", "--host", "127.0.0.1", "--store-dir", str(store)])
    yield proc
    proc.stop()


async def run_probe(namesrv: str, topic: str, home: Path) -> tuple[dict, str]:
    """The C++ client's verdict (JSON line) and its log text."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(PROBE), namesrv, topic, env=cpp_env(home),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    lines = [ln for ln in out.decode(errors="replace").splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and lines, out.decode(errors="replace")
    logs = sorted((home / "logs" / "rocketmq-cpp").glob("*"))
    return json.loads(lines[-1]), "\n".join(p.read_text(errors="replace") for p in logs)


async def test_unknown_topic_is_reported_as_no_route(namesrv: MqProcess, tmp_path: Path) -> None:
    result, log = await run_probe(namesrv.addr, "COMPAT_NO_SUCH_TOPIC", tmp_path)
    assert not result["ok"]
    assert "No route info" in result["error"] and "COMPAT_NO_SUCH_TOPIC" in result["error"]
    # It got an answer (TOPIC_NOT_EXIST) at once, not a timeout, and found no route in it.
    assert TIMEOUT_MARK not in log
    assert "tryToFindTopicPublishInfo null:COMPAT_NO_SUCH_TOPIC" in log
    assert "updateTopicRouteInfoFromNameServer has data" not in log


async def test_registered_route_is_parsed(namesrv: MqProcess, tmp_path: Path) -> None:
    broker_addr = f"127.0.0.1:{free_port()}"  # nothing listens: the send itself must fail
    header = RegisterBrokerRequestHeader(broker_name="compat-broker-a", broker_addr=broker_addr,
                                         cluster_name="CompatCluster", ha_server_addr="127.0.0.1:1",
                                         broker_id=0)
    topics = {t: TopicConfig(t, 4, 4) for t in ("COMPAT_ROUTED", "TBW102")}
    body = RegisterBrokerBody(TopicConfigSerializeWrapper(topics, DataVersion(1, 1))).to_json()
    broker = RemotingClient()  # stays connected: closing it would unregister the broker
    try:
        reg = await broker.invoke(namesrv.addr,
                                  RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext(), body), 5)
        assert reg.code == ResponseCode.SUCCESS
        result, log = await run_probe(namesrv.addr, "COMPAT_ROUTED", tmp_path)
    finally:
        await broker.close()
    assert not result["ok"]
    assert TIMEOUT_MARK not in log
    # The client took the broker name and address out of our TopicRouteData and tried to reach it.
    assert "updateTopicRouteInfoFromNameServer has data" in log
    assert "changed with broker name:compat-broker-a" in log
    assert f"can not connect to server:{broker_addr}" in log
