"""Launcher planning on this machine: free-port picking (binds sockets), broker configs, state files."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
from mqtools.cluster import supervisor as sv
from mqtools.cluster.launcher import UpOptions, plan
from mqtools.common.javaprops import parse_properties
from mqtools.common.tls import TlsMode
from mqtools.proxy.config import ProxyConfig


def test_pick_ports_skips_taken_and_handed_out() -> None:
    with socket.socket() as squat:
        squat.bind(("0.0.0.0", 0))
        squat.listen()
        busy = squat.getsockname()[1]
        taken: set[int] = set()
        got = sv.pick_ports(busy, 2, taken)
        assert got > busy and {got, got + 1} <= taken
        assert sv.pick_ports(got, 1, taken) not in (got, got + 1)


def test_plan_writes_complete_broker_configs(tmp_path: Path) -> None:
    state = plan(UpOptions("2m-2s-sync", tmp_path, namesrv_count=2, base_port=41000,
                           overrides={"mappedFileSizeCommitLog": "1048576"}))
    names = [p.name for p in state.procs]
    assert names == ["namesrv-0", "namesrv-1", "broker-a", "broker-b", "broker-a-s", "broker-b-s"]
    assert state.namesrv_addr.count(";") == 1
    ports = [p.port for p in state.procs] + [p.ha_port for p in state.procs if p.ha_port]
    assert len(ports) == len(set(ports))
    slave = state.find("broker-a-s")
    assert slave is not None
    props = parse_properties((tmp_path / "broker-a-s" / "broker.properties").read_text())
    assert props["brokerRole"] == "SLAVE" and props["brokerId"] == "1" and props["brokerName"] == "broker-a"
    assert props["listenPort"] == str(slave.port) and props["haListenPort"] == str(slave.ha_port)
    assert props["namesrvAddr"] == state.namesrv_addr and props["mappedFileSizeCommitLog"] == "1048576"
    assert "haMasterAddress" not in props  # slaves learn it from their registration result


def test_plan_places_proxies_after_the_brokers_with_the_brokers_settings(tmp_path: Path) -> None:
    state = plan(UpOptions("2m-noslave", tmp_path, base_port=41000, proxies=2, tls=True,
                           overrides={"brokerClusterName": "PxPlan", "maxMessageSize": "65536",
                                      "authenticationEnabled": "true", "authenticationWhitelist": "10"}))
    assert [p.name for p in state.procs] == ["namesrv-0", "broker-a", "broker-b", "proxy-0", "proxy-1"]
    proxies = [p for p in state.procs if p.kind == "proxy"]
    assert [p.role for p in proxies] == [sv.PROXY_ROLE] * 2
    assert proxies[0].port >= 41000 - 1795 and proxies[1].port > proxies[0].port
    assert [p.remoting_port for p in proxies] == [proxies[0].port - 1, proxies[1].port - 1]  # Apache's 8080 beside 8081
    ports = [p.port for p in state.procs] + [p.ha_port or p.remoting_port for p in state.procs
                                             if p.ha_port or p.remoting_port]
    assert len(ports) == len(set(ports))
    assert proxies[0].args[:3] == ["proxy", "start", "-c"]
    conf = json.loads(Path(proxies[0].args[3]).read_text())
    assert conf == {"rocketMQClusterName": "PxPlan", "namesrvAddr": state.namesrv_addr, "proxyMode": "cluster",
                    "grpcServerPort": proxies[0].port,
                    "remotingListenPort": proxies[0].remoting_port, "grpcBindAddress": "127.0.0.1",
                    "useEndpointPortFromRequest": True, "maxMessageSize": "65536",
                    "authenticationEnabled": "true", "tlsCertPath": str(tmp_path / "tls" / "server.pem"),
                    "tlsKeyPath": str(tmp_path / "tls" / "server.key"), "tls.enable": "true",
                    "tls.client.trustCertPath": state.tls_ca, "tls.server.mode": "enforcing"}
    config = ProxyConfig()
    config.apply(conf)  # the proxy takes the file as written
    assert config.tls_enable and config.max_message_size == 65536 and config.authentication_enabled
    assert config.tls_mode is TlsMode.ENFORCING  # TLS only, as the cluster's brokers


def test_proxy_set_keys_go_over_what_the_launcher_writes(tmp_path: Path) -> None:
    state = plan(UpOptions("2m-noslave", tmp_path, base_port=41500, proxies=1,
                           proxy_overrides={"grpcClientConsumerMinLongPollingTimeoutMillis": "1000",
                                            "useEndpointPortFromRequest": "false"}))
    (proxy,) = [p for p in state.procs if p.kind == "proxy"]
    conf = json.loads(Path(proxy.args[3]).read_text())
    config = ProxyConfig()
    config.apply(conf)
    assert config.grpc_client_consumer_min_long_polling_timeout_millis == 1000
    assert config.use_endpoint_port_from_request is False
    assert conf["grpcServerPort"] == proxy.port  # the rest as the launcher writes it


def test_state_round_trip_and_dead_or_reused_pids(tmp_path: Path) -> None:
    state = plan(UpOptions("2m-noslave", tmp_path, base_port=42000))
    me = state.procs[0]
    me.pid = os.getpid()
    me.create_time = 0.0  # not this process's start time: a reused pid must not count as alive
    sv.save_state(tmp_path, state)
    loaded = sv.load_state(tmp_path)
    assert loaded is not None and loaded.namesrv_addr == state.namesrv_addr
    assert [p.name for p in loaded.procs] == [p.name for p in state.procs]
    assert sv.alive(loaded.procs[0]) is None
    assert sv.stop(loaded.procs[1]) == "not running"
    assert sv.load_state(tmp_path / "nothing") is None


def test_a_process_is_known_by_its_start_since_boot_not_by_the_clock(tmp_path: Path) -> None:
    state = plan(UpOptions("2m-noslave", tmp_path, base_port=42000))
    me = state.procs[0]
    me.pid, me.start_ticks = os.getpid(), sv.start_ticks(os.getpid()) or 0
    me.create_time = 0.0  # as if the clock had been stepped since it started
    sv.save_state(tmp_path, state)
    loaded = sv.load_state(tmp_path)
    assert loaded is not None and sv.alive(loaded.procs[0]) is not None
    loaded.procs[0].start_ticks += 1  # another process that was given the same pid
    assert sv.alive(loaded.procs[0]) is None
