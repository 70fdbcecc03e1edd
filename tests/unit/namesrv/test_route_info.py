"""The five route tables with a fake clock: registration, slave results, expiry, removal."""

from __future__ import annotations

from mqtools.remoting.bodies import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from mqtools.server.namesrv.route_info import RouteInfoManager

T0 = 1_000_000


def wrapper(*topics: str, version: int = 1, queues: int = 4, perm: int = 6) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        topic_config_table={t: TopicConfig(t, queues, queues, perm) for t in topics},
        data_version=DataVersion(timestamp=version, counter=version),
    )


def register(rim: RouteInfoManager, name: str, bid: int, addr: str, *topics: str, now: int = T0,
             version: int = 1, cluster: str = "C", channel: object = None, queues: int = 4,
             ha: str | None = None) -> object:
    return rim.register_broker(cluster, addr, name, bid, ha or addr + "-ha", wrapper(*topics, version=version,
                               queues=queues), [], now, channel=channel)


def assert_empty(rim: RouteInfoManager) -> None:
    assert (rim.topic_queue_table, rim.broker_addr_table, rim.cluster_addr_table, rim.broker_live_table,
            rim.filter_server_table) == ({}, {}, {}, {}, {})


def test_master_registration_fills_all_tables() -> None:
    rim = RouteInfoManager()
    result = register(rim, "b1", 0, "h:1", "T1", "T2")
    assert result.master_addr is None and result.ha_server_addr is None  # type: ignore[attr-defined]
    assert set(rim.topic_queue_table) == {"T1", "T2"}
    assert rim.broker_addr_table["b1"].broker_addrs == {0: "h:1"}
    assert rim.cluster_addr_table == {"C": {"b1"}}
    live = rim.broker_live_table[("C", "h:1")]
    assert live.last_update_timestamp == T0 and live.heartbeat_timeout_millis == 120_000
    route = rim.pickup_topic_route_data("T1")
    assert route is not None and route.queue_datas[0].read_queue_nums == 4
    assert route.broker_datas[0].broker_addrs == {0: "h:1"}
    assert rim.pickup_topic_route_data("nope") is None


def test_slave_gets_master_and_master_ha_address() -> None:
    rim = RouteInfoManager()
    register(rim, "b1", 0, "h:1", "T1", ha="h:1-HA")
    result = register(rim, "b1", 1, "h:2", "T1")
    assert result.master_addr == "h:1" and result.ha_server_addr == "h:1-HA"  # type: ignore[attr-defined]
    assert rim.broker_addr_table["b1"].broker_addrs == {0: "h:1", 1: "h:2"}


def test_slave_without_master_gets_nothing_and_its_topics_are_ignored() -> None:
    rim = RouteInfoManager()
    result = register(rim, "b1", 1, "h:2", "SLAVE_ONLY")
    assert result.master_addr is None and result.ha_server_addr is None  # type: ignore[attr-defined]
    assert rim.topic_queue_table == {}


def test_topic_config_taken_only_when_data_version_changes() -> None:
    rim = RouteInfoManager()
    register(rim, "b1", 0, "h:1", "T1", version=1, queues=4)
    register(rim, "b1", 0, "h:1", "T1", version=1, queues=8)  # same version: ignored
    assert rim.topic_queue_table["T1"]["b1"].write_queue_nums == 4
    register(rim, "b1", 0, "h:1", "T1", version=2, queues=8)  # new version: taken
    assert rim.topic_queue_table["T1"]["b1"].write_queue_nums == 8


def test_expiry_exactly_after_the_timeout_not_before() -> None:
    rim = RouteInfoManager(default_timeout_ms=120_000)
    channel = object()
    register(rim, "b1", 0, "h:1", "T1", now=T0, channel=channel)
    assert rim.scan_not_active_broker(T0 + 120_000) == []
    assert ("C", "h:1") in rim.broker_live_table
    assert rim.scan_not_active_broker(T0 + 120_001) == [channel]
    assert_empty(rim)


def test_heartbeat_moves_the_deadline_and_per_broker_timeout_wins() -> None:
    rim = RouteInfoManager()
    register(rim, "b1", 0, "h:1", "T1", now=T0)
    register(rim, "b1", 0, "h:1", "T1", now=T0 + 100_000)
    assert rim.scan_not_active_broker(T0 + 200_000) == []
    rim.register_broker("C", "h:9", "b9", 0, "", wrapper("T9"), None, T0, timeout_ms=1000)
    rim.scan_not_active_broker(T0 + 1001)
    assert "b9" not in rim.broker_addr_table and "T9" not in rim.topic_queue_table
    assert "b1" in rim.broker_addr_table


