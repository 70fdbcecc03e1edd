"""Request processors of the name server (RocketMQ's DefaultRequestProcessor): remoting requests in,
route tables and KV config out.

Everything is a plain function answering inline, except the requests that must persist
a file (KV config, namesrv config): those update memory at once and await the write,
which runs in a thread; and a REGISTER_BROKER whose body is large and new (a broker's first
registration of 10,000 topics is 1.7 MB of JSON): it is decoded once, through `offload` (a worker
thread), so the name server keeps answering route lookups meanwhile. Registrations and unregistrations
of one broker address still take effect in the order they came, and a registration whose connection
closed while its body was decoded is not applied (the close already dropped that broker).
GET_ROUTEINFO_BY_TOPIC is the hot path: its encoded body is cached per topic and the cache is dropped whenever the route tables or the KV config
change (their epochs), so a steady cluster answers route queries without re-encoding; the topic lists and the
cluster info are cached the same way, per route epoch.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mqtools.common.javaprops import parse_properties
from mqtools.common.tls import masked
from mqtools.common.topics import NAMESPACE_ORDER_TOPIC_CONFIG
from mqtools.common.validation import ValidationError, check_topic
from mqtools.remoting.bodies import DataVersion, RegisterBrokerBody, TopicRouteData
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import (
    AddWritePermOfBrokerResponseHeader,
    BrokerNameRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    KVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from mqtools.remoting.server import Processor, RemotingServer
from mqtools.remoting.transport import RemotingConnection
from mqtools.server.namesrv.config import ConfigError, NamesrvConfig
from mqtools.server.namesrv.kv_config import KVConfigManager
from mqtools.server.namesrv.route_info import BrokerAddrInfo, RouteInfoManager

Clock = Callable[[], int]
Persist = Callable[[], Awaitable[None]]
T = TypeVar("T")
#: Runs a blocking call away from the event loop (asyncio.to_thread; tests pass their own).
Offload = Callable[..., Awaitable[Any]]

#: A registration body at least this large that is not the broker's last one is decoded off the loop (1,000
#: topics are about 170 KB and 4 ms of decode; below this, a few ms at most, the thread hand-off is not worth it).
OFF_LOOP_DECODE_BYTES = 128 * 1024

_APPLY_TOPIC_URL = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."


async def _no_persist() -> None:
    return None


class NamesrvProcessor:
    """Owns no I/O: the app passes the clock (ms) and the two persistence coroutines."""

    def __init__(
        self,
        config: NamesrvConfig,
        routes: RouteInfoManager,
        kv: KVConfigManager,
        clock: Clock,
        *,
        persist_kv: Persist = _no_persist,
        persist_config: Persist = _no_persist,
        offload: Offload = asyncio.to_thread,
    ) -> None:
        self.config = config
        self.routes = routes
        self.kv = kv
        #: (cluster, broker address) -> (crc32, length, decoded body) of its last registration: a broker re-sends
        #: the same topic table every 30 s, and decoding 10,000 topics cost more than the rest of a registration.
        #: Kept only while the broker is in the live table: anyone can register addresses, and brokers change IPs.
        self._bodies: dict[BrokerAddrInfo, tuple[int, int, RegisterBrokerBody]] = {}
        routes.on_broker_removed = self._forget_body
        #: Broker address -> the end of the last registration or unregistration of it still under way (a
        #: body being decoded off the loop): the next one from that address waits for it.
        self._pending: dict[str, asyncio.Future[None]] = {}
        self.offload = offload
        self.clock = clock
        self.persist_kv = persist_kv
        self.persist_config = persist_config
        self._route_cache: dict[str, bytes] = {}
        self._cache_key: tuple[int, int, bool] = (-1, -1, False)
        #: Answer bodies made of the route tables alone (topic lists, cluster info), for `_listings_epoch`: 5,000
        #: topics are 95 KB and 3 ms of encoding an answer, and tools ask for them again and again.
        self._listings: dict[tuple[str, str], bytes] = {}
        self._listings_epoch = -1

    def register(self, server: RemotingServer) -> None:
        table: dict[int, Processor] = {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.QUERY_DATA_VERSION: self.query_data_version,
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.BROKER_HEARTBEAT: self.broker_heartbeat,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic,
            RequestCode.REGISTER_TOPIC_IN_NAMESRV: self.register_topic,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list,
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_config,
            RequestCode.GET_NAMESRV_CONFIG: self.get_config,
            RequestCode.GET_BROKER_LIVE_TABLE: self.get_broker_live_table,
        }
        for code, fn in table.items():
            server.register(code, fn)

    # ------------------------------------------------------------------ KV config

    async def put_kv_config(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = KVConfigRequestHeader.from_ext(req.ext_fields)
        if header.value is None:
            return req.response(ResponseCode.SYSTEM_ERROR, "the custom field <value> is null")
        if header.namespace == NAMESPACE_ORDER_TOPIC_CONFIG:
            try:  # its keys are topics: they end up in route answers
                check_topic(header.key)
            except ValidationError as exc:
                return req.response(ResponseCode.INVALID_PARAMETER, str(exc))
        self.kv.put(header.namespace, header.key, header.value)
        await self.persist_kv()
        return req.response()

    def get_kv_config(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = KVConfigRequestHeader.from_ext(req.ext_fields)
        value = self.kv.get(header.namespace, header.key)
        if value is None:
            remark = f"No config item, Namespace: {header.namespace} Key: {header.key}"
            return req.response(ResponseCode.QUERY_NOT_FOUND, remark)
        return req.response(ext_fields=GetKVConfigResponseHeader(value=value).to_ext())

    async def delete_kv_config(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = KVConfigRequestHeader.from_ext(req.ext_fields)
        self.kv.delete(header.namespace, header.key)
        await self.persist_kv()
        return req.response()

    def get_kv_list_by_namespace(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = GetKVListByNamespaceRequestHeader.from_ext(req.ext_fields)
        body = self.kv.list_namespace(header.namespace)
        if body is None:
            return req.response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {header.namespace}")
        return req.response(body=body)

    # ------------------------------------------------------------------ brokers

    def register_broker(self, conn: RemotingConnection,
                        req: RemotingCommand) -> RemotingCommand | Awaitable[RemotingCommand]:
        header = RegisterBrokerRequestHeader.from_ext(req.ext_fields)
        body = bytes(req.body) if req.body else b""
        crc = zlib.crc32(body) & 0x7FFFFFFF
        if header.body_crc32 and crc != header.body_crc32:
            return req.response(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        if header.compressed:
            return req.response(ResponseCode.SYSTEM_ERROR, "compressed broker registration is not supported")
        addr = header.broker_addr
        if addr not in self._pending:
            reg = self._last_body(header, body, crc)
            if reg is not None or len(body) < OFF_LOOP_DECODE_BYTES:
                return self._apply_registration(conn, req, header, reg or _decode_body(body), crc, len(body))
        return self._in_order(addr, self._register_off_loop(conn, req, header, body, crc))

    async def _register_off_loop(self, conn: RemotingConnection, req: RemotingCommand,
                                 header: RegisterBrokerRequestHeader, body: bytes, crc: int) -> RemotingCommand:
        reg = self._last_body(header, body, crc)
        if reg is None:  # a pure-Python decode holds the GIL in turns: the loop still runs between them
            reg = await self.offload(_decode_body, body)
        if conn is not None and not conn.is_open:  # closed meanwhile: applied now, the broker would come back
            return req.response(ResponseCode.SYSTEM_ERROR, "connection closed during registration")
        return self._apply_registration(conn, req, header, reg, crc, len(body))

    def _apply_registration(self, conn: RemotingConnection, req: RemotingCommand, header: RegisterBrokerRequestHeader,
                            reg: RegisterBrokerBody, crc: int, size: int) -> RemotingCommand:
        """Applies `reg`, then caches it for the broker's next heartbeat if the broker is now live (a registration
        refused as stale, or one that failed, leaves nothing behind)."""
        result = self.routes.register_broker(
            header.cluster_name,
            header.broker_addr,
            header.broker_name,
            header.broker_id,
            header.ha_server_addr,
            reg.topic_config_serialize_wrapper,
            reg.filter_server_list,
            self.clock(),
            timeout_ms=header.heartbeat_timeout_millis,
            channel=conn,
        )
        key = (header.cluster_name, header.broker_addr)
        if key in self.routes.broker_live_table:
            self._bodies[key] = (crc, size, reg)
        ext = RegisterBrokerResponseHeader(result.ha_server_addr, result.master_addr).to_ext()
        order_conf = None
        if self.config.return_order_topic_config_to_broker:
            order_conf = self.kv.list_namespace(NAMESPACE_ORDER_TOPIC_CONFIG)
        return req.response(ext_fields=ext, body=order_conf)

    def _last_body(self, header: RegisterBrokerRequestHeader, body: bytes, crc: int) -> RegisterBrokerBody | None:
        """The last body this broker registered when these bytes are the same (crc32 and length), else None."""
        last = self._bodies.get((header.cluster_name, header.broker_addr))
        return last[2] if last is not None and last[0] == crc and last[1] == len(body) else None

    def _forget_body(self, key: BrokerAddrInfo) -> None:
        """The broker left the live table (however it left): its cached body goes too."""
        self._bodies.pop(key, None)

    async def _in_order(self, addr: str, work: Awaitable[T]) -> T:
        """`work` once every earlier request about `addr` still under way has ended (whatever its outcome)."""
        previous = self._pending.get(addr)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending[addr] = done
        try:
            if previous is not None:
                await asyncio.wait([previous])  # not its exception, nor a cancellation of this one's wait
            return await work
        finally:
            done.set_result(None)
            if self._pending.get(addr) is done:
                del self._pending[addr]

    def unregister_broker(self, conn: RemotingConnection,
                          req: RemotingCommand) -> RemotingCommand | Awaitable[RemotingCommand]:
        h = UnRegisterBrokerRequestHeader.from_ext(req.ext_fields)
        if h.broker_addr in self._pending:  # a registration still decoding must not bring it back afterwards
            return self._in_order(h.broker_addr, self._unregister(req, h))
        return self._unregister_now(req, h)

    async def _unregister(self, req: RemotingCommand, h: UnRegisterBrokerRequestHeader) -> RemotingCommand:
        return self._unregister_now(req, h)

    def _unregister_now(self, req: RemotingCommand, h: UnRegisterBrokerRequestHeader) -> RemotingCommand:
        self.routes.unregister_broker(h.cluster_name, h.broker_addr, h.broker_name, h.broker_id)
        return req.response()

    def broker_heartbeat(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """RocketMQ 5's lightweight heartbeat: only refreshes the broker's timestamp."""
        cluster, addr = req.ext_fields.get("clusterName"), req.ext_fields.get("brokerAddr")
        if cluster is None or addr is None:
            return req.response(ResponseCode.SYSTEM_ERROR, "clusterName and brokerAddr are required")
        self.routes.update_broker_info_update_timestamp(cluster, addr, self.clock())
        return req.response()

    def query_data_version(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = QueryDataVersionRequestHeader.from_ext(req.ext_fields)
        version = DataVersion.from_request(req.body) if req.body else DataVersion()
        changed = self.routes.is_broker_topic_config_changed(h.cluster_name, h.broker_addr, version)
        self.routes.update_broker_info_update_timestamp(h.cluster_name, h.broker_addr, self.clock())
        ours = self.routes.query_broker_topic_config(h.cluster_name, h.broker_addr)
        ext = QueryDataVersionResponseHeader(changed=changed).to_ext()
        return req.response(ext_fields=ext, body=ours.to_json() if ours is not None else None)

    def get_broker_cluster_info(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        return req.response(body=self._listing("clusters", "", lambda: self.routes.get_all_cluster_info().to_json()))

    def wipe_write_perm(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = BrokerNameRequestHeader.from_ext(req.ext_fields)
        count = self.routes.wipe_write_perm_of_broker(h.broker_name)
        return req.response(ext_fields=WipeWritePermOfBrokerResponseHeader(count).to_ext())

    def add_write_perm(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = BrokerNameRequestHeader.from_ext(req.ext_fields)
        count = self.routes.add_write_perm_of_broker(h.broker_name)
        return req.response(ext_fields=AddWritePermOfBrokerResponseHeader(count).to_ext())

    def get_broker_live_table(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        return req.response(body=self.routes.broker_live_table_body(self.clock()).to_json())

    # ------------------------------------------------------------------ topics

    def get_route_info_by_topic(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        topic = req.ext_fields.get("topic")
        if topic is None:
            GetRouteInfoRequestHeader.from_ext(req.ext_fields)  # raises the standard "field is null" error
        key = (self.routes.route_epoch, self.kv.epoch, self.config.order_message_enable)
        if key != self._cache_key:
            self._route_cache.clear()
            self._cache_key = key
        body = self._route_cache.get(topic)  # type: ignore[arg-type]
        if body is None:
            route = self.routes.pickup_topic_route_data(topic)  # type: ignore[arg-type]
            if route is None:
                remark = f"No topic route info in name server for the topic: {topic}{_APPLY_TOPIC_URL}"
                return req.response(ResponseCode.TOPIC_NOT_EXIST, remark)
            body = self._encode_route(topic, route)  # type: ignore[arg-type]
            if len(self._route_cache) < 100_000:
                self._route_cache[topic] = body  # type: ignore[index]
        return req.response(body=body)

    def _encode_route(self, topic: str, route: TopicRouteData) -> bytes:
        if self.config.order_message_enable:
            route.order_topic_conf = self.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, topic)
        return route.to_json()

    def _listing(self, kind: str, key: str, encode: Callable[[], bytes]) -> bytes:
        """The body `encode` makes, encoded once per route epoch as routes are: a client pipelining thousands of
        topic-list requests cost 3 ms of loop each, every other client waiting meanwhile."""
        epoch = self.routes.route_epoch
        if epoch != self._listings_epoch:
            self._listings.clear()
            self._listings_epoch = epoch
        body = self._listings.get((kind, key))
        if body is None:
            body = self._listings[kind, key] = encode()
        return body

    def get_all_topic_list(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        if not self.config.enable_all_topic_list:
            return req.response(ResponseCode.SYSTEM_ERROR, "disable")
        return req.response(body=self._listing("topics", "", lambda: self.routes.get_all_topic_list().to_json()))

    def get_topics_by_cluster(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        if not self.config.enable_topic_list:
            return req.response(ResponseCode.SYSTEM_ERROR, "disable")
        cluster = GetTopicsByClusterRequestHeader.from_ext(req.ext_fields).cluster
        if cluster not in self.routes.cluster_addr_table:  # kept for known clusters only: anyone can ask any name
            return req.response(body=self.routes.get_topics_by_cluster(cluster).to_json())
        body = self._listing("cluster", cluster, lambda: self.routes.get_topics_by_cluster(cluster).to_json())
        return req.response(body=body)

    def get_system_topic_list(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        return req.response(body=self.routes.get_system_topic_list().to_json())

    def delete_topic(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = DeleteTopicFromNamesrvRequestHeader.from_ext(req.ext_fields)
        self.routes.delete_topic(h.topic, h.cluster_name)
        return req.response()

    def register_topic(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        topic = req.ext_fields.get("topic")
        if topic is None:
            return req.response(ResponseCode.SYSTEM_ERROR, "the custom field <topic> is null")
        try:
            check_topic(topic)
        except ValidationError as exc:
            return req.response(ResponseCode.INVALID_PARAMETER, str(exc))
        if req.body:
            route = TopicRouteData.from_request(req.body)
            try:
                self.routes.register_topic(topic, route.queue_datas)
            except ValidationError as exc:
                return req.response(ResponseCode.INVALID_PARAMETER, str(exc))
        return req.response()

    # ------------------------------------------------------------------ namesrv config

    async def update_config(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        if not req.body:
            return req.response()
        try:
            props = parse_properties(bytes(req.body).decode("utf-8"))
        except UnicodeDecodeError:
            return req.response(ResponseCode.SYSTEM_ERROR, "string2Properties error")
        if props.keys() & self.config.black_list():
            return req.response(ResponseCode.NO_PERMISSION, "Can not update config in black list.")
        try:
            self.config.apply(props)
        except ConfigError as exc:
            return req.response(ResponseCode.SYSTEM_ERROR, str(exc))
        self.routes.default_timeout_ms = self.config.broker_channel_expired_time
        self.routes.delete_topic_with_broker_registration = self.config.delete_topic_with_broker_registration
        await self.persist_config()
        return req.response()

    def get_config(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        props = masked(self.config.to_properties())
        body = "".join(f"{k}={v}\n" for k, v in props.items()).encode()
        return req.response(body=body)


def _decode_body(body: bytes) -> RegisterBrokerBody:
    """REGISTER_BROKER's body; an empty one is an empty table (a broker without topics)."""
    return RegisterBrokerBody.from_request(body) if body else RegisterBrokerBody()
