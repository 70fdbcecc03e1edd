"""The admin models' parsers: figures from the server's answers, None where the server gave none."""

from __future__ import annotations

import inspect

from mqtools.client.admin import MQAdmin, SyncMQAdmin
from mqtools.client.admin.base import AdminService
from mqtools.client.admin.client import SERVICES
from mqtools.client.admin.models.brokers import BrokerRow, BrokerRuntime, Heartbeat
from mqtools.client.admin.models.groups import QueueProgress
from mqtools.client.admin.models.ha import HAStatus
from mqtools.remoting.bodies import MessageQueue

MASTER = {
    "master": True, "masterCommitLogMaxOffset": 5000, "inSyncSlaveNums": 1,
    "haConnectionInfo": [
        {"addr": "10.0.0.2:51000", "slaveAckOffset": 4900, "diff": 100, "inSync": True,
         "transferredByteInSecond": 2048, "transferFromWhere": 4900},
        {"addr": "10.0.0.3:51000", "slaveAckOffset": -1, "diff": 5000, "inSync": False,
         "transferredByteInSecond": 0, "transferFromWhere": 0},
    ],
    "haClientRuntimeInfo": {"masterAddr": None, "transferredByteInSecond": 0, "maxOffset": 0,
                            "lastReadTimestamp": 0, "lastWriteTimestamp": 0, "masterFlushOffset": 0,
                            "activated": False},
}
SLAVE = {
    "master": False, "masterCommitLogMaxOffset": 0, "inSyncSlaveNums": 0, "haConnectionInfo": [],
    "haClientRuntimeInfo": {"masterAddr": "10.0.0.1:10912", "transferredByteInSecond": 512, "maxOffset": 4900,
                            "lastReadTimestamp": 1_700_000_000_123, "lastWriteTimestamp": 0,
                            "masterFlushOffset": 0, "activated": True},
}


def test_master_ha_status_has_one_row_per_slave_and_no_figure_for_an_unreported_ack() -> None:
    status = HAStatus.from_json(MASTER)
    assert status.is_master and status.client is None and status.replicating
    assert (status.commitlog_max_offset, status.in_sync_slaves) == (5000, 1)
    first, second = status.slaves
    assert (first.addr, first.ack_offset, first.diff_bytes, first.in_sync, first.transfer_bytes_per_s) == (
        "10.0.0.2:51000", 4900, 100, True, 2048.0)
    assert (second.ack_offset, second.diff_bytes, second.in_sync) == (None, None, False)


def test_slave_ha_status_has_its_client_and_times_of_zero_are_unknown() -> None:
    status = HAStatus.from_json(SLAVE)
    assert not status.is_master and status.slaves == [] and status.replicating
    client = status.client
    assert client is not None
    assert (client.master_addr, client.max_offset, client.last_read_ms, client.last_write_ms, client.activated) == (
        "10.0.0.1:10912", 4900, 1_700_000_000_123, None, True)


def test_ha_status_without_the_master_flag_is_told_by_its_client_info() -> None:
    older = {k: v for k, v in SLAVE.items() if k != "master"}
    assert not HAStatus.from_json(older).is_master
    assert HAStatus.from_json({"haConnectionInfo": []}).is_master


def test_runtime_figures_are_numbers_and_missing_keys_are_none() -> None:
    runtime = BrokerRuntime.from_table({
        "brokerVersionDesc": "V4_9_4", "putTps": "12.50 10.00 8.25", "getTransferedTps": "3.00 2.00 1.00",
        "commitLogMaxOffset": "4096", "commitLogDiskRatio": "0.4321", "putMessageTimesTotal": "4",
        "putMessageSizeTotal": "1000", "msgPutTotalTodayNow": "7", "bootTimestamp": "1700000000000",
        "brokerActive": "true", "earliestMessageTimeStamp": "0", "sendThreadPoolQueueSize": "garbage",
    })
    assert (runtime.version_desc, runtime.put_tps, runtime.get_transferred_tps) == ("V4_9_4", 12.5, 3.0)
    assert (runtime.commitlog_max_offset, runtime.commitlog_disk_ratio, runtime.put_total_today_now) == (
        4096, 0.4321, 7)
    assert runtime.average_message_size == 250.0 and runtime.broker_active is True
    assert runtime.boot_timestamp_ms == 1_700_000_000_000
    assert runtime.earliest_message_ms is None and runtime.send_queue_size is None
    assert runtime.get_found_tps is None and runtime.ha_connection_count is None and runtime.master_addr is None
    assert BrokerRuntime.from_table({}).average_message_size is None


