"""TopicConfigManager: the broker's topic table (config/topics.json) and its data version.

The table holds RocketMQ's system topics (TBW102 when autoCreateTopicEnable, the cluster
and broker-name topics, SCHEDULE_TOPIC_XXXX, ...) plus every created topic. Every change
bumps the data version and is persisted at once; the controller is told through
`on_change` so it can re-register with the name servers (RocketMQ does the same after a
topic is auto-created, so producers see the new route without waiting 30 s).

Auto-creation follows createTopicInSendMessageProcessor: the template topic (normally
TBW102) must exist and carry the INHERIT bit; the new topic gets
min(client's default queue count, template write queues) queues and the template's
permission without INHERIT.

Loading and writing follow the store's ConfigManager; on the send path (auto-create) the
write goes to a thread so the event loop never waits for fsync.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from mqtools.common import topics as T
from mqtools.common.log_limiter import LimitedLog
from mqtools.common.perm import PERM_INHERIT, PERM_READ, PERM_RW, PERM_WRITE, is_inherited
from mqtools.remoting.bodies import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from mqtools.server.broker.config import BrokerConfig
from mqtools.server.store.config_manager import ConfigManager
from mqtools.server.store.delay_levels import DEFAULT_MAX_LEVEL

log = logging.getLogger(__name__)

FILE_NAME = "topics.json"


class TopicConfigManager(ConfigManager):
    def __init__(
        self,
        config_dir: Path,
        broker_config: BrokerConfig,
        clock: Callable[[], float] = time.time,
        max_delay_level: int = DEFAULT_MAX_LEVEL,
    ) -> None:
        super().__init__(Path(config_dir) / FILE_NAME)
        self.cfg = broker_config
        self.clock = clock
        #: Refused auto-creations come from what senders ask for: rate-limited, so a client cannot flood the log.
        self.refusals = LimitedLog(log, clock)
        self.table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion()
        self.on_change: Callable[[], None] | None = None
        self._max_delay_level = max_delay_level
        self._add_system_topics()

    # ------------------------------------------------------------------ persistence

    def _add_system_topics(self) -> None:
        cfg = self.cfg
        system = [
            TopicConfig(T.SELF_TEST_TOPIC, 1, 1),
            TopicConfig(T.BENCHMARK_TOPIC, 1024, 1024),
            TopicConfig(T.OFFSET_MOVED_EVENT, 1, 1),
            TopicConfig(T.SCHEDULE_TOPIC, self._max_delay_level, self._max_delay_level),
            TopicConfig(T.RMQ_SYS_TRANS_HALF_TOPIC, 1, 1),
        ]
        if cfg.auto_create_topic_enable:
            n = cfg.default_topic_queue_nums
            system.append(TopicConfig(T.AUTO_CREATE_TOPIC_KEY, n, n, perm=PERM_INHERIT | PERM_RW))
        # The cluster and broker-name topics always exist (inherit only); RW when enabled.
        cluster_perm = PERM_INHERIT | (PERM_RW if cfg.cluster_topic_enable else 0)
        broker_perm = PERM_INHERIT | (PERM_RW if cfg.broker_topic_enable else 0)
        system.append(TopicConfig(cfg.broker_cluster_name, perm=cluster_perm))
        system.append(TopicConfig(cfg.broker_name, 1, 1, perm=broker_perm))
        if cfg.trace_topic_enable:
            system.append(TopicConfig(cfg.msg_trace_topic_name, 1, 1))
        system.append(TopicConfig(T.reply_topic(cfg.broker_cluster_name), 1, 1))
        for tc in system:
            self.table[tc.topic_name] = tc

    def decode(self, data: bytes) -> None:
        """Merge topics.json; system topics stay as configured."""
        wrapper = TopicConfigSerializeWrapper.from_json(data)
        for name, tc in wrapper.topic_config_table.items():
            if name not in self.table or not self.is_system_topic(name):
                self.table[name] = tc
        self.data_version = wrapper.data_version or DataVersion()

    def wrapper(self) -> TopicConfigSerializeWrapper:
        return TopicConfigSerializeWrapper(topic_config_table=dict(self.table), data_version=self.data_version)

    def encode(self) -> bytes:
        return self.wrapper().to_json()

    def _changed(self) -> None:
        self.data_version = self.data_version.next(int(self.clock() * 1000))
        self.persist_soon()
        if self.on_change is not None:
            self.on_change()

    # ------------------------------------------------------------------ queries

    def is_system_topic(self, topic: str) -> bool:
        """RocketMQ's system topics plus this broker's cluster and broker-name topics."""
        return T.is_system_topic(topic) or topic in (self.cfg.broker_cluster_name, self.cfg.broker_name)

    def select(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def __contains__(self, topic: str) -> bool:
        return topic in self.table

    # ------------------------------------------------------------------ changes

    def update(self, tc: TopicConfig) -> None:
        """UPDATE_AND_CREATE_TOPIC: create or replace one topic."""
        self.table[tc.topic_name] = tc
        self._changed()

    def delete(self, topic: str) -> bool:
        if self.table.pop(topic, None) is None:
            return False
        self._changed()
        return True

    def update_order(self, order_topics: set[str]) -> None:
        """Mark topics the name server lists as ordered (orderTopicConf)."""
        changed = False
        for name, tc in self.table.items():
            want = name in order_topics
            if tc.order != want:
                tc.order = want
                changed = True
        if changed:
            self._changed()

    def create_topic_in_send_message_method(
        self, topic: str, default_topic: str, client_queue_nums: int, topic_sys_flag: int = 0
    ) -> TopicConfig | None:
        """Auto-create `topic` from the template `default_topic`; None when not allowed."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        template = self.table.get(default_topic)
        if template is None:
            self.refusals.warning("no template", "auto-create %s refused: template topic %s does not exist", topic,
                                  default_topic)
            return None
        perm = template.perm
        if default_topic == T.AUTO_CREATE_TOPIC_KEY and not self.cfg.auto_create_topic_enable:
            perm = PERM_RW
        if not is_inherited(perm):
            self.refusals.warning("no inherit", "auto-create %s refused: template %s has no inherit permission",
                                  topic, default_topic)
            return None
        queue_nums = max(1, min(client_queue_nums, template.write_queue_nums))
        tc = TopicConfig(
            topic, queue_nums, queue_nums, perm=perm & ~PERM_INHERIT, topic_sys_flag=topic_sys_flag
        )
        log.info("auto-created topic %s from %s: %d queues", topic, default_topic, queue_nums)
        self.table[topic] = tc
        self._changed()
        return tc

    def create_topic_in_send_message_back_method(
        self, topic: str, queue_nums: int, perm: int = PERM_READ | PERM_WRITE, topic_sys_flag: int = 0
    ) -> TopicConfig | None:
        """Create %RETRY%/%DLQ% topics on first use (send-back, retry pulls)."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        tc = TopicConfig(topic, queue_nums, queue_nums, perm=perm, topic_sys_flag=topic_sys_flag)
        self.table[topic] = tc
        self._changed()
        return tc
