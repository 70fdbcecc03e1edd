"""Broker admin requests (RocketMQ's AdminBrokerProcessor): topics, runtime info, topic stats,
broker config, delay offsets.

UPDATE_AND_CREATE_TOPIC, DELETE_TOPIC_IN_BROKER, GET_ALL_TOPIC_CONFIG,
GET_BROKER_RUNTIME_INFO, GET_TOPIC_STATS_INFO, GET_BROKER_CONFIG, UPDATE_BROKER_CONFIG,
GET_ALL_DELAY_OFFSET. Topic changes re-register the broker with the name servers at once
(through the topic manager's change hook); broker config updates apply live and are
written back to the broker's properties file, as RocketMQ's Configuration does.
"""

from __future__ import annotations

import math
import os
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from mqtools.common import topic_attributes as A
from mqtools.common import topics as T
from mqtools.common.javaprops import parse_properties, render_properties
from mqtools.common.open_files import descriptors
from mqtools.common.perm import PERM_MAX
from mqtools.common.tls import TLS_KEY_PREFIX
from mqtools.common.validation import ValidationError, check_queue_nums, check_topic
from mqtools.remoting.bodies import (
    BrokerStatsData,
    BrokerStatsItem,
    GroupList,
    KVTable,
    MessageQueue,
    TopicConfig,
    TopicOffset,
    TopicStatsTable,
)
from mqtools.remoting.codes import PROTOCOL_VERSION, RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import (
    CreateTopicRequestHeader,
    GetAllTopicConfigResponseHeader,
    GetBrokerConfigResponseHeader,
    TopicRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from mqtools.server.broker.auth.config import CONFIG_KEYS as AUTH_CONFIG_KEYS
from mqtools.server.broker.config import MQ_VERSION_DESC, ConfigError
from mqtools.server.broker.context import BrokerContext
from mqtools.server.broker.processors.durable import when_written
from mqtools.server.store.cleanup import used_ratio
from mqtools.server.store.timer.timer_message_store import TimerMessageStore

if TYPE_CHECKING:
    from mqtools.remoting.server import ProcessorResult, RemotingServer
    from mqtools.remoting.transport import RemotingConnection

#: Keys UPDATE_BROKER_CONFIG refuses (RocketMQ's configBlackList plus identity keys that
#: would make the running broker lie about itself, and the security settings: a remote request
#: must not switch ACL off or point the broker at other ACL, key or certificate files).
CONFIG_BLACK_LIST = frozenset({
    "brokerConfigPath", "rocketmqHome", "configBlackList", "storePathRootDir", "storePathCommitLog",
    "listenPort", "haListenPort", "brokerName", "brokerClusterName", "brokerId", "brokerRole", "brokerIP1",
    "aclEnable", "aclFilePath",
}) | AUTH_CONFIG_KEYS  # ACL 2.0 hook: Apache's auth keys are not changed remotely either


def black_listed(key: str) -> bool:
    return key in CONFIG_BLACK_LIST or key.startswith(TLS_KEY_PREFIX)


def disk_figures(path: str) -> dict[str, str]:
    """commitLogDiskRatio (the used fraction of the file system holding `path` as the store judges it, used over
    used plus available: -1 when unreadable) and commitLogDirCapacity as RocketMQ writes it ("Total : 49.1 GiB,
    Free : 10.2 GiB.", Java's getFreeSpace: the reserved blocks too; left out when unreadable), from one read of
    the file system. On a file system whose total is far from used plus available (reserved or unavailable
    blocks), 1 - available/total read 0.76 where Apache's broker reads 0.32, and diagnose called the disk full."""
    try:
        st = os.statvfs(path)
    except OSError:
        return {"commitLogDiskRatio": f"{-1.0:.4f}"}
    total, free = st.f_blocks * st.f_frsize, st.f_bfree * st.f_frsize
    return {"commitLogDiskRatio": f"{used_ratio(st):.4f}",
            "commitLogDirCapacity": f"Total : {_binary_size(total)}, Free : {_binary_size(free)}."}


def _binary_size(n: int) -> str:
    """Bytes in RocketMQ's humanReadableByteCount(n, false) style: 512 B, 1.5 KiB, 49.1 GiB."""
    if n < 1024:
        return f"{n} B"
    exp = min(int(math.log(n, 1024)), 6)
    return f"{n / 1024**exp:.1f} {'KMGTPE'[exp - 1]}iB"


class AdminProcessor:
    def __init__(self, controller: BrokerContext) -> None:
        self.c = controller

    # ------------------------------------------------------------------ topics

    def update_and_create_topic(self, conn: RemotingConnection, req: RemotingCommand) -> ProcessorResult:
        """Answered once every name server has the new route (RocketMQ registers synchronously here)."""
        h = CreateTopicRequestHeader.from_ext(req.ext_fields)
        refused = self._refuse_topic(req, h.topic)
        if refused is not None:
            return refused
        try:
            check_queue_nums(h.read_queue_nums, h.write_queue_nums)
        except ValidationError as exc:
            return req.response(ResponseCode.INVALID_PARAMETER, str(exc))
        if not 0 <= h.perm <= PERM_MAX:
            return req.response(ResponseCode.INVALID_PARAMETER, f"perm {h.perm} is out of range [0, {PERM_MAX}]")
        existing = self.c.topics.select(h.topic)
        try:  # RocketMQ 5's topic attributes, altered as its AttributeUtil does; a refusal is SYSTEM_ERROR there
            modification = A.parse_modification(h.attributes)
            if modification.get(f"+{A.MESSAGE_TYPE}") == "MIXED" and not self.c.config.enable_mixed_message_type:
                return req.response(ResponseCode.INVALID_PARAMETER, "MIXED message type is not supported.")
            attributes = A.alter(existing is None, dict(existing.attributes) if existing else {}, modification)
            if "reserve.time" in {k[1:] for k in modification}:  # a tiered store's; mq's store is not one
                raise A.TopicAttributeError("Update topic reserveTime not supported")
        except A.TopicAttributeError as exc:
            return req.response(ResponseCode.SYSTEM_ERROR, str(exc))
        tc = TopicConfig(
            topic_name=h.topic,
            read_queue_nums=h.read_queue_nums,
            write_queue_nums=h.write_queue_nums,
            perm=h.perm,
            topic_filter_type=h.topic_filter_type or "SINGLE_TAG",
            topic_sys_flag=h.topic_sys_flag or 0,
            order=h.order,
            attributes=attributes,
        )
        self.c.topics.update(tc)
        return self._after_registration(req)

    def get_topic_config(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """GET_TOPIC_CONFIG: one topic's config, attributes included (RocketMQ 5's proxy reads its message
        type here). mq has no static topics, so there is never a queue mapping to add."""
        h = TopicRequestHeader.from_ext(req.ext_fields)
        tc = self.c.topics.select(h.topic)
        if tc is None:
            return req.response(ResponseCode.TOPIC_NOT_EXIST, f"No topic in this broker. topic: {h.topic}")
        return req.response(ResponseCode.SUCCESS, body=tc.to_json())

    def _refuse_topic(self, req: RemotingCommand, topic: str) -> RemotingCommand | None:
        """AdminBrokerProcessor's checks before a topic is created or deleted: the name rules (the name
        becomes a consume queue directory) and the system topics clients may not touch."""
        try:
            check_topic(topic)
        except ValidationError as exc:
            return req.response(ResponseCode.SYSTEM_ERROR, str(exc))
        if self.c.topics.is_system_topic(topic):
            return req.response(ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic.")
        return None

    async def _after_registration(self, req: RemotingCommand) -> RemotingCommand:
        await self.c.topics.until_written()
        await self.c.registrar.kick_and_wait()
        return req.response()

    def delete_topic(self, conn: RemotingConnection, req: RemotingCommand
                     ) -> RemotingCommand | Awaitable[RemotingCommand]:
        h = TopicRequestHeader.from_ext(req.ext_fields)
        refused = self._refuse_topic(req, h.topic)
        if refused is not None:
            return refused
        self.c.topics.delete(h.topic)
        self.c.offsets.remove_topic(h.topic)
        self.c.store.delete_topics({h.topic})
        return when_written(req.response(), self.c.topics)

    def get_all_topic_config(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        header = GetAllTopicConfigResponseHeader(len(self.c.topics.table)).to_ext()
        return req.response(ext_fields=header, body=self.c.topics.encode())

    def get_topic_stats(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = TopicRequestHeader.from_ext(req.ext_fields)
        tc = self.c.topics.select(h.topic)
        if tc is None:
            return req.response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist")
        store = self.c.store
        table = TopicStatsTable()
        for qid in range(tc.write_queue_nums):
            lo = max(store.get_min_offset_in_queue(h.topic, qid), 0)
            hi = max(store.get_max_offset_in_queue(h.topic, qid), 0)
            last = store.get_message_store_timestamp(h.topic, qid, hi - 1) if hi > 0 else 0
            table.offset_table[MessageQueue(h.topic, self.c.config.broker_name, qid)] = TopicOffset(lo, hi, last)
        return req.response(body=table.to_json())

    def query_topic_consume_by_who(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """Groups with an online subscription to the topic or a stored offset for it."""
        h = TopicRequestHeader.from_ext(req.ext_fields)
        groups = set(self.c.consumers.groups_of_topic(h.topic)) | set(self.c.offsets.groups_of_topic(h.topic))
        return req.response(body=GroupList(groups).to_json())

    def view_broker_stats_data(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        h = ViewBrokerStatsDataRequestHeader.from_ext(req.ext_fields)
        stats = self.c.stats
        counter = stats.counter(h.stats_name, h.stats_key, self.c.config.broker_cluster_name)
        if counter is None:
            return req.response(ResponseCode.SYSTEM_ERROR, f"The stats <{h.stats_name}> <{h.stats_key}> not exist")
        data = stats.stats_data(counter)
        body = BrokerStatsData(*(BrokerStatsItem(**data[k]) for k in ("statsMinute", "statsHour", "statsDay")))
        return req.response(body=body.to_json())

    # ------------------------------------------------------------------ runtime info

    def runtime_info(self) -> dict[str, str]:
        c = self.c
        store = c.store
        info: dict[str, str] = {}
        info.update(store.runtime_info())
        info.update(c.stats.runtime_info())
        info.update({
            "brokerVersionDesc": MQ_VERSION_DESC,
            "brokerVersion": str(PROTOCOL_VERSION),
            "brokerActive": "true",
            "commitLogMinOffset": str(store.min_phy_offset),
            "commitLogMaxOffset": str(store.max_phy_offset),
            **disk_figures(c.config.store_path_root_dir),
            "sendThreadPoolQueueSize": "0",
            "sendThreadPoolQueueCapacity": "10000",
            "sendThreadPoolQueueHeadWaitTimeMills": str(c.fast_failure.wait.take_peak()),
            "pullThreadPoolQueueSize": str(len(c.long_polling.table)),
            "pullThreadPoolQueueCapacity": "100000",
            "pullThreadPoolQueueHeadWaitTimeMills": "0",
            "queryThreadPoolQueueSize": "0",
            "queryThreadPoolQueueCapacity": "20000",
            "pageCacheLockTimeMills": "0",
        })
        held = descriptors()  # mq's own figures: a broker out of them refuses new connections and queue files
        if held is not None:
            info["openFileDescriptors"], info["maxOpenFileDescriptors"] = str(held[0]), str(held[1])
        if c.tls.not_after is not None:  # mq's own too: the served certificate's expiry (epoch ms), as renewed
            info["tlsCertificateNotAfter"] = str(int(c.tls.not_after * 1000))
        info.setdefault("earliestMessageTimeStamp", str(self._earliest_message_time()))
        if c.front is not None:  # mq's own: front workers configured, serving and started again
            info.update(c.front.runtime_info())
        if c.ha is not None:
            info.update(c.ha.runtime_info())
        info.update(self.timer_runtime_info(getattr(c, "timer", None)))  # timer messages (RIP-43)
        for level, offset in sorted(c.schedule.offset_table.items()):
            max_off = store.get_max_offset_in_queue(T.SCHEDULE_TOPIC, level - 1)
            info[f"scheduleMessageOffset_{level}"] = f"{offset},{max_off}"
        return info

    def _earliest_message_time(self) -> int:
        earliest = 0
        for topic in list(self.c.topics.table):
            for qid in self.c.store.topic_queue_ids(topic):
                ts = self.c.store.get_earliest_message_time(topic, qid)
                if ts > 0 and (earliest == 0 or ts < earliest):
                    earliest = ts
        return earliest

    def get_runtime_info(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        return req.response(body=KVTable(self.runtime_info()).to_json())

    # ------------------------------------------------------------------ broker config

    def get_broker_config(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        c = self.c
        props = c.all_config_properties()
        header = GetBrokerConfigResponseHeader(c.config_version.to_json().decode()).to_ext()
        return req.response(ext_fields=header, body=render_properties(props).encode())

    async def update_broker_config(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        if not req.body:
            return req.response(ResponseCode.SYSTEM_ERROR, "string2Properties error: empty body")
        try:
            props = parse_properties(bytes(req.body).decode("utf-8"))
        except UnicodeDecodeError:
            return req.response(ResponseCode.SYSTEM_ERROR, "string2Properties error: body is not UTF-8")
        refused = sorted(k for k in props if black_listed(k))
        if refused:
            return req.response(ResponseCode.NO_PERMISSION, f"Can not update config in black list: {refused}")
        try:
            await self.c.update_config(props)
        except ConfigError as exc:
            return req.response(ResponseCode.SYSTEM_ERROR, str(exc))
        return req.response()

    def get_all_delay_offset(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        return req.response(body=self.c.schedule.encode())

    # --- timer messages (RIP-43, mqtools/server/store/timer): Apache's AdminBrokerProcessor answers -------

    def get_timer_check_point(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """The timer checkpoint's 56 bytes (TimerCheckpoint.encode), as the broker last took them."""
        service = getattr(self.c, "timer", None)
        if service is None:
            return req.response(ResponseCode.SYSTEM_ERROR, "The checkpoint is null")
        return req.response(body=service.checkpoint.value.encode())

    def get_timer_metrics(self, conn: RemotingConnection, req: RemotingCommand) -> RemotingCommand:
        """The per-topic pending counts, TimerMetricsSerializeWrapper's JSON."""
        service = getattr(self.c, "timer", None)
        if service is None:
            return req.response(ResponseCode.SYSTEM_ERROR, "The timer message store is null")
        return req.response(body=service.metrics.encode())

    @staticmethod
    def timer_runtime_info(service: TimerMessageStore | None) -> dict[str, str]:
        """The timer figures of GET_BROKER_RUNTIME_INFO; zeros without a wheel, as Apache writes them."""
        if service is None:
            return {"timerReadBehind": "0", "timerOffsetBehind": "0", "timerCongestNum": "0",
                    "timerEnqueueTps": "0.0", "timerDequeueTps": "0.0"}
        return service.runtime_info()
    # --- end of timer messages ----------------------------------------------------------------------------


def register(server: RemotingServer, controller: BrokerContext) -> AdminProcessor:
    proc = AdminProcessor(controller)
    server.register(RequestCode.UPDATE_AND_CREATE_TOPIC, proc.update_and_create_topic)
    server.register(RequestCode.DELETE_TOPIC_IN_BROKER, proc.delete_topic)
    server.register(RequestCode.GET_ALL_TOPIC_CONFIG, proc.get_all_topic_config)
    server.register(RequestCode.GET_TOPIC_CONFIG, proc.get_topic_config)
    server.register(RequestCode.GET_TOPIC_STATS_INFO, proc.get_topic_stats)
    server.register(RequestCode.GET_BROKER_RUNTIME_INFO, proc.get_runtime_info)
    server.register(RequestCode.GET_BROKER_CONFIG, proc.get_broker_config)
    server.register(RequestCode.UPDATE_BROKER_CONFIG, proc.update_broker_config)
    server.register(RequestCode.GET_ALL_DELAY_OFFSET, proc.get_all_delay_offset)
    server.register(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, proc.query_topic_consume_by_who)
    server.register(RequestCode.VIEW_BROKER_STATS_DATA, proc.view_broker_stats_data)
    server.register(RequestCode.GET_TIMER_CHECK_POINT, proc.get_timer_check_point)  # timer messages (RIP-43)
    server.register(RequestCode.GET_TIMER_METRICS, proc.get_timer_metrics)
    return proc

