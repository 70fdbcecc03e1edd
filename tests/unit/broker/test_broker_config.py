"""Broker config: properties parsing, RocketMQ defaults and start-up rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqtools.common.javaprops import parse_properties
from mqtools.server.broker.app import BrokerController
from mqtools.server.broker.config import (
    BrokerConfig,
    ConfigError,
    load_config,
)
from mqtools.server.broker.consumer_offsets import FLUSH_INTERVAL_S


def test_parse_properties_forms() -> None:
    text = "# comment\n! also\nbrokerName = b1\nbrokerId:2\nlistenPort 10999\nmulti=a\\\n  b\nempty=\n"
    assert parse_properties(text) == {
        "brokerName": "b1", "brokerId": "2", "listenPort": "10999", "multi": "ab", "empty": "",
    }


def test_defaults_follow_rocketmq() -> None:
    cfg = BrokerConfig()
    assert cfg.broker_cluster_name == "DefaultCluster"
    assert cfg.listen_port == 10911 and cfg.effective_ha_port == 10912
    assert cfg.default_topic_queue_nums == 8
    assert cfg.auto_create_topic_enable is True
    assert cfg.broker_role == "ASYNC_MASTER" and cfg.flush_disk_type == "ASYNC_FLUSH"
    assert cfg.message_delay_level.split()[0] == "1s" and len(cfg.message_delay_level.split()) == 18
    assert cfg.max_message_size == 4 * 1024 * 1024
    assert cfg.register_period_s == 30.0


def test_register_period_is_clamped() -> None:
    assert BrokerConfig(register_name_server_period=1000).register_period_s == 10.0
    assert BrokerConfig(register_name_server_period=600_000).register_period_s == 60.0


def test_master_id_forced_to_zero_and_slave_needs_positive_id(tmp_path: Path) -> None:
    f = tmp_path / "b.properties"
    f.write_text("brokerRole=SYNC_MASTER\nbrokerId=3\n")
    assert load_config(f, env={}).broker_id == 0
    f.write_text("brokerRole=SLAVE\nbrokerId=0\n")
    with pytest.raises(ConfigError, match="SLAVE"):
        load_config(f, env={})
    f.write_text("brokerRole=SLAVE\nbrokerId=1\n")
    assert load_config(f, env={}).broker_id == 1


def test_bad_values_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="listenPort"):
        load_config(None, {"listenPort": "abc"}, env={})
    with pytest.raises(ConfigError, match="true or false"):
        load_config(None, {"autoCreateTopicEnable": "yes"}, env={})
    with pytest.raises(ConfigError, match="brokerRole"):
        load_config(None, {"brokerRole": "LEADER"}, env={})
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.properties", env={})
    for workers in ("-1", "65"):
        with pytest.raises(ConfigError, match="frontWorkers must be 0 to 64"):
            load_config(None, {"frontWorkers": workers}, env={})
    assert load_config(None, {"frontWorkers": "3"}, env={}).front_workers == 3


def test_namesrv_list_format_and_env_fallback() -> None:
    with pytest.raises(ConfigError, match="host:port;host:port"):
        load_config(None, {"namesrvAddr": "a:1;nonsense"}, env={})
    cfg = load_config(None, {}, env={"NAMESRV_ADDR": "10.0.0.1:9876;10.0.0.2:9876"})
    assert cfg.namesrv_list() == ["10.0.0.1:9876", "10.0.0.2:9876"]
    cfg = load_config(None, {"namesrvAddr": "h:1"}, env={"NAMESRV_ADDR": "x:2"})
    assert cfg.namesrv_list() == ["h:1"]


def test_unknown_keys_kept_for_the_store_and_round_trip() -> None:
    cfg = load_config(None, {"mappedFileSizeCommitLog": "1048576", "fileReservedTime": "48"}, env={})
    props = cfg.store_properties()
    assert props["mappedFileSizeCommitLog"] == "1048576" and props["fileReservedTime"] == "48"
    assert props["brokerRole"] == "ASYNC_MASTER"
    again = BrokerConfig()
    again.apply(cfg.to_properties())
    assert again.to_properties() == cfg.to_properties()
    assert "brokerIP1" in cfg.to_properties()


def test_flush_consumer_offset_interval_reaches_the_offset_manager(tmp_path: Path) -> None:
    store = {"storePathRootDir": str(tmp_path)}
    assert BrokerController(load_config(None, store, env={})).offsets.flush_interval == FLUSH_INTERVAL_S
    config = load_config(None, {**store, "flushConsumerOffsetInterval": "1500"}, env={})
    assert BrokerController(config).offsets.flush_interval == 1.5
    with pytest.raises(ConfigError, match="flushConsumerOffsetInterval"):
        load_config(None, {"flushConsumerOffsetInterval": "0"}, env={})
