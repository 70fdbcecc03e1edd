"""What the proxy reads of the brokers' metadata: a topic's message type and a group's consume policy.

Apache's proxy reads them with GET_TOPIC_CONFIG and GET_SUBSCRIPTIONGROUP_CONFIG and caches them; a broker
that does not serve those codes (mq's brokers before they did) is asked for the whole table instead
(GET_ALL_TOPIC_CONFIG, GET_ALL_SUBSCRIPTIONGROUP_CONFIG). Answers are cached, and past `ttl` seconds read again in
the background while the cached one is still answered (Apache's refreshAfterWrite); a reload no broker answers
(down, hung) keeps the cached one, as Apache's loader returns the old value on an error: falling back to the
defaults would serve an orderly group as a concurrent one. The defaults are only for what was never read.

A topic's type is its `message.type` attribute, NORMAL without one (Apache's TopicConfig default: a FIFO,
delay or transactional topic must say so, `mq admin topic create --message-type`). One deviation from Apache:
a topic no broker could tell about is MIXED (every type accepted), where Apache answers UNSPECIFIED, with
which the 5.x clients refuse every send.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mqtools.client.errors import MQBrokerError, MQClientError, NotAvailable
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
V = TypeVar("V")
C = TypeVar("C")


class _Unanswered(Exception):
    """No broker answered a lookup (or there was none to ask): whatever is cached stays."""


class Metadata:
    """Cached topic message types and group policies, read from the brokers as a client does."""

    def __init__(self, instance: ClientInstance, *, ttl: float = 20.0, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.instance = instance
        self.ttl = ttl
        self._clock = clock
        self._cache: dict[tuple[str, str], tuple[float, Any]] = {}
        self._refreshing: dict[tuple[str, str], asyncio.Task[None]] = {}

    async def _cached(self, key: tuple[str, str], load: Callable[[], Awaitable[V]], default: V) -> V:
        """The value of `key`: read at once the first time (`default`, not kept, when no broker answers), then the
        cached one, reloaded in the background once older than `ttl`, one reload at a time."""
        hit = self._cache.get(key)
        if hit is None:
            try:
                value = await load()
            except _Unanswered:
                return default
            self._cache[key] = (self._clock(), value)
            return value
        if self._clock() - hit[0] >= self.ttl and key not in self._refreshing:
            self._refreshing[key] = asyncio.ensure_future(self._refresh(key, load))
        return hit[1]

    async def _refresh(self, key: tuple[str, str], load: Callable[[], Awaitable[Any]]) -> None:
        try:
            self._cache[key] = (self._clock(), await load())
        except _Unanswered:
            pass  # the cached value stays, and the next call tries again
        finally:
            del self._refreshing[key]

    async def close(self) -> None:
        """Stop the reloads in flight (a hung broker's would wait out its timeout) and wait until they have ended,
        so none outlives the proxy's shutdown."""
        tasks = list(self._refreshing.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    @staticmethod
    async def _first(broker_addrs: list[str], ask: Callable[[str], Awaitable[C | None]]) -> C | None:
        """The first config a broker gives; None when every broker answered without one; _Unanswered when some
        broker did not answer (or none was given) and none gave one."""
        unanswered = not broker_addrs
        for addr in broker_addrs:
            try:
                config = await ask(addr)
            except MQClientError:
                unanswered = True
                continue
            if config is not None:
                return config
        if unanswered:
            raise _Unanswered
        return None

    async def topic_message_type(self, topic: str, broker_addrs: list[str]) -> str:
        async def load() -> str:
            config = await self._first(broker_addrs, lambda addr: self._topic_config(addr, topic))
            return MIXED if config is None else (config.attributes or {}).get(TOPIC_MESSAGE_TYPE, NORMAL).upper()

        return await self._cached(("topic", topic), load, MIXED)

    async def _topic_config(self, addr: str, topic: str) -> TopicConfig | None:
        """The broker's config of `topic`, None when it has none; MQClientError when it does not answer."""
        try:
            resp = await self.instance.invoke(addr, RemotingCommand.request(
                RequestCode.GET_TOPIC_CONFIG, {"topic": topic, "lo": "true"}), ok=(ResponseCode.SUCCESS,
                                                                                  ResponseCode.TOPIC_NOT_EXIST))
            if resp.code == ResponseCode.SUCCESS and resp.body:
                return TopicConfig.from_json(resp.body)
            return None
        except NotAvailable:
            pass
        except (MQBrokerError, ValueError):
            return None
        try:
            resp = await self.instance.invoke(addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG))
            return TopicConfigSerializeWrapper.from_json(resp.body or b"{}").topic_config_table.get(topic)
        except (MQBrokerError, ValueError):
            return None

    async def group_policy(self, group: str, broker_addrs: list[str]) -> GroupPolicy:
        async def load() -> GroupPolicy:
            config = await self._first(broker_addrs, lambda addr: self._group_config(addr, group))
            return GroupPolicy() if config is None else GroupPolicy(config.consume_message_orderly,
                                                                    config.retry_max_times)

        return await self._cached(("group", group), load, GroupPolicy())

    async def _group_config(self, addr: str, group: str) -> SubscriptionGroupConfig | None:
        """The broker's config of `group`, None when it has none; MQClientError when it does not answer."""
        try:
            resp = await self.instance.invoke(addr, RemotingCommand.request(
                RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": group}))
            return SubscriptionGroupConfig.from_json(resp.body) if resp.body else None
        except NotAvailable:
            pass
        except (MQBrokerError, ValueError):
            return None
        try:
            resp = await self.instance.invoke(addr, RemotingCommand.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
            return SubscriptionGroupWrapper.from_json(resp.body or b"{}").subscription_group_table.get(group)
        except (MQBrokerError, ValueError):
            return None
