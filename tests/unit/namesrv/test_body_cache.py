"""The decoded registration body cached per broker lives exactly as long as the broker's live entry: a closed
connection, an expiry or a refusal drops it as an unregistration does (anyone can register addresses and close,
and brokers change IPs: kept past that, the cache grew without bound)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqtools.remoting.bodies import DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import RegisterBrokerRequestHeader, UnRegisterBrokerRequestHeader
from mqtools.server.namesrv.app import NamesrvController
from mqtools.server.namesrv.config import NamesrvConfig


class Conn:
    """A broker's connection as the name server sees it: open until closed."""

    def __init__(self) -> None:
        self.is_open = True
        self.peer = "peer:1"

    def close(self) -> None:
        self.is_open = False


@pytest.fixture
def clock() -> list[int]:
    """The name server's clock in milliseconds: the test moves it on."""
    return [5_000]


@pytest.fixture
def ctl(tmp_path: Path, clock: list[int]) -> NamesrvController:
    return NamesrvController(NamesrvConfig(kv_config_path=str(tmp_path / "kv.json"), listen_port=0),
                             clock=lambda: clock[0])


def register(ctl: NamesrvController, addr: str, conn: Conn | None = None, *, broker_id: int = 0,
             state_version: int = 0, timeout_ms: int | None = None) -> RemotingCommand:
    header = RegisterBrokerRequestHeader(broker_name="b1", broker_addr=addr, cluster_name="C", ha_server_addr=addr,
                                         broker_id=broker_id, heartbeat_timeout_millis=timeout_ms)
    wrapper = TopicConfigSerializeWrapper({"T": TopicConfig("T", 4, 4)}, DataVersion(1, 1, state_version))
    req = RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext(), RegisterBrokerBody(wrapper).to_json())
    resp = ctl.processor.register_broker(conn, req)  # type: ignore[arg-type]
    assert isinstance(resp, RemotingCommand)
    return resp


async def test_a_closed_connection_drops_the_bodies_of_every_address_registered_over_it(
        ctl: NamesrvController) -> None:
    conn = Conn()
    for i in range(50):
        assert register(ctl, f"10.0.0.{i}:10911", conn, broker_id=i).code == ResponseCode.SUCCESS
    assert len(ctl.processor._bodies) == 50
    ctl._on_close(conn)  # type: ignore[arg-type]
    assert ctl.routes.broker_live_table == {} and ctl.processor._bodies == {}


async def test_an_expired_broker_loses_its_body(ctl: NamesrvController, clock: list[int]) -> None:
    conn = Conn()
    register(ctl, "10.0.0.1:10911", conn, timeout_ms=1_000)
    register(ctl, "10.0.0.2:10911", broker_id=1)  # no connection, the default timeout: stays
    clock[0] += 2_000
    ctl.scan_once()
    assert not conn.is_open and set(ctl.processor._bodies) == {("C", "10.0.0.2:10911")}


async def test_a_broker_whose_ip_changed_leaves_no_body_behind(ctl: NamesrvController, clock: list[int]) -> None:
    register(ctl, "10.0.0.1:10911")
    clock[0] += 200_000
    register(ctl, "10.0.0.9:10911")  # the same broker, a new address; the old one expires
    ctl.scan_once()
    assert set(ctl.processor._bodies) == {("C", "10.0.0.9:10911")}


async def test_a_registration_refused_as_stale_is_not_cached(ctl: NamesrvController) -> None:
    register(ctl, "10.0.0.1:10911", state_version=5)
    register(ctl, "10.0.0.2:10911", state_version=1)  # claims id 0 with an older state version: ignored
    assert set(ctl.processor._bodies) == {("C", "10.0.0.1:10911")}


async def test_an_unregistration_still_drops_it(ctl: NamesrvController) -> None:
    register(ctl, "10.0.0.1:10911")
    header = UnRegisterBrokerRequestHeader(broker_name="b1", broker_addr="10.0.0.1:10911", cluster_name="C",
                                           broker_id=0)
    ctl.processor.unregister_broker(None, RemotingCommand.request(  # type: ignore[arg-type]
        RequestCode.UNREGISTER_BROKER, header.to_ext()))
    assert ctl.processor._bodies == {}
