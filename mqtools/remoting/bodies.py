"""Request/response bodies: dataclasses encoded as the JSON RocketMQ peers exchange.

Field names are snake_case in Python and camelCase on the wire (a `wire` metadata entry
overrides). Encoding writes standard JSON (quoted map keys), which fastjson, the C++
client (jsoncpp) and the Go client all read; decoding goes through `fastjson.loads`, so
Java's unquoted numeric keys and object keys are accepted too. Unknown fields are
ignored and missing ones take their defaults, as fastjson does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Self

from mqtools.remoting import fastjson
from mqtools.remoting.body_codec import from_obj, to_obj
from mqtools.remoting.errors import BodyError

#: Largest request body a server parses with the fastjson fallback (about a quarter second of work).
REQUEST_LENIENT_MAX = 256 * 1024


class Body:
    """Mixin: JSON encode/decode for body dataclasses."""

    def to_json(self) -> bytes:
        return fastjson.dumps(to_obj(self))

    @classmethod
    def from_json(cls, data: bytes | bytearray | memoryview | str) -> Self:
        """Decode a peer's body; whatever is wrong with it is the peer's fault, so every failure
        (bad UTF-8 or JSON, wrong shape, missing required field, nesting too deep) is a BodyError."""
        return cls._decode(data, None)

    @classmethod
    def from_request(cls, data: bytes | bytearray | memoryview | str) -> Self:
        """from_json for a request a server handles on its event loop: fastjson-style JSON (unquoted
        numeric or object keys, parsed in pure Python) only up to REQUEST_LENIENT_MAX bytes, so a client
        cannot stall the loop with a large body; standard JSON of any size still takes orjson's path."""
        return cls._decode(data, REQUEST_LENIENT_MAX)

    @classmethod
    def _decode(cls, data: bytes | bytearray | memoryview | str, lenient_max: int | None) -> Self:
        try:
            raw = fastjson.loads(data, lenient_max=lenient_max)
            if not isinstance(raw, dict):
                raise TypeError("not a JSON object")
            return from_obj(cls, raw)
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            raise BodyError(f"bad {cls.__name__} body: {type(exc).__name__}: {str(exc)[:200]}") from None


# ---------------------------------------------------------------- routes and clusters


@dataclass(slots=True)
class QueueData(Body):
    broker_name: str
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 6
    topic_sys_flag: int = 0


@dataclass(slots=True)
class BrokerData(Body):
    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)

    def master_addr(self) -> str | None:
        return self.broker_addrs.get(0)


@dataclass(slots=True)
class TopicRouteData(Body):
    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)
    order_topic_conf: str | None = None


@dataclass(slots=True)
class ClusterInfo(Body):
    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, set[str]] = field(default_factory=dict)


@dataclass(slots=True)
class TopicList(Body):
    topic_list: set[str] = field(default_factory=set)
    broker_addr: str | None = None


@dataclass(slots=True)
class KVTable(Body):
    table: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------- broker registration


@dataclass(slots=True)
class DataVersion(Body):
    timestamp: int = 0
    counter: int = 0
    state_version: int = 0

    def next(self, now_ms: int, state_version: int | None = None) -> DataVersion:
        """The next version; `state_version` (controller mode: the master epoch) replaces the current one."""
        return DataVersion(timestamp=now_ms, counter=self.counter + 1,
                           state_version=self.state_version if state_version is None else state_version)

    def same(self, other: DataVersion | None) -> bool:
        return other is not None and (self.timestamp, self.counter) == (other.timestamp, other.counter)


@dataclass(slots=True)
class TopicConfig(Body):
    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = 6
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class TopicConfigSerializeWrapper(Body):
    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)


@dataclass(slots=True)
class RegisterBrokerBody(Body):
    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = field(
        default_factory=TopicConfigSerializeWrapper
    )
    filter_server_list: list[str] = field(default_factory=list)


@dataclass(slots=True)
class BrokerLiveEntry(Body):
    """One row of mq's private broker-live-table answer (GET_BROKER_LIVE_TABLE)."""

    broker_addr: str
    cluster_name: str
    broker_name: str
    broker_id: int
    last_update_timestamp: int
    heartbeat_timeout_millis: int
    data_version: DataVersion
    ha_server_addr: str


@dataclass(slots=True)
class BrokerLiveTable(Body):
    brokers: list[BrokerLiveEntry] = field(default_factory=list)
    now: int = 0


# ---------------------------------------------------------------- clients


