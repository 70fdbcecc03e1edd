"""Typed request/response headers: dataclasses mapped to and from extFields.

Field names are snake_case; on the wire they are RocketMQ's camelCase names
(a `wire` entry in the field metadata overrides the derived name). Fields without a
default are required, as @CFNotNull fields are in RocketMQ. Booleans travel as
"true"/"false" and numbers as decimal strings.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from mqtools.remoting.header_codec import decoder, encoder, fields_of


def wire(name: str, default: Any = dataclasses.MISSING) -> Any:
    """A field whose wire name is not the camelCase form of its Python name."""
    return field(default=default, metadata={"wire": name})


class Header:
    """Mixin for header dataclasses."""

    @classmethod
    def from_ext(cls, ext: dict[str, str]) -> Self:
        """The header from a request's extFields; HeaderError names the field that is missing or wrong."""
        return decoder(cls)(ext)

    def to_ext(self) -> dict[str, str]:
        return encoder(type(self))(self)


# ---------------------------------------------------------------- name server


@dataclass(slots=True)
class RegisterBrokerRequestHeader(Header):
    broker_name: str
    broker_addr: str
    cluster_name: str
    ha_server_addr: str
    broker_id: int
    heartbeat_timeout_millis: int | None = None
    enable_acting_master: bool | None = None
    compressed: bool = False
    body_crc32: int = 0


@dataclass(slots=True)
class RegisterBrokerResponseHeader(Header):
    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclass(slots=True)
class UnRegisterBrokerRequestHeader(Header):
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


@dataclass(slots=True)
class GetRouteInfoRequestHeader(Header):
    topic: str
    accept_standard_json_only: bool | None = None


@dataclass(slots=True)
class KVConfigRequestHeader(Header):
    """PUT_KV_CONFIG (with value), GET_KV_CONFIG and DELETE_KV_CONFIG (without)."""

    namespace: str
    key: str
    value: str | None = None


@dataclass(slots=True)
class GetKVConfigResponseHeader(Header):
    value: str | None = None


@dataclass(slots=True)
class GetKVListByNamespaceRequestHeader(Header):
    namespace: str


@dataclass(slots=True)
class GetTopicsByClusterRequestHeader(Header):
    cluster: str


@dataclass(slots=True)
class DeleteTopicFromNamesrvRequestHeader(Header):
    topic: str
    cluster_name: str | None = None


@dataclass(slots=True)
class BrokerNameRequestHeader(Header):
    """WIPE_WRITE_PERM_OF_BROKER and ADD_WRITE_PERM_OF_BROKER."""

    broker_name: str


@dataclass(slots=True)
class WipeWritePermOfBrokerResponseHeader(Header):
    wipe_topic_count: int


@dataclass(slots=True)
class AddWritePermOfBrokerResponseHeader(Header):
    add_topic_count: int


@dataclass(slots=True)
class QueryDataVersionRequestHeader(Header):
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


@dataclass(slots=True)
class QueryDataVersionResponseHeader(Header):
    changed: bool


# ---------------------------------------------------------------- send / pull


@dataclass(slots=True)
class SendMessageRequestHeader(Header):
    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: int
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool | None = None
    batch: bool | None = None
    max_reconsume_times: int | None = None
    broker_name: str | None = None

    #: SEND_MESSAGE_V2 carries the same fields under single-letter names.
    V2_NAMES: ClassVar[dict[str, str]] = {
        "producer_group": "a",
        "topic": "b",
        "default_topic": "c",
        "default_topic_queue_nums": "d",
        "queue_id": "e",
        "sys_flag": "f",
        "born_timestamp": "g",
        "flag": "h",
        "properties": "i",
        "reconsume_times": "j",
        "unit_mode": "k",
        "max_reconsume_times": "l",
        "batch": "m",
        "broker_name": "n",
    }

    @classmethod
    def from_v2(cls, ext: dict[str, str]) -> Self:
        names = {f[0]: f[1] for f in fields_of(cls)}
        return cls.from_ext({names[py]: ext[short] for py, short in cls.V2_NAMES.items() if short in ext})

    def to_v2(self) -> dict[str, str]:
        normal = self.to_ext()
        names = {f[0]: f[1] for f in fields_of(type(self))}
        return {short: normal[names[py]] for py, short in self.V2_NAMES.items() if names[py] in normal}


def send_v2_fields(group: str, topic: str, default_topic: str, default_nums: str, queue_id: int, sys_flag: int,
                   born_ms: int, flag: int, properties: str, *, reconsume_times: int = 0,
                   max_reconsume_times: int | None = None, batch: bool = False) -> dict[str, str]:
    """SEND_MESSAGE_V2's (and SEND_BATCH_MESSAGE's) header under its short names, built directly: every
    send of every producer builds one, so it skips the generic encoder (`to_v2` gives the same)."""
    ext = {"a": group, "b": topic, "c": default_topic, "d": default_nums, "e": str(queue_id), "f": str(sys_flag),
           "g": str(born_ms), "h": str(flag), "i": properties, "j": str(reconsume_times), "k": "false"}
    if max_reconsume_times is not None:
        ext["l"] = str(max_reconsume_times)
    if batch:
        ext["m"] = "true"
    return ext


