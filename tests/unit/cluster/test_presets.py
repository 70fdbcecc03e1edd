"""Cluster presets as RocketMQ ships them (package data of mqtools.cluster)."""

from __future__ import annotations

import pytest

from mqtools.cluster.presets import PresetError, list_presets, load_namesrv_spec, load_preset


def test_presets_match_rocketmq_tables() -> None:
    assert list_presets() == ["1m-2s-controller", "2m-2s-async", "2m-2s-controller", "2m-2s-controller-single",
                              "2m-2s-sync", "2m-noslave"]
    table = {p: [(s.name, s.broker_name, s.broker_id, s.role) for s in load_preset(p)] for p in list_presets()}
    assert table["2m-2s-sync"] == [
        ("broker-a", "broker-a", 0, "SYNC_MASTER"), ("broker-b", "broker-b", 0, "SYNC_MASTER"),
        ("broker-a-s", "broker-a", 1, "SLAVE"), ("broker-b-s", "broker-b", 1, "SLAVE")]
    assert [r[3] for r in table["2m-2s-async"]] == ["ASYNC_MASTER", "ASYNC_MASTER", "SLAVE", "SLAVE"]
    assert table["2m-noslave"] == [("broker-a", "broker-a", 0, "ASYNC_MASTER"),
                                   ("broker-b", "broker-b", 0, "ASYNC_MASTER")]
    for preset in list_presets():
        for spec in load_preset(preset):
            assert spec.props["brokerClusterName"] == "DefaultCluster"
            assert spec.props["flushDiskType"] == "ASYNC_FLUSH"


def test_controller_presets_leave_roles_to_the_controllers() -> None:
    expected = {"2m-2s-controller": (3, ["broker-a-0", "broker-a-1", "broker-b-0", "broker-b-1"]),
                "2m-2s-controller-single": (1, ["broker-a-0", "broker-a-1", "broker-b-0", "broker-b-1"]),
                "1m-2s-controller": (3, ["broker-a-0", "broker-a-1", "broker-a-2"])}
    for preset, (namesrvs, brokers) in expected.items():
        specs = load_preset(preset)
        assert [s.name for s in specs] == brokers
        assert all(s.controlled and s.props["allAckInSyncStateSet"] == "true" for s in specs)
        ns = load_namesrv_spec(preset)
        assert ns.count == namesrvs and ns.with_controller and "namesrvCount" not in ns.props
    assert load_namesrv_spec("2m-2s-sync").count is None and not load_preset("2m-2s-sync")[0].controlled


def test_unknown_preset() -> None:
    with pytest.raises(PresetError, match="unknown preset"):
        load_preset("9m-9s")
