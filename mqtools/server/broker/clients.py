"""Online producers and consumers, as their heartbeats describe them (RocketMQ's ProducerManager
and ConsumerManager).

A client is known by its channel (the connection its heartbeat arrived on). Channels expire
after 120 s without a heartbeat (clients beat every 30 s), and go away at once when their
connection closes or the client unregisters. When a consumer group's membership changes, the
`on_ids_changed` listener is told (group, remaining channels); the broker wires it to a oneway
NOTIFY_CONSUMER_IDS_CHANGED to each member so they rebalance without waiting 20 s.

Sans-IO: a channel is any `Channel` (the broker's are RemotingConnections; to the managers only
their identity matters, and close() at expiry), time comes from the clock, and the expiry scan is
`scan_not_active()`; `start()`/`shutdown()` only run that scan on a timer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from mqtools.common.log_limiter import LimitedLog
from mqtools.remoting.bodies import SubscriptionData
from mqtools.remoting.codes import LanguageCode
from mqtools.remoting.command import RemotingCommand
from mqtools.server.lifecycle import cancel_and_wait

log = logging.getLogger(__name__)

CHANNEL_EXPIRED_TIMEOUT = 120.0
SCAN_INTERVAL = 10.0

#: C++ clients send these enums as their ordinal numbers; Java sends the names.
CONSUME_TYPES = ("CONSUME_ACTIVELY", "CONSUME_PASSIVELY")
MESSAGE_MODELS = ("BROADCASTING", "CLUSTERING")
CONSUME_FROM_WHERE = (
    "CONSUME_FROM_LAST_OFFSET",
    "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
    "CONSUME_FROM_MIN_OFFSET",
    "CONSUME_FROM_MAX_OFFSET",
    "CONSUME_FROM_FIRST_OFFSET",
    "CONSUME_FROM_TIMESTAMP",
)


def enum_name(value: object, names: tuple[str, ...], default: str) -> str:
    """A Java enum value as its name, whether it came as a name or as an ordinal."""
    text = str(value).strip() if value is not None else ""
    if text.isdigit():
        index = int(text)
        return names[index] if index < len(names) else default
    return text if text in names else default


def language_name(code: int) -> str:
    try:
        return LanguageCode(code).name
    except ValueError:
        return "OTHER"


class Channel(Protocol):
    """A client's connection, as the managers and the client processors use it."""

    @property
    def is_open(self) -> bool: ...

    def invoke_oneway(self, cmd: RemotingCommand) -> None: ...

    async def invoke(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand: ...

    def close(self) -> None: ...


@dataclass(slots=True, eq=False)
class ClientChannelInfo:
    channel: Channel
    client_id: str
    language: int
    version: int
    addr: str = ""
    last_update: float = 0.0


@dataclass(slots=True)
class ConsumerGroupInfo:
    group_name: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    channels: dict[Channel, ClientChannelInfo] = field(default_factory=dict)
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)
    last_update: float = 0.0

    def client_ids(self) -> list[str]:
        return [info.client_id for info in self.channels.values()]


IdsChangedListener = Callable[[str, list[ClientChannelInfo]], None]