def test_unregister_cleans_all_five_tables() -> None:
    rim = RouteInfoManager()
    rim.register_broker("C", "h:1", "b1", 0, "ha", wrapper("T1", "SHARED"), ["fs:1"], T0)
    register(rim, "b2", 0, "h:2", "SHARED", cluster="C2")
    assert rim.filter_server_table == {("C", "h:1"): ["fs:1"]}
    assert rim.pickup_topic_route_data("T1").filter_server_table == {"h:1": ["fs:1"]}  # type: ignore[union-attr]
    rim.unregister_broker("C", "h:1", "b1", 0)
    assert "T1" not in rim.topic_queue_table  # last broker of the topic went
    assert set(rim.topic_queue_table["SHARED"]) == {"b2"}
    assert "b1" not in rim.broker_addr_table and "C" not in rim.cluster_addr_table
    assert rim.filter_server_table == {} and ("C", "h:1") not in rim.broker_live_table
    rim.unregister_broker("C2", "h:2", "b2", 0)
    assert_empty(rim)


def test_slave_leaving_keeps_the_broker_and_its_topics() -> None:
    rim = RouteInfoManager()
    register(rim, "b1", 0, "h:1", "T1")
    register(rim, "b1", 1, "h:2", "T1")
    rim.unregister_broker("C", "h:2", "b1", 1)
    assert rim.broker_addr_table["b1"].broker_addrs == {0: "h:1"}
    assert "T1" in rim.topic_queue_table and rim.cluster_addr_table == {"C": {"b1"}}


def test_master_leaving_keeps_the_slave_in_the_route() -> None:
    rim = RouteInfoManager()
    register(rim, "b1", 0, "h:1", "T1")
    register(rim, "b1", 1, "h:2", "T1")
    rim.unregister_broker("C", "h:1", "b1", 0)
    route = rim.pickup_topic_route_data("T1")
    assert route is not None and route.broker_datas[0].broker_addrs == {1: "h:2"}


def test_closed_channel_unregisters_its_broker_at_once() -> None:
    rim = RouteInfoManager()
    ch1, ch2 = object(), object()
    register(rim, "b1", 0, "h:1", "T1", channel=ch1)
    register(rim, "b2", 0, "h:2", "T1", channel=ch2)
    assert rim.on_channel_destroy(object()) is False
    assert rim.on_channel_destroy(ch1) is True
    assert set(rim.topic_queue_table["T1"]) == {"b2"} and "b1" not in rim.broker_addr_table


def test_closed_channel_removes_every_broker_registered_over_it() -> None:
    rim = RouteInfoManager()
    shared = object()
    register(rim, "b1", 0, "h:1", "T1", channel=shared)
    register(rim, "b1", 1, "h:2", "T1", channel=shared)
    register(rim, "b2", 0, "h:3", "T2", channel=shared)
    assert rim.on_channel_destroy(shared) is True
    assert_empty(rim)


def test_slave_promoted_to_master_keeps_one_entry_per_address() -> None:
    rim = RouteInfoManager()
    register(rim, "b1", 1, "h:2", "T1")
    register(rim, "b1", 0, "h:2", "T1", version=2)
    assert rim.broker_addr_table["b1"].broker_addrs == {0: "h:2"}
    assert "T1" in rim.topic_queue_table


def test_write_perm_wipe_and_add() -> None:
    rim = RouteInfoManager()
    register(rim, "b1", 0, "h:1", "T1", "T2")
    assert rim.wipe_write_perm_of_broker("b1") == 2
    assert rim.topic_queue_table["T1"]["b1"].perm == 4
    assert rim.add_write_perm_of_broker("b1") == 2
    assert rim.topic_queue_table["T2"]["b1"].perm == 6
    assert rim.wipe_write_perm_of_broker("nobody") == 0


def test_topic_lists_and_delete() -> None:
    rim = RouteInfoManager()
    register(rim, "b1", 0, "h:1", "T1", "T2", cluster="C1")
    register(rim, "b2", 0, "h:2", "T2", "T3", cluster="C2")
    assert rim.get_all_topic_list().topic_list == {"T1", "T2", "T3"}
    assert rim.get_topics_by_cluster("C2").topic_list == {"T2", "T3"}
    assert rim.get_topics_by_cluster("none").topic_list == set()
    rim.delete_topic("T2", "C1")
    assert set(rim.topic_queue_table["T2"]) == {"b2"}
    rim.delete_topic("T2")
    assert "T2" not in rim.topic_queue_table


def test_route_epoch_changes_with_routes_not_with_heartbeats() -> None:
    rim = RouteInfoManager()
    register(rim, "b1", 0, "h:1", "T1")
    epoch = rim.route_epoch
    register(rim, "b1", 0, "h:1", "T1", now=T0 + 30_000)  # plain heartbeat, same version
    assert rim.route_epoch == epoch
    register(rim, "b1", 0, "h:1", "T1", "T2", version=2)
    assert rim.route_epoch > epoch


def test_broker_live_table_body() -> None:
    rim = RouteInfoManager()
    register(rim, "b1", 0, "h:1", "T1", ha="h:1-HA")
    body = rim.broker_live_table_body(T0 + 5)
    (row,) = body.brokers
    assert (row.broker_name, row.broker_id, row.last_update_timestamp, row.ha_server_addr) == (
        "b1", 0, T0, "h:1-HA"
    )
    assert row.data_version.counter == 1 and body.now == T0 + 5