def parse_send_v2(ext: dict[str, str]) -> SendMessageRequestHeader:
    """SEND_MESSAGE_V2's header straight from its short names (the broker's hot path); anything
    missing or malformed goes through the generic decoder for its exact error."""
    get = ext.get
    try:
        times, unit, max_times, batch = get("j"), get("k"), get("l"), get("m")
        # positional, in declaration order: keywords cost a slots dataclass more than twice the time
        return SendMessageRequestHeader(
            ext["a"], ext["b"], ext["c"], int(ext["d"]), int(ext["e"]), int(ext["f"]), int(ext["g"]),
            int(ext["h"]), get("i"), None if times is None else int(times),
            None if unit is None else unit != "false" and unit.strip().lower() == "true",
            None if batch is None else batch.strip().lower() == "true",
            None if max_times is None else int(max_times), get("n"))
    except (KeyError, ValueError, TypeError):
        return SendMessageRequestHeader.from_v2(ext)


@dataclass(slots=True)
class SendMessageResponseHeader(Header):
    msg_id: str
    queue_id: int
    queue_offset: int
    transaction_id: str | None = None
    batch_uniq_id: str | None = None


@dataclass(slots=True)
class PullMessageRequestHeader(Header):
    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int
    sys_flag: int
    commit_offset: int
    suspend_timeout_millis: int
    sub_version: int
    subscription: str | None = None
    expression_type: str | None = None
    max_msg_bytes: int | None = None


@dataclass(slots=True)
class PullMessageResponseHeader(Header):
    suggest_which_broker_id: int
    next_begin_offset: int
    min_offset: int
    max_offset: int


# ---------------------------------------------------------------- offsets and lookups


@dataclass(slots=True)
class QueryConsumerOffsetRequestHeader(Header):
    consumer_group: str
    topic: str
    queue_id: int
    set_zero_if_not_found: bool | None = None


@dataclass(slots=True)
class UpdateConsumerOffsetRequestHeader(Header):
    consumer_group: str
    topic: str
    queue_id: int
    commit_offset: int


@dataclass(slots=True)
class QueueRequestHeader(Header):
    """GET_MAX_OFFSET, GET_MIN_OFFSET and GET_EARLIEST_MSG_STORETIME."""

    topic: str
    queue_id: int


@dataclass(slots=True)
class OffsetResponseHeader(Header):
    """QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET and SEARCH_OFFSET_BY_TIMESTAMP."""

    offset: int


@dataclass(slots=True)
class SearchOffsetRequestHeader(Header):
    topic: str
    queue_id: int
    timestamp: int
    boundary_type: str | None = None


@dataclass(slots=True)
class GetEarliestMsgStoretimeResponseHeader(Header):
    timestamp: int


#: QUERY_MESSAGE ext field: "true" asks for a lookup by unique key (msgId) rather than by KEYS.
UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"


@dataclass(slots=True)
class QueryMessageRequestHeader(Header):
    topic: str
    key: str
    max_num: int
    begin_timestamp: int
    end_timestamp: int


@dataclass(slots=True)
class QueryMessageResponseHeader(Header):
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


@dataclass(slots=True)
class ViewMessageRequestHeader(Header):
    offset: int
    topic: str | None = None


# ---------------------------------------------------------------- clients


@dataclass(slots=True)
class UnregisterClientRequestHeader(Header):
    client_id: str = wire("clientID")
    producer_group: str | None = None
    consumer_group: str | None = None


@dataclass(slots=True)
class ConsumerGroupRequestHeader(Header):
    """GET_CONSUMER_LIST_BY_GROUP, NOTIFY_CONSUMER_IDS_CHANGED, GET_CONSUMER_CONNECTION_LIST."""

    consumer_group: str


@dataclass(slots=True)
class GetProducerConnectionListRequestHeader(Header):
    producer_group: str


@dataclass(slots=True)
class QueryConsumeQueueRequestHeader(Header):
    """QUERY_CONSUME_QUEUE (mqadmin queryCq); only the topic is required, as Apache's header has no @CFNotNull."""

    topic: str
    queue_id: int = 0
    index: int = 0
    count: int = 0
    consumer_group: str | None = None


@dataclass(slots=True)
class ConsumerSendMsgBackRequestHeader(Header):
    offset: int
    group: str
    delay_level: int
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None


# ---------------------------------------------------------------- admin


@dataclass(slots=True)
class CreateTopicRequestHeader(Header):
    topic: str
    default_topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_filter_type: str
    topic_sys_flag: int | None = None
    order: bool = False
    attributes: str | None = None


@dataclass(slots=True)
class TopicRequestHeader(Header):
    """DELETE_TOPIC_IN_BROKER, GET_TOPIC_STATS_INFO, QUERY_TOPIC_CONSUME_BY_WHO, GET_TOPIC_CONFIG."""

    topic: str


@dataclass(slots=True)
class DeleteSubscriptionGroupRequestHeader(Header):
    group_name: str
    clean_offset: bool = False


@dataclass(slots=True)
class GetConsumeStatsRequestHeader(Header):
    consumer_group: str
    topic: str | None = None


@dataclass(slots=True)
class GetConsumeStatsInBrokerHeader(Header):
    """GET_BROKER_CONSUME_STATS: every group's lag on one broker, or only order topics'."""

    is_order: bool = False


@dataclass(slots=True)
class ResetOffsetRequestHeader(Header):
    topic: str
    group: str
    timestamp: int
    is_force: bool
    queue_id: int = -1
    offset: int | None = None


@dataclass(slots=True)
class GetConsumerStatusRequestHeader(Header):
    topic: str
    group: str
    client_addr: str | None = None


@dataclass(slots=True)
class GetAllTopicConfigResponseHeader(Header):
    total_topic_num: int | None = None


@dataclass(slots=True)
class GetBrokerConfigResponseHeader(Header):
    version: str


@dataclass(slots=True)
class ViewBrokerStatsDataRequestHeader(Header):
    stats_name: str
    stats_key: str