class ConsumerManager:
    def __init__(
        self,
        clock: Callable[[], float] = time.time,
        *,
        expired_timeout: float = CHANNEL_EXPIRED_TIMEOUT,
        on_ids_changed: IdsChangedListener | None = None,
    ) -> None:
        self.clock = clock
        self.expired_timeout = expired_timeout
        self.on_ids_changed = on_ids_changed
        self.groups: dict[str, ConsumerGroupInfo] = {}
        self._task: asyncio.Task | None = None
        #: Any client can open connections, heartbeat and go quiet: expiry lines are rate-limited.
        self._expiries = LimitedLog(log, clock)

    def register(
        self,
        group: str,
        info: ClientChannelInfo,
        consume_type: object,
        message_model: object,
        consume_from_where: object,
        subscriptions: Iterable[SubscriptionData],
        *,
        notify: bool = True,
    ) -> bool:
        """Record a consumer heartbeat; True when the group's membership or subscriptions changed."""
        now = self.clock()
        group_info = self.groups.get(group)
        if group_info is None:
            group_info = self.groups[group] = ConsumerGroupInfo(group_name=group)
        group_info.consume_type = enum_name(consume_type, CONSUME_TYPES, "CONSUME_PASSIVELY")
        group_info.message_model = enum_name(message_model, MESSAGE_MODELS, "CLUSTERING")
        group_info.consume_from_where = enum_name(consume_from_where, CONSUME_FROM_WHERE, "CONSUME_FROM_LAST_OFFSET")
        group_info.last_update = now
        info.last_update = now
        old = group_info.channels.get(info.channel)
        members_changed = old is None or old.client_id != info.client_id
        group_info.channels[info.channel] = info
        subs_changed = self._update_subscriptions(group_info, subscriptions)
        if members_changed:
            log.info("consumer %s joined group %s from %s", info.client_id, group, info.addr)
        if (members_changed or subs_changed) and notify:
            self._notify(group, group_info)
        return members_changed or subs_changed

    @staticmethod
    def _update_subscriptions(group_info: ConsumerGroupInfo, subscriptions: Iterable[SubscriptionData]) -> bool:
        """Keep the newest subscription per topic by subVersion, as RocketMQ's ConsumerGroupInfo does, and drop
        topics a heartbeat no longer has. Members of one group each heartbeat their own version: taking the
        last heartbeat's would put an older version back under a member whose pulls carry a newer one, refused
        SUBSCRIPTION_NOT_LATEST until its next heartbeat (CI at 373f07f: a broadcasting Java consumer got 3 of
        12 messages)."""
        new = {sub.topic: sub for sub in subscriptions}
        changed = set(new) != set(group_info.subscriptions)
        for topic, sub in new.items():
            old = group_info.subscriptions.get(topic)
            if old is None:
                continue
            if sub.sub_version <= old.sub_version:
                new[topic] = old
            elif old.sub_string != sub.sub_string:
                changed = True
        group_info.subscriptions = new
        return changed

    def unregister(self, group: str, channel: Channel, *, notify: bool = True) -> bool:
        group_info = self.groups.get(group)
        if group_info is None or group_info.channels.pop(channel, None) is None:
            return False
        self._after_removal(group, group_info, notify)
        return True

    def channel_closed(self, channel: Channel) -> list[str]:
        """Drop a closed connection from every group; return the groups it left."""
        left = []
        for group, group_info in list(self.groups.items()):
            if group_info.channels.pop(channel, None) is not None:
                left.append(group)
                self._after_removal(group, group_info, True)
        return left

    def _after_removal(self, group: str, group_info: ConsumerGroupInfo, notify: bool) -> None:
        if not group_info.channels:
            del self.groups[group]
            log.info("consumer group %s has no member left", group)
        elif notify:
            self._notify(group, group_info)

    def scan_not_active(self) -> list[ClientChannelInfo]:
        """Expire channels silent for longer than the timeout; return what was dropped."""
        now = self.clock()
        dropped = []
        for group, group_info in list(self.groups.items()):
            stale = [c for c, i in group_info.channels.items() if now - i.last_update > self.expired_timeout]
            for channel in stale:
                info = group_info.channels.pop(channel)
                dropped.append(info)
                self._expiries.warning("expired", "consumer channel %s (%s) of %s expired", info.addr,
                                       info.client_id, group)
            if stale:
                self._after_removal(group, group_info, True)
        return dropped

    def _notify(self, group: str, group_info: ConsumerGroupInfo) -> None:
        if self.on_ids_changed is None:
            return
        try:
            self.on_ids_changed(group, list(group_info.channels.values()))
        except Exception:  # a listener failure must not undo the registration
            log.exception("ids-changed listener failed for %s", group)

    def find(self, group: str) -> ConsumerGroupInfo | None:
        return self.groups.get(group)

    def find_subscription(self, group: str, topic: str) -> SubscriptionData | None:
        group_info = self.groups.get(group)
        return None if group_info is None else group_info.subscriptions.get(topic)

    def groups_of_topic(self, topic: str) -> set[str]:
        return {g for g, info in self.groups.items() if topic in info.subscriptions}

    async def start(self, interval: float = SCAN_INTERVAL) -> None:
        self._task = asyncio.create_task(_scan_loop(self.scan_not_active, interval), name="consumer-expiry")

    async def shutdown(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None


class ProducerManager:
    def __init__(self, clock: Callable[[], float] = time.time, *, expired_timeout: float = CHANNEL_EXPIRED_TIMEOUT):
        self.clock = clock
        self.expired_timeout = expired_timeout
        self.groups: dict[str, dict[Channel, ClientChannelInfo]] = {}
        self._task: asyncio.Task | None = None
        self._expiries = LimitedLog(log, clock)  # as ConsumerManager's

    def register(self, group: str, info: ClientChannelInfo) -> bool:
        info.last_update = self.clock()
        channels = self.groups.setdefault(group, {})
        is_new = info.channel not in channels
        channels[info.channel] = info
        return is_new

    def unregister(self, group: str, channel: Channel) -> bool:
        channels = self.groups.get(group)
        if channels is None or channels.pop(channel, None) is None:
            return False
        if not channels:
            del self.groups[group]
        return True

    def channel_closed(self, channel: Channel) -> list[str]:
        left = [g for g in list(self.groups) if self.unregister(g, channel)]
        return left

    def scan_not_active(self) -> list[ClientChannelInfo]:
        now = self.clock()
        dropped = []
        for group, channels in list(self.groups.items()):
            for channel, info in list(channels.items()):
                if now - info.last_update > self.expired_timeout:
                    dropped.append(info)
                    self.unregister(group, channel)
                    self._expiries.warning("expired", "producer channel %s (%s) of %s expired", info.addr,
                                           info.client_id, group)
        return dropped

    def connections(self, group: str) -> list[ClientChannelInfo]:
        return list(self.groups.get(group, {}).values())

    async def start(self, interval: float = SCAN_INTERVAL) -> None:
        self._task = asyncio.create_task(_scan_loop(self.scan_not_active, interval), name="producer-expiry")

    async def shutdown(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None


async def _scan_loop(scan: Callable[[], list[ClientChannelInfo]], interval: float) -> None:
    """Run an expiry scan every `interval` seconds, closing the channels it drops."""
    while True:
        await asyncio.sleep(interval)
        try:
            for info in scan():
                info.channel.close()
        except Exception:  # the scan must keep running
            log.exception("client expiry scan failed")