@dataclass(slots=True, frozen=True)
class MessageQueue(Body):
    topic: str
    broker_name: str
    queue_id: int


@dataclass(slots=True)
class SubscriptionData(Body):
    topic: str
    sub_string: str = "*"
    class_filter_mode: bool = False
    tags_set: set[str] = field(default_factory=set)
    code_set: set[int] = field(default_factory=set)
    sub_version: int = 0
    expression_type: str = "TAG"


@dataclass(slots=True)
class ProducerData(Body):
    group_name: str


@dataclass(slots=True)
class ConsumerData(Body):
    group_name: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    subscription_data_set: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False


@dataclass(slots=True)
class HeartbeatData(Body):
    client_id: str = field(default="", metadata={"wire": "clientID"})
    producer_data_set: list[ProducerData] = field(default_factory=list)
    consumer_data_set: list[ConsumerData] = field(default_factory=list)


@dataclass(slots=True)
class ConsumerListBody(Body):
    consumer_id_list: list[str] = field(default_factory=list)


@dataclass(slots=True)
class LockBatchRequestBody(Body):
    """LOCK_BATCH_MQ and UNLOCK_BATCH_MQ requests."""

    consumer_group: str = ""
    client_id: str = ""
    mq_set: set[MessageQueue] = field(default_factory=set)
    only_this_broker: bool = False


@dataclass(slots=True)
class LockBatchResponseBody(Body):
    lock_ok_mq_set: set[MessageQueue] = field(default_factory=set, metadata={"wire": "lockOKMQSet"})


@dataclass(slots=True)
class Connection(Body):
    client_id: str = ""
    client_addr: str = ""
    language: str = "JAVA"
    version: int = 0


@dataclass(slots=True)
class ConsumerConnection(Body):
    connection_set: list[Connection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None


@dataclass(slots=True)
class ProducerConnection(Body):
    connection_set: list[Connection] = field(default_factory=list)


@dataclass(slots=True)
class ProducerInfo(Body):
    """One producer of GET_ALL_PRODUCER_INFO's table; remote_ip as Netty prints an address (/host:port)."""

    client_id: str = ""
    remote_ip: str = field(default="", metadata={"wire": "remoteIP"})
    language: str = "JAVA"
    version: int = 0
    last_update_timestamp: int = 0


@dataclass(slots=True)
class ProducerTableInfo(Body):
    """GET_ALL_PRODUCER_INFO: producer group -> its producers on this broker."""

    data: dict[str, list[ProducerInfo]] = field(default_factory=dict)


@dataclass(slots=True)
class ConsumeQueueData(Body):
    """One consume queue unit as QUERY_CONSUME_QUEUE shows it (the extension fields stay unset: no CQ ext)."""

    physic_offset: int = 0
    physic_size: int = 0
    tags_code: int = 0
    extend_data_json: str | None = None
    bit_map: str | None = None
    eval: bool = False
    msg: str | None = None


@dataclass(slots=True)
class QueryConsumeQueueResponseBody(Body):
    subscription_data: SubscriptionData | None = None
    filter_data: str | None = None
    queue_data: list[ConsumeQueueData] | None = None
    max_queue_index: int = 0
    min_queue_index: int = 0


# ---------------------------------------------------------------- stats and offsets


@dataclass(slots=True)
class TopicOffset(Body):
    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0


@dataclass(slots=True)
class TopicStatsTable(Body):
    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)


@dataclass(slots=True)
class OffsetWrapper(Body):
    broker_offset: int = 0
    consumer_offset: int = 0
    pull_offset: int = 0
    last_timestamp: int = 0


@dataclass(slots=True)
class ConsumeStats(Body):
    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0


@dataclass(slots=True)
class ConsumeStatsList(Body):
    """GET_BROKER_CONSUME_STATS answer: one {group: [ConsumeStats per topic]} map per group."""

    consume_stats_list: list[dict[str, list[ConsumeStats]]] = field(default_factory=list)
    broker_addr: str | None = None
    total_diff: int = 0


@dataclass(slots=True)
class ResetOffsetBody(Body):
    offset_table: dict[MessageQueue, int] = field(default_factory=dict)


# ---------------------------------------------------------------- groups, offsets, delay progress


