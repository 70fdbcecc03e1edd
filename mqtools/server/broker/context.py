"""BrokerContext: the broker as its processors and services see it (RocketMQ's BrokerController role).

BrokerController (app.py) is the implementation. Processors, slave sync and the HA duties are
typed against this Protocol rather than the class because app.py imports them; tests hand them
stand-ins that carry only the members a test exercises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from mqtools.common.tls_certificates import TlsCertificateManager
from mqtools.remoting.bodies import DataVersion
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.server import RemotingServer
from mqtools.server.broker.clients import ConsumerManager, ProducerManager
from mqtools.server.broker.config import BrokerConfig
from mqtools.server.broker.consumer_offsets import ConsumerOffsetManager
from mqtools.server.broker.fast_failure import BrokerFastFailure
from mqtools.server.broker.long_polling import PullRequestHoldService
from mqtools.server.broker.pop.request_mode import MessageRequestModeManager
from mqtools.server.broker.rebalance_lock import RebalanceLockManager
from mqtools.server.broker.registration import NamesrvRegistrar
from mqtools.server.broker.stats import BrokerStats
from mqtools.server.broker.subscription import SubscriptionGroupManager
from mqtools.server.broker.topic_config import TopicConfigManager
from mqtools.server.broker.transaction.bridge import TransactionalMessageBridge
from mqtools.server.broker.transaction.check_service import TransactionalMessageCheckService
from mqtools.server.ha.service import HAService
from mqtools.server.store.message_store import MessageStore
from mqtools.server.store.schedule import ScheduleMessageService
from mqtools.server.store.timer.timer_message_store import TimerMessageStore

if TYPE_CHECKING:  # the relay serves the send processor's records, and processors import this module
    from mqtools.server.broker.front.relay import FrontWorkers


class BrokerContext(Protocol):
    """One broker's configuration, store, tables, client managers and remoting ends."""

    config: BrokerConfig
    clock: Callable[[], float]
    config_version: DataVersion
    server: RemotingServer
    #: The server TLS certificates every port of the broker serves (loaded again when their files change).
    tls: TlsCertificateManager
    client: RemotingClient
    store: MessageStore
    schedule: ScheduleMessageService
    transactions: TransactionalMessageBridge
    transaction_check: TransactionalMessageCheckService
    topics: TopicConfigManager
    offsets: ConsumerOffsetManager
    groups: SubscriptionGroupManager
    #: config/messageRequestMode.json: PULL or POP per topic and group (QUERY_ASSIGNMENT).
    request_modes: MessageRequestModeManager
    consumers: ConsumerManager
    producers: ProducerManager
    locks: RebalanceLockManager
    stats: BrokerStats
    fast_failure: BrokerFastFailure
    long_polling: PullRequestHoldService
    registrar: NamesrvRegistrar
    #: The HA service once started (every broker runs one); None before.
    ha: HAService | None
    #: Timer messages (RIP-43); None when timerWheelEnable is false.
    timer: TimerMessageStore | None
    #: The group's master client address, as the last registration reported it.
    master_addr: str | None
    #: The processes that accept and relay this broker's clients (frontWorkers); None when it serves them itself.
    front: FrontWorkers | None

    @property
    def broker_addr(self) -> str: ...

    def all_config_properties(self) -> dict[str, str]: ...

    async def update_config(self, props: dict[str, str]) -> None: ...
