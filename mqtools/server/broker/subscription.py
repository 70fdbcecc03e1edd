"""Consumer group settings: subscriptionGroup.json (retryMaxTimes, retryQueueNums, notify flag ...).

Groups are created on first use when autoCreateSubscriptionGroup is on (RocketMQ's default), and
the built-in tool groups always exist. Every change bumps the data version and is written at once
(groups change rarely; losing one on a crash would silently reset its retry policy), through the
store's ConfigManager.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from mqtools.common.topics import SYSTEM_GROUPS
from mqtools.common.validation import is_legal_group
from mqtools.remoting.bodies import DataVersion, SubscriptionGroupConfig, SubscriptionGroupWrapper
from mqtools.server.store.config_manager import ConfigManager

log = logging.getLogger(__name__)

FILE_NAME = "subscriptionGroup.json"


class SubscriptionGroupManager(ConfigManager):
    def __init__(
        self,
        config_dir: Path,
        clock: Callable[[], float] = time.time,
        *,
        auto_create: bool = True,
    ) -> None:
        super().__init__(Path(config_dir) / FILE_NAME)
        self.clock = clock
        self.auto_create = auto_create
        self.table: dict[str, SubscriptionGroupConfig] = {}
        self.data_version = DataVersion()
        for name in sorted(SYSTEM_GROUPS):  # RocketMQ's SubscriptionGroupManager.init creates them all
            self.table[name] = SubscriptionGroupConfig(group_name=name)

    def _bump(self) -> None:
        self.data_version = self.data_version.next(int(self.clock() * 1000))

    def find(self, group: str, *, create: bool | None = None) -> SubscriptionGroupConfig | None:
        """The group's config; auto-created (and persisted) when allowed. `create` overrides the flag.
        A name that breaks the group rules is never created (RocketMQ 5 refuses it the same way)."""
        config = self.table.get(group)
        if config is not None:
            return config
        if not (self.auto_create if create is None else create) or not is_legal_group(group):
            return None
        config = SubscriptionGroupConfig(group_name=group)
        self.table[group] = config
        self._bump()
        log.info("auto-created subscription group %s", group)
        self.persist_soon()
        return config

    def update(self, config: SubscriptionGroupConfig) -> None:
        old = self.table.get(config.group_name)
        self.table[config.group_name] = config
        log.info("%s subscription group %s", "updated" if old else "created", config.group_name)
        self._bump()
        self.persist_soon()

    def delete(self, group: str) -> bool:
        if self.table.pop(group, None) is None:
            return False
        self._bump()
        self.persist_soon()
        return True

    def wrapper(self) -> SubscriptionGroupWrapper:
        return SubscriptionGroupWrapper(subscription_group_table=dict(self.table), data_version=self.data_version)

    def encode(self) -> bytes:
        return self.wrapper().to_json()

    def decode(self, data: bytes) -> None:
        """Merge a subscriptionGroup.json (or a master's GET_ALL_SUBSCRIPTIONGROUP_CONFIG body)."""
        wrapper = SubscriptionGroupWrapper.from_json(data)
        for name, config in wrapper.subscription_group_table.items():
            if config is not None:
                config.group_name = config.group_name or name
                self.table[name] = config
        self.data_version = wrapper.data_version or DataVersion()