@dataclass(slots=True)
class SubscriptionGroupConfig(Body):
    """One consumer group's broker-side settings (subscriptionGroup.json, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    consume_message_orderly: bool = False
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    group_sys_flag: int = 0
    consume_timeout_minute: int = 15
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class SubscriptionGroupWrapper(Body):
    """subscriptionGroup.json and the GET_ALL_SUBSCRIPTIONGROUP_CONFIG answer."""

    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)


@dataclass(slots=True)
class ConsumerOffsetSerializeWrapper(Body):
    """consumerOffset.json and the GET_ALL_CONSUMER_OFFSET answer: "topic@group" -> {queueId: offset}."""

    offset_table: dict[str, dict[int, int]] = field(default_factory=dict)


@dataclass(slots=True)
class DelayOffsetSerializeWrapper(Body):
    """delayOffset.json: delay level -> next schedule-queue index to deliver."""

    offset_table: dict[int, int] = field(default_factory=dict)


@dataclass(slots=True)
class MessageQueueForC(Body):
    """One row of ResetOffsetBodyForC: the list form C++ clients parse."""

    topic: str
    broker_name: str
    queue_id: int
    offset: int


@dataclass(slots=True)
class ResetOffsetBodyForC(Body):
    """RESET_CONSUMER_CLIENT_OFFSET body for CPP clients, which cannot read object map keys."""

    offset_table: list[MessageQueueForC] = field(default_factory=list)


# ---------------------------------------------------------------- broker statistics


@dataclass(slots=True)
class GroupList(Body):
    """QUERY_TOPIC_CONSUME_BY_WHO answer: the groups consuming a topic."""

    group_list: set[str] = field(default_factory=set)


@dataclass(slots=True)
class BrokerStatsItem(Body):
    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0


@dataclass(slots=True)
class BrokerStatsData(Body):
    """VIEW_BROKER_STATS_DATA answer: one counter over the last minute, hour and day."""

    stats_minute: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_hour: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_day: BrokerStatsItem = field(default_factory=BrokerStatsItem)


# ---------------------------------------------------------------- ACL 1.0


@dataclass(slots=True, repr=False)
class PlainAccessConfig(Body):
    """One ACL account (RocketMQ's PlainAccessConfig): an entry of plain_acl.yml, what
    UPDATE_AND_CREATE_ACL_CONFIG writes and GET_BROKER_CLUSTER_ACL_CONFIG lists. `secret_key` is None
    wherever a secret must not be held (a tool's view of the accounts)."""

    access_key: str = ""
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] = field(default_factory=list)
    group_perms: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"PlainAccessConfig(access_key={self.access_key!r}, secret_key='***', admin={self.admin})"

    def to_ext(self) -> dict[str, str]:
        """UPDATE_AND_CREATE_ACL_CONFIG's header (CreateAccessConfigRequestHeader): perms comma-joined,
        unset fields left out (the broker keeps them). A white address of "" or a list of blank items is sent
        empty, which clears it, as Java's mqadmin sends `-t ""`."""
        ext = {"accessKey": self.access_key, "secretKey": self.secret_key or "", "admin": str(self.admin).lower()}
        defaults = {"defaultTopicPerm": self.default_topic_perm, "defaultGroupPerm": self.default_group_perm}
        ext.update({k: v for k, v in defaults.items() if v})
        if self.white_remote_address is not None:
            ext["whiteRemoteAddress"] = self.white_remote_address
        lists = {"topicPerms": self.topic_perms, "groupPerms": self.group_perms}
        ext.update({k: ",".join(v) for k, v in lists.items() if v})
        return ext

    @classmethod
    def from_ext(cls, ext: dict[str, str]) -> PlainAccessConfig:
        """The account an UPDATE_AND_CREATE_ACL_CONFIG header carries (the inverse of `to_ext`)."""
        return cls(ext.get("accessKey", ""), ext.get("secretKey", ""), ext.get("whiteRemoteAddress") or None,
                   ext.get("admin", "false").lower() == "true", ext.get("defaultTopicPerm") or None,
                   ext.get("defaultGroupPerm") or None, comma_list(ext.get("topicPerms")),
                   comma_list(ext.get("groupPerms")))


def comma_list(value: str | None) -> list[str]:
    """'a, b,,c' -> ['a', 'b', 'c']: the ACL requests' and mqadmin's comma-separated lists."""
    return [item.strip() for item in (value or "").split(",") if item.strip()]


@dataclass(slots=True)
class AclConfigBody(Body):
    """GET_BROKER_CLUSTER_ACL_CONFIG's body (GetBrokerClusterAclConfigResponseBody)."""

    global_white_addrs: list[str] = field(default_factory=list)
    plain_access_configs: list[PlainAccessConfig] = field(default_factory=list)