def test_heartbeat_age_is_by_the_name_servers_clock_and_the_freshest_wins() -> None:
    row = BrokerRow("C", "broker-a", 0, "h:1", heartbeats={
        "ns1": Heartbeat("ns1", last_update_ms=1_000, now_ms=31_000, timeout_ms=120_000),
        "ns2": Heartbeat("ns2", last_update_ms=5_000, now_ms=9_000, timeout_ms=120_000),
        "ns3": None,
    })
    assert row.heartbeats["ns1"].age_ms == 30_000 and row.heartbeats["ns1"].expires_in_ms == 90_000  # type: ignore[union-attr]
    assert row.heartbeat_age_ms == 4_000 and row.is_master
    assert BrokerRow("C", "broker-a", 1, "h:2", heartbeats={"ns3": None}).heartbeat_age_ms is None


def test_queue_progress_without_a_committed_offset_counts_the_whole_queue_as_lag() -> None:
    queue = MessageQueue("T", "broker-a", 0)
    assert QueueProgress(queue, 10, None, None).diff == 10
    assert QueueProgress(queue, 10, 4, 1_700_000_000_000).diff == 6
    assert QueueProgress(queue, 10, 12, None).diff == 0


def test_sync_admin_has_every_public_operation_with_the_same_signature() -> None:
    """SyncMQAdmin is derived from the async API: every area's every coroutine method has a blocking twin with
    its signature, and so has every operation of the facade."""
    admin = MQAdmin("127.0.0.1:9876")
    sync = SyncMQAdmin("127.0.0.1:9876")
    try:
        areas = {name: getattr(admin, name) for name in SERVICES}
        assert all(isinstance(service, AdminService) for service in areas.values())
        checked = 0
        for area, service in areas.items():
            for name, fn in inspect.getmembers(service, inspect.iscoroutinefunction):
                if name.startswith("_"):
                    continue
                twin = getattr(getattr(sync, area), name)
                assert not inspect.iscoroutinefunction(twin), (area, name)
                assert inspect.signature(twin) == inspect.signature(fn), (area, name)
                checked += 1
        for name, fn in inspect.getmembers(admin, inspect.iscoroutinefunction):
            if not name.startswith("_") and name != "close":
                assert inspect.signature(getattr(sync, name)) == inspect.signature(fn), name
        assert checked > 80
    finally:
        sync.close()


def test_no_area_service_hides_a_facade_method() -> None:
    """MQAdmin makes its areas when first asked for; one named like a method would never be made."""
    assert len(SERVICES) == 22
    assert set(MQAdmin.__annotations__) == set(SERVICES)  # what type checkers see is what is made
    assert [name for name in SERVICES if hasattr(MQAdmin, name)] == []


def test_a_change_some_name_servers_missed_names_where_it_applied() -> None:
    from mqtools.client.admin.models.configs import WritePermChange, not_everywhere
    from mqtools.client.errors import ConnectFailedError, MQClientError, NoPermissionError, UnreachableError

    down = ConnectFailedError("connect to ns2:9876 failed: [Errno 111] Connection refused")
    change = WritePermChange("broker-a", {"ns1:9876": 3}, {"ns2:9876": down})
    assert change.applied_lines("wiped") == ["ns1:9876: wiped write permission of broker-a on 3 topics"]
    error = change.error()
    assert isinstance(error, UnreachableError) and "(applied on ns1:9876)" in str(error) and "ns2:9876" in str(error)
    assert WritePermChange("broker-a", {"ns1:9876": 3}).error() is None
    refused = not_everywhere([], {"ns1:9876": NoPermissionError(16, "no permission"), "ns2:9876": down})
    assert type(refused) is MQClientError and "(applied on no name server)" in str(refused)
