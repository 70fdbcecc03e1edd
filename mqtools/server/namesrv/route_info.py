"""The name server's route tables, as a sans-IO class.

RocketMQ keeps five tables (RouteInfoManager):

- topicQueueTable   topic -> {brokerName -> QueueData}
- brokerAddrTable   brokerName -> BrokerData (cluster, {brokerId -> addr})
- clusterAddrTable  cluster -> {brokerName}
- brokerLiveTable   (cluster, brokerAddr) -> BrokerLiveInfo (last heartbeat, timeout,
                    data version, HA address, the broker's connection)
- filterServerTable (cluster, brokerAddr) -> [filter server addr]

Nothing here touches sockets or clocks: every call that depends on time takes `now_ms`,
and the broker's connection is a handle the caller closes. One event loop owns
the instance, so there are no locks. `route_epoch` changes whenever anything a route
answer depends on changes, which lets the processor cache encoded routes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.log_limiter import LimitedLog
from mqtools.common.perm import PERM_READ, PERM_WRITE
from mqtools.common.validation import ROUTE_QUEUE_NUMS_MAX, ValidationError, route_queue_nums_ok
from mqtools.remoting.bodies import (
    BrokerData,
    BrokerLiveEntry,
    BrokerLiveTable,
    ClusterInfo,
    DataVersion,
    QueueData,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
)
from mqtools.remoting.errors import BodyError
from mqtools.remoting.transport import RemotingConnection

DEFAULT_BROKER_CHANNEL_EXPIRED_MS = 120_000
_log = LimitedLog(logging.getLogger(__name__))

BrokerAddrInfo = tuple[str, str]  # (clusterName, brokerAddr)


@dataclass(slots=True)
class BrokerLiveInfo:
    last_update_timestamp: int
    heartbeat_timeout_millis: int
    data_version: DataVersion
    ha_server_addr: str
    channel: RemotingConnection | None = None


@dataclass(slots=True)
class RegisterBrokerResult:
    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclass(slots=True)
class UnregisterRequest:
    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int


@dataclass
class RouteInfoManager:
    default_timeout_ms: int = DEFAULT_BROKER_CHANNEL_EXPIRED_MS
    delete_topic_with_broker_registration: bool = False
    topic_queue_table: dict[str, dict[str, QueueData]] = field(default_factory=dict)
    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, set[str]] = field(default_factory=dict)
    broker_live_table: dict[BrokerAddrInfo, BrokerLiveInfo] = field(default_factory=dict)
    filter_server_table: dict[BrokerAddrInfo, list[str]] = field(default_factory=dict)
    route_epoch: int = 0
    #: Called with the key of each broker that leaves broker_live_table, however it leaves (unregistered, its
    #: connection closed, expired, refused as stale), so what the caller keeps per broker goes with it.
    on_broker_removed: Callable[[BrokerAddrInfo], None] | None = field(default=None, repr=False, compare=False)

    def _touch(self) -> None:
        self.route_epoch += 1

    def _remove_live(self, key: BrokerAddrInfo) -> None:
        if self.broker_live_table.pop(key, None) is not None and self.on_broker_removed is not None:
            self.on_broker_removed(key)

    # ------------------------------------------------------------------ registration

    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        topic_config_wrapper: TopicConfigSerializeWrapper | None,
        filter_server_list: list[str] | None,
        now_ms: int,
        *,
        timeout_ms: int | None = None,
        channel: RemotingConnection | None = None,
    ) -> RegisterBrokerResult:
        """A broker's registration (every heartbeat is one): updates all five tables, or none of them (BodyError);
        topics whose queue counts a route cannot carry are left out."""
        wrapper = topic_config_wrapper or TopicConfigSerializeWrapper()
        table = _checked_topic_configs(wrapper.topic_config_table)
        version = _checked_version(wrapper.data_version)
        names = self.cluster_addr_table.setdefault(cluster_name, set())
        if broker_name not in names:
            names.add(broker_name)
            self._touch()
        broker_data = self.broker_addr_table.get(broker_name)
        register_first = broker_data is None
        if broker_data is None:
            broker_data = BrokerData(cluster=cluster_name, broker_name=broker_name)
            self.broker_addr_table[broker_name] = broker_data
            self._touch()
        addrs = broker_data.broker_addrs
        # One address, one id: a slave switched to master first loses its old id.
        for old_id in [i for i, a in addrs.items() if a == broker_addr and i != broker_id]:
            del addrs[old_id]
            self._touch()
        refused = self._refuse_stale(cluster_name, broker_addr, broker_id, addrs, version)
        if refused:
            return RegisterBrokerResult()
        old_addr = addrs.get(broker_id)
        if old_addr != broker_addr:
            addrs[broker_id] = broker_addr
            self._touch()
        register_first = register_first or not old_addr
        if broker_id == MASTER_ID and table is not None:  # Apache skips a null table too
            self._take_topic_configs(cluster_name, broker_addr, broker_name, table, version, register_first)
        key = (cluster_name, broker_addr)
        self.broker_live_table[key] = BrokerLiveInfo(
            last_update_timestamp=now_ms,
            heartbeat_timeout_millis=self.default_timeout_ms if timeout_ms is None else timeout_ms,
            data_version=version,
            ha_server_addr=ha_server_addr,
            channel=channel,
        )
        self._set_filter_servers(key, filter_server_list)
        return self._slave_result(cluster_name, broker_id, broker_data)

    def _refuse_stale(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_id: int,
        addrs: dict[int, str],
        version: DataVersion,
    ) -> bool:
        """A different address claiming a taken id with an older state version is ignored."""
        old_addr = addrs.get(broker_id)
        if old_addr is None or old_addr == broker_addr:
            return False
        old = self.broker_live_table.get((cluster_name, old_addr))
        if old is not None and old.data_version.state_version > version.state_version:
            self._remove_live((cluster_name, broker_addr))
            return True
        return False

    def _take_topic_configs(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        table: dict[str, TopicConfig],
        version: DataVersion,
        register_first: bool,
    ) -> None:
        """Masters own the topic configs; they are read when new or when the data version moved."""
        if self.delete_topic_with_broker_registration:
            for topic in self._topics_of_broker(broker_name) - set(table):
                self._remove_queue_data(topic, broker_name)
        version_changed = self.is_broker_topic_config_changed(cluster_name, broker_addr, version)
        for topic_config in table.values():
            if register_first or version_changed or not self._has_queue_data(topic_config.topic_name, broker_name):
                self._create_or_update_queue_data(broker_name, topic_config)

    def _slave_result(self, cluster_name: str, broker_id: int, broker_data: BrokerData) -> RegisterBrokerResult:
        result = RegisterBrokerResult()
        if broker_id == MASTER_ID:
            return result
        master_addr = broker_data.broker_addrs.get(MASTER_ID)
        if master_addr is None:
            return result
        master_live = self.broker_live_table.get((cluster_name, master_addr))
        if master_live is not None:
            result.ha_server_addr = master_live.ha_server_addr
            result.master_addr = master_addr
        return result

    def _set_filter_servers(self, key: BrokerAddrInfo, servers: list[str] | None) -> None:
        if servers is None:
            return
        if not servers:
            if self.filter_server_table.pop(key, None) is not None:
                self._touch()
        elif self.filter_server_table.get(key) != servers:
            self.filter_server_table[key] = list(servers)
            self._touch()

    def _has_queue_data(self, topic: str, broker_name: str) -> bool:
        return broker_name in self.topic_queue_table.get(topic, {})

    def _topics_of_broker(self, broker_name: str) -> set[str]:
        return {t for t, qmap in self.topic_queue_table.items() if broker_name in qmap}

    def _create_or_update_queue_data(self, broker_name: str, tc: TopicConfig) -> None:
        qd = QueueData(
            broker_name=broker_name,
            read_queue_nums=tc.read_queue_nums,
            write_queue_nums=tc.write_queue_nums,
            perm=tc.perm,
            topic_sys_flag=tc.topic_sys_flag,
        )
        qmap = self.topic_queue_table.setdefault(tc.topic_name, {})
        if qmap.get(broker_name) != qd:
            qmap[broker_name] = qd
            self._touch()

    def _remove_queue_data(self, topic: str, broker_name: str) -> None:
        qmap = self.topic_queue_table.get(topic)
        if qmap is None:
            return
        if qmap.pop(broker_name, None) is not None:
            self._touch()
        if not qmap:
            del self.topic_queue_table[topic]
            self._touch()

    def is_broker_topic_config_changed(self, cluster_name: str, broker_addr: str, version: DataVersion) -> bool:
        prev = self.query_broker_topic_config(cluster_name, broker_addr)
        return prev is None or not _same_version(prev, version)

    def query_broker_topic_config(self, cluster_name: str, broker_addr: str) -> DataVersion | None:
        live = self.broker_live_table.get((cluster_name, broker_addr))
        return live.data_version if live is not None else None

    def update_broker_info_update_timestamp(self, cluster_name: str, broker_addr: str, now_ms: int) -> None:
        live = self.broker_live_table.get((cluster_name, broker_addr))
        if live is not None:
            live.last_update_timestamp = now_ms

    # ------------------------------------------------------------------ removal

    def unregister_broker(self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int) -> None:
        self.unregister_brokers([UnregisterRequest(cluster_name, broker_addr, broker_name, broker_id)])

    def unregister_brokers(self, requests: list[UnregisterRequest]) -> None:
        """Drop brokers from all five tables: empty BrokerData, empty clusters, queue-less topics go too."""
        removed_names: set[str] = set()
        for req in requests:
            key = (req.cluster_name, req.broker_addr)
            self._remove_live(key)
            if self.filter_server_table.pop(key, None) is not None:
                self._touch()
            broker_data = self.broker_addr_table.get(req.broker_name)
            if broker_data is None:
                continue
            addrs = broker_data.broker_addrs
            for bid in [i for i, a in addrs.items() if a == req.broker_addr]:
                del addrs[bid]
                self._touch()
            if addrs:
                continue
            del self.broker_addr_table[req.broker_name]
            self._touch()
            names = self.cluster_addr_table.get(req.cluster_name)
            if names is not None:
                names.discard(req.broker_name)
                if not names:
                    del self.cluster_addr_table[req.cluster_name]
            removed_names.add(req.broker_name)
        for topic in list(self.topic_queue_table):
            for name in removed_names:
                self._remove_queue_data(topic, name)

    def _unregister_request_for(self, key: BrokerAddrInfo) -> UnregisterRequest | None:
        cluster_name, broker_addr = key
        for broker_data in self.broker_addr_table.values():
            if broker_data.cluster != cluster_name:
                continue
            for bid, addr in broker_data.broker_addrs.items():
                if addr == broker_addr:
                    return UnregisterRequest(cluster_name, broker_addr, broker_data.broker_name, bid)
        return None

    def on_broker_gone(self, key: BrokerAddrInfo) -> None:
        """The broker's connection ended or expired: unregister it as if it had asked."""
        req = self._unregister_request_for(key)
        if req is not None:
            self.unregister_brokers([req])
        else:
            self._remove_live(key)
            self.filter_server_table.pop(key, None)

    def on_channel_destroy(self, channel: RemotingConnection) -> bool:
        """A connection closed; True when brokers had registered over it (now all removed).

        RocketMQ drops only the first broker it finds for the channel; a tool that
        registers several brokers over one connection would leave the others behind.
        """
        keys = [key for key, live in self.broker_live_table.items() if live.channel is channel]
        for key in keys:
            self.on_broker_gone(key)
        return bool(keys)

    def scan_not_active_broker(self, now_ms: int) -> list[RemotingConnection]:
        """Remove brokers whose last heartbeat is older than their timeout; return their channels to close.

        Like RocketMQ, a broker expires only once `last + timeout < now`: at exactly
        `last + timeout` it is still alive.
        """
        expired = [
            (key, live)
            for key, live in self.broker_live_table.items()
            if live.last_update_timestamp + live.heartbeat_timeout_millis < now_ms
        ]
        channels = []
        for key, live in expired:
            if live.channel is not None:
                channels.append(live.channel)
            self.on_broker_gone(key)
        return channels

    # ------------------------------------------------------------------ topics

    def pickup_topic_route_data(self, topic: str) -> TopicRouteData | None:
        qmap = self.topic_queue_table.get(topic)
        if not qmap:
            return None
        route = TopicRouteData(queue_datas=[_copy_qd(qd) for qd in qmap.values()])
        for broker_name in qmap:
            broker_data = self.broker_addr_table.get(broker_name)
            if broker_data is None:
                continue
            clone = BrokerData(broker_data.cluster, broker_data.broker_name, dict(broker_data.broker_addrs))
            route.broker_datas.append(clone)
            if not self.filter_server_table:
                continue
            for addr in clone.broker_addrs.values():
                servers = self.filter_server_table.get((clone.cluster, addr))
                if servers is not None:
                    route.filter_server_table[addr] = list(servers)
        if not route.broker_datas:
            return None
        return route

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        if not cluster_name:
            if self.topic_queue_table.pop(topic, None) is not None:
                self._touch()
            return
        for broker_name in self.cluster_addr_table.get(cluster_name, set()):
            self._remove_queue_data(topic, broker_name)

    def register_topic(self, topic: str, queue_datas: list[QueueData]) -> bool:
        """REGISTER_TOPIC_IN_NAMESRV: only for brokers already known; ValidationError for queue counts out of
        range, before any table changes."""
        if not queue_datas or any(qd.broker_name not in self.broker_addr_table for qd in queue_datas):
            return False
        for qd in queue_datas:
            _check_queue_nums(topic, qd.read_queue_nums, qd.write_queue_nums)
        qmap = self.topic_queue_table.setdefault(topic, {})
        for qd in queue_datas:
            qmap[qd.broker_name] = _copy_qd(qd)
        self._touch()
        return True

    def get_all_topic_list(self) -> TopicList:
        return TopicList(topic_list=set(self.topic_queue_table))

    def get_topics_by_cluster(self, cluster: str) -> TopicList:
        names = self.cluster_addr_table.get(cluster)
        if not names:  # not a scan of every topic for a cluster nobody registered
            return TopicList()
        topics = {t for t, qmap in self.topic_queue_table.items() if names & qmap.keys()}
        return TopicList(topic_list=topics)

    def get_system_topic_list(self) -> TopicList:
        """Cluster and broker names double as system topics, as RocketMQ answers them."""
        topics: set[str] = set()
        for cluster, names in self.cluster_addr_table.items():
            topics.add(cluster)
            topics |= names
        out = TopicList(topic_list=topics)
        for broker_data in self.broker_addr_table.values():
            if broker_data.broker_addrs:
                out.broker_addr = next(iter(broker_data.broker_addrs.values()))
                break
        return out

    def get_all_cluster_info(self) -> ClusterInfo:
        return ClusterInfo(broker_addr_table=self.broker_addr_table, cluster_addr_table=self.cluster_addr_table)

    def wipe_write_perm_of_broker(self, broker_name: str) -> int:
        return self._operate_write_perm(broker_name, wipe=True)

    def add_write_perm_of_broker(self, broker_name: str) -> int:
        return self._operate_write_perm(broker_name, wipe=False)

    def _operate_write_perm(self, broker_name: str, *, wipe: bool) -> int:
        count = 0
        for qmap in self.topic_queue_table.values():
            qd = qmap.get(broker_name)
            if qd is None:
                continue
            qd.perm = qd.perm & ~PERM_WRITE if wipe else PERM_READ | PERM_WRITE
            count += 1
        if count:
            self._touch()
        return count

    # ------------------------------------------------------------------ mq private

    def broker_live_table_body(self, now_ms: int) -> BrokerLiveTable:
        """GET_BROKER_LIVE_TABLE (private): who heartbeats, when, with which version and HA address."""
        names = {
            (bd.cluster, addr): (bd.broker_name, bid)
            for bd in self.broker_addr_table.values()
            for bid, addr in bd.broker_addrs.items()
        }
        rows = []
        for (cluster, addr), live in sorted(self.broker_live_table.items()):
            broker_name, broker_id = names.get((cluster, addr), ("", -1))
            rows.append(
                BrokerLiveEntry(
                    broker_addr=addr,
                    cluster_name=cluster,
                    broker_name=broker_name,
                    broker_id=broker_id,
                    last_update_timestamp=live.last_update_timestamp,
                    heartbeat_timeout_millis=live.heartbeat_timeout_millis,
                    data_version=live.data_version,
                    ha_server_addr=live.ha_server_addr,
                )
            )
        return BrokerLiveTable(brokers=rows, now=now_ms)


