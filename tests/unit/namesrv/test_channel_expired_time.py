"""brokerChannelExpiredTime below 10 s, the shortest period brokers register in (registerNameServerPeriod is
clamped to 10-60 s), would expire every live broker between two registrations: refused at start in one line and
by UPDATE_NAMESRV_CONFIG, as the other values a name server cannot run with (found in review)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.server.namesrv.config import ConfigError, NamesrvConfig
from mqtools.server.namesrv.kv_config import KVConfigManager
from mqtools.server.namesrv.processor import NamesrvProcessor
from mqtools.server.namesrv.route_info import RouteInfoManager


@pytest.mark.parametrize("value", ["1", "5000", "9999", "0", "-1"])
def test_an_expiry_shorter_than_the_registration_period_is_refused(value: str) -> None:
    config = NamesrvConfig()
    with pytest.raises(ConfigError) as refused:
        config.apply({"brokerChannelExpiredTime": value, "listenPort": "1234"})
    line = str(refused.value)
    assert line.startswith(f"brokerChannelExpiredTime={value}: expected at least 10000 ms") and "\n" not in line
    assert config.broker_channel_expired_time == 120_000 and config.listen_port == 9876  # nothing applied


@pytest.mark.parametrize("value", ["10000", "15000", "120000"])
def test_an_expiry_of_a_registration_period_or_more_is_taken(value: str) -> None:
    config = NamesrvConfig()
    config.apply({"brokerChannelExpiredTime": value})
    assert config.broker_channel_expired_time == int(value)


async def test_update_namesrv_config_refuses_it_and_keeps_the_timeout(tmp_path: Path) -> None:
    routes = RouteInfoManager(default_timeout_ms=120_000)
    proc = NamesrvProcessor(NamesrvConfig(kv_config_path=str(tmp_path / "kv.json")), routes,
                            KVConfigManager(tmp_path / "kv.json"), lambda: 5_000)
    req = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, {}, b"brokerChannelExpiredTime=3000\n")
    resp = await proc.update_config(None, req)  # type: ignore[arg-type]
    assert resp.code == ResponseCode.SYSTEM_ERROR and "brokerChannelExpiredTime=3000" in (resp.remark or "")
    assert routes.default_timeout_ms == proc.config.broker_channel_expired_time == 120_000
