"""What the proxy reads of the brokers' metadata: a topic's message type and a group's consume policy.

Apache's proxy reads them with GET_TOPIC_CONFIG and GET_SUBSCRIPTIONGROUP_CONFIG and caches them; a broker
that does not serve those codes (mq's brokers before they did) is asked for the whole table instead
(GET_ALL_TOPIC_CONFIG, GET_ALL_SUBSCRIPTIONGROUP_CONFIG). Answers are cached for `ttl` seconds.

A topic's type is its `message.type` attribute, NORMAL without one (Apache's TopicConfig default: a FIFO,
delay or transactional topic must say so, `mq admin topic create --message-type`). One deviation from Apache:
a topic no broker could tell about is MIXED (every type accepted), where Apache answers UNSPECIFIED, with
which the 5.x clients refuse every send.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mqtools.client.errors import MQClientError, NotAvailable
from mqtools.client.instance import ClientInstance
from mqtools.proxy.route import MIXED, NORMAL
from mqtools.proxy.settings import GroupPolicy
from mqtools.remoting.bodies import (
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand

TOPIC_MESSAGE_TYPE = "message.type"


class Metadata:
    """Cached topic message types and group policies, read from the brokers as a client does."""

    def __init__(self, instance: ClientInstance, *, ttl: float = 20.0, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.instance = instance
        self.ttl = ttl
        self._clock = clock
        self._cache: dict[tuple[str, str], tuple[float, Any]] = {}

    def _cached(self, key: tuple[str, str]) -> tuple[bool, Any]:
        hit = self._cache.get(key)
        if hit is not None and self._clock() - hit[0] < self.ttl:
            return True, hit[1]
        return False, None

    async def topic_message_type(self, topic: str, broker_addrs: list[str]) -> str:
        found, value = self._cached(("topic", topic))
        if found:
            return value
        value = MIXED
        for addr in broker_addrs:
            config = await self._topic_config(addr, topic)
            if config is not None:
                value = (config.attributes or {}).get(TOPIC_MESSAGE_TYPE, NORMAL).upper()
                break
        self._cache[("topic", topic)] = (self._clock(), value)
        return value

    async def _topic_config(self, addr: str, topic: str) -> TopicConfig | None:
        try:
            resp = await self.instance.invoke(addr, RemotingCommand.request(
                RequestCode.GET_TOPIC_CONFIG, {"topic": topic, "lo": "true"}), ok=(ResponseCode.SUCCESS,
                                                                                  ResponseCode.TOPIC_NOT_EXIST))
            if resp.code == ResponseCode.SUCCESS and resp.body:
                return TopicConfig.from_json(resp.body)
            return None
        except NotAvailable:
            pass
        except (MQClientError, ValueError):
            return None
        try:
            resp = await self.instance.invoke(addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG))
            return TopicConfigSerializeWrapper.from_json(resp.body or b"{}").topic_config_table.get(topic)
        except (MQClientError, ValueError):
            return None

    async def group_policy(self, group: str, broker_addrs: list[str]) -> GroupPolicy:
        found, value = self._cached(("group", group))
        if found:
            return value
        value = GroupPolicy()
        for addr in broker_addrs:
            config = await self._group_config(addr, group)
            if config is not None:
                value = GroupPolicy(config.consume_message_orderly, config.retry_max_times)
                break
        self._cache[("group", group)] = (self._clock(), value)
        return value

    async def _group_config(self, addr: str, group: str) -> SubscriptionGroupConfig | None:
        try:
            resp = await self.instance.invoke(addr, RemotingCommand.request(
                RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": group}))
            return SubscriptionGroupConfig.from_json(resp.body) if resp.body else None
        except NotAvailable:
            pass
        except (MQClientError, ValueError):
            return None
        try:
            resp = await self.instance.invoke(addr, RemotingCommand.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
            return SubscriptionGroupWrapper.from_json(resp.body or b"{}").subscription_group_table.get(group)
        except (MQClientError, ValueError):
            return None