def _checked_topic_configs(table: dict[str, TopicConfig] | None) -> dict[str, TopicConfig] | None:
    """The topic configs of a registration, checked before any table changes: a null entry (or topic name)
    failed halfway, after the broker's address was stored but before its live entry, so nothing expired it.
    A topic whose queue counts a route cannot carry (null, negative, above ROUTE_QUEUE_NUMS_MAX; Apache takes any)
    is left out of it, with a line: the broker and its other topics are registered, as refusing the whole
    registration would take every route of an Apache broker away for one odd topic."""
    if table is None:
        return None
    bad: list[str] = []
    for key, topic_config in table.items():
        if topic_config is None or not isinstance(topic_config.topic_name, str):
            raise BodyError(f"the topic config of {str(key)[:200]!r} is null or has no topic name")
        if not route_queue_nums_ok(topic_config.read_queue_nums, topic_config.write_queue_nums):
            bad.append(key)
    if not bad:
        return table
    _log.warning("queue-nums", "a broker registered %d topic(s) whose queue counts a route cannot carry, not "
                 "served: %s", len(bad), ", ".join(f"{k[:100]} ({table[k].read_queue_nums}/"
                                                   f"{table[k].write_queue_nums})" for k in bad[:5]))
    left_out = set(bad)
    return {k: v for k, v in table.items() if k not in left_out}


def _check_queue_nums(topic: str, read: int | None, write: int | None) -> None:
    """REGISTER_TOPIC_IN_NAMESRV's check: ValidationError naming the topic for counts a route cannot carry."""
    if not route_queue_nums_ok(read, write):
        raise ValidationError(f"topic {topic[:200]!r}: readQueueNums {read} and writeQueueNums {write} must be "
                              f"0 to {ROUTE_QUEUE_NUMS_MAX}")


def _checked_version(version: DataVersion | None) -> DataVersion:
    """A registration's data version (none: the first one's); a null field in it is refused before any table
    changes, as the stale check and the change check compare them."""
    if version is None:
        return DataVersion()
    if None in (version.timestamp, version.counter, version.state_version):
        raise BodyError("the data version has a null field")
    return version


def _copy_qd(qd: QueueData) -> QueueData:
    return QueueData(qd.broker_name, qd.read_queue_nums, qd.write_queue_nums, qd.perm, qd.topic_sys_flag)


def _same_version(a: DataVersion, b: DataVersion) -> bool:
    """DataVersion.equals in RocketMQ compares timestamp, counter and stateVersion."""
    return (a.timestamp, a.counter, a.state_version) == (b.timestamp, b.counter, b.state_version)
