"""BrokerController: wires the store, the managers and the processors; start-up and shutdown.

Start order (as RocketMQ's BrokerController): store (lock, recovery), config tables
(topics, groups, offsets, delay offsets), on a master the newer committed offsets of its
slaves (pre_online.py: no offset regression after a master comes back), processors,
remoting server, the periodic
services, then one registration round with every name server (bounded by its timeout, so
a dead name server never blocks start-up) and the per-name-server registration loops.
Only then is the broker ready: `ready_line()` is `READY broker <ip>:<port> name=<brokerName>
id=<brokerId> ha=<haPort>`.

Shutdown (SIGINT/SIGTERM): unregister from every name server, stop serving, stop the
services (offsets and delay offsets persist there), persist the tables, shut the store
down (flush, checkpoint, abort marker removed).

HA: `HADuties` (ha_duties.py) starts the HAService just before registration, which advertises
its port (`config.effective_ha_port`, listenPort + 1 by default); `self.ha` is that service.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from mqtools.common.atomic_file import write_atomic
from mqtools.common.brokerrole import BrokerRole
from mqtools.common.javaprops import render_properties
from mqtools.common.tls import masked
from mqtools.common.tls_certificates import TlsCertificateManager
from mqtools.remoting.bodies import DataVersion
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.server import RemotingServer
from mqtools.server.broker.acl.manager import PlainPermissionManager, default_acl_path
from mqtools.server.broker.acl.service import AclService
from mqtools.server.broker.auth.config import CONFIG_KEYS as AUTH_CONFIG_KEYS
from mqtools.server.broker.clients import ConsumerManager, ProducerManager
from mqtools.server.broker.config import BrokerConfig
from mqtools.server.broker.consumer_offsets import ConsumerOffsetManager
from mqtools.server.broker.fast_failure import BrokerFastFailure
from mqtools.server.broker.front import relay as front_relay
from mqtools.server.broker.ha_duties import HADuties
from mqtools.server.broker.long_polling import HeldPull, PullRequestHoldService
from mqtools.server.broker.metrics import BrokerMetricsManager
from mqtools.server.broker.pop.request_mode import MessageRequestModeManager
from mqtools.server.broker.pre_online import take_offsets_from_slaves
from mqtools.server.broker.processors import ack as ack_proc  # POP (RocketMQ 5)
from mqtools.server.broker.processors import admin, end_transaction, pull, query, send
from mqtools.server.broker.processors import assignment as assignment_proc  # server-side load balancing
from mqtools.server.broker.processors import change_invisible as change_invisible_proc  # POP
from mqtools.server.broker.processors import client as client_proc
from mqtools.server.broker.processors import consumer as consumer_proc
from mqtools.server.broker.processors import polling_info as polling_info_proc  # POP
from mqtools.server.broker.processors import pop as pop_proc  # POP
from mqtools.server.broker.processors import pop_peek as pop_peek_proc  # POP
from mqtools.server.broker.processors import pop_stats as pop_stats_proc  # POP: in-flight figures
from mqtools.server.broker.rebalance_lock import RebalanceLockManager
from mqtools.server.broker.registration import BrokerIdentity, NamesrvRegistrar, RegisterResult
from mqtools.server.broker.replicas_manager import FIRST_ROLE_WAIT_S, ReplicasManager
from mqtools.server.broker.stats import BrokerStats
from mqtools.server.broker.subscription import SubscriptionGroupManager
from mqtools.server.broker.topic_config import TopicConfigManager
from mqtools.server.broker.transaction.bridge import TransactionalMessageBridge
from mqtools.server.broker.transaction.check_service import TransactionalMessageCheckService
from mqtools.server.ha.service import HAService
from mqtools.server.lifecycle import StartError
from mqtools.server.store.config import STORE_PROPERTIES
from mqtools.server.store.delay_levels import DelayLevelTable
from mqtools.server.store.message_store import MessageStore
from mqtools.server.store.schedule import ScheduleMessageService
from mqtools.server.store.timer.timer_message_store import TimerMessageStore

log = logging.getLogger(__name__)


class BrokerController:
    """One broker: the BrokerContext its processors and services are given."""

    def __init__(
        self,
        config: BrokerConfig,
        *,
        config_path: Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if config.enable_controller_mode:
            config.broker_role = BrokerRole.SLAVE  # fenced until the controller gives the role
        self.config = config
        self.clock = clock
        self.config_path = config_path or config.config_dir / "broker.properties"
        self.config_version = DataVersion()
        config_dir = config.config_dir
        vip = () if config.vip_port is None else (config.vip_port,)
        #: The TLS certificates of the remoting, VIP and HA ports, loaded again when their files change.
        self.tls = TlsCertificateManager(config.tls_server())
        self.server = RemotingServer(config.bind_address, config.listen_port, tls=self.tls, extra_ports=vip)
        #: The processes that accept this broker's clients and relay them (none: it serves them itself).
        self.front = front_relay.FrontWorkers(self.server, config.front_workers, config.tls_server(),
                                              config.broker_cluster_name) if config.front_workers else None
        self.client = RemotingClient(config.namesrv_list(), security=config.client_security())
        levels = DelayLevelTable(config.message_delay_level)
        self.topics = TopicConfigManager(config_dir, config, clock, max_delay_level=levels.max_level)
        self.offsets = ConsumerOffsetManager(config_dir, clock,
                                             flush_interval=config.flush_consumer_offset_interval / 1000)
        self.groups = SubscriptionGroupManager(config_dir, clock, auto_create=config.auto_create_subscription_group)
        self.request_modes = MessageRequestModeManager.from_config(config_dir, config.extra)
        self.consumers = ConsumerManager(clock)
        self.producers = ProducerManager(clock)
        self.locks = RebalanceLockManager(clock)
        self.stats = BrokerStats(clock)
        self.metrics = BrokerMetricsManager(config, self.stats, self.topics, self.groups)
        self.fast_failure = BrokerFastFailure(config)
        self.store = MessageStore(config.store_config(), clock=clock)
        self.server.after_read = self.store.dispatcher.run_deferred
        # timer messages (RIP-43): the wheel, when timerWheelEnable (Apache's default)
        self.timer = TimerMessageStore(self.store, self.store.config, clock=clock) \
            if self.store.config.timer_wheel_enable else None
        self.schedule = ScheduleMessageService(self.store, config_dir, config.message_delay_level,
                                               clock=clock)
        self.transactions = TransactionalMessageBridge(self)
        self.transaction_check = TransactionalMessageCheckService(self, self.transactions)
        self.ha: HAService | None = None
        self.ha_duties: HADuties | None = None
        self.replicas: ReplicasManager | None = None
        self.master_addr: str | None = None
        self.long_polling = PullRequestHoldService(self._answer_held_pull, clock)
        self.registrar = NamesrvRegistrar(
            self.client,
            self.identity,
            self.topics.wrapper,
            period_s=config.register_period_s,
            timeout_s=config.register_broker_timeout_mills / 1000.0,
            on_result=self._on_register_result,
        )
        self.pull_processor = self._register_processors()
        self.acl: AclService | None = None
        self.auth: object | None = None  # ACL 2.0's AuthService, when configured
        self._started = False

    # ------------------------------------------------------------------ identity

    @property
    def broker_addr(self) -> str:
        return f"{self.config.broker_ip1}:{self.server.port}"

    @property
    def ha_port(self) -> int:
        """The HA port once it is open (it may have been 0: any), else the configured one."""
        if self.ha is not None and self.ha.port is not None:
            return self.ha.port
        return self.config.effective_ha_port

    def ready_line(self) -> str:
        """What `mq broker start` prints once the broker serves (launchers and tests wait for it)."""
        cfg = self.config
        return f"READY broker {self.broker_addr} name={cfg.broker_name} id={cfg.broker_id} ha={self.ha_port}"

    def identity(self) -> BrokerIdentity:
        cfg = self.config
        return BrokerIdentity(cfg.broker_cluster_name, cfg.broker_name, self.broker_addr, cfg.broker_id,
                              f"{cfg.broker_ip2 or cfg.broker_ip1}:{self.ha_port}")

    def _on_register_result(self, result: RegisterResult) -> None:
        if self.ha_duties is not None:
            self.ha_duties.on_register_result(result)
        if result.ok and not self.config.enable_controller_mode:  # there the controller names it (ReplicasManager)
            self.master_addr = self._named_master(result)
        if result.ok and result.order_topics is not None:
            self.topics.update_order(result.order_topics)

    def _named_master(self, result: RegisterResult) -> str | None:
        """The master the name servers name, None too (Apache's setMasterAddr: no sync round while the route has
        none). Each name server answers on its own, so one that does not list the master (restarted, not yet
        registered to) clears it only when no other name server's last answer names one."""
        if result.master_addr:
            return result.master_addr
        return next((r.master_addr for r in self.registrar.last.values() if r.ok and r.master_addr), None)

    def _answer_held_pull(self, held: HeldPull) -> None:
        self.pull_processor.wake(held)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        cfg = self.config
        cfg.config_dir.mkdir(parents=True, exist_ok=True)
        try:
            await self.store.start()
        except Exception as exc:
            raise StartError(f"cannot start the store in {cfg.store_path_root_dir}: {exc}") from exc
        self.topics.load()
        self.offsets.load()
        self.groups.load()
        self.request_modes.load()
        self.schedule.load()
        await self._start_acl()
        await self._start_auth()  # ACL 2.0 (mqtools/server/broker/auth)
        # a returning master first takes the newer offsets its slaves took while it was down (pre_online.py)
        await take_offsets_from_slaves(self, cfg.register_broker_timeout_mills / 1000)
        try:
            if self.front is None:
                await self.server.start()
            else:
                await self.front.start(await self.server.bind())
        except OSError as exc:
            await self.store.shutdown()
            ports = ", ".join(str(p) for p in (cfg.listen_port, *self.server.extra_ports))
            raise StartError(f"cannot listen on {cfg.bind_address}:{ports}: {exc.strerror or exc}") from None
        self.store.config.listen_port = self.server.port  # STOREHOST and offset msg ids use the real port
        await self.fast_failure.start()
        await self.metrics.start()
        self.store.add_arrival_listener(self.long_polling.arrival_listener, self.long_polling.table.by_queue)
        await self.long_polling.start()
        await self.pop.s.start()  # POP: its long polling, and the revive service on a master
        await self.offsets.start()
        await self.consumers.start()
        await self.producers.start()
        if self.timer is not None:  # timer messages (RIP-43): masters deliver them, slaves file what theirs filed
            await self.timer.start(dequeue=not cfg.is_slave)
        if not cfg.is_slave:
            await self.schedule.start()
            await self.transaction_check.start()
        await self._start_ha()  # before registration, which advertises the HA port
        self.topics.on_change = self.registrar.kick
        if cfg.enable_controller_mode:
            await self._start_replicas()  # registers once the controllers have given a role
        else:
            await self._start_registration()
        self._started = True

    async def _start_registration(self) -> None:
        """One registration round with every name server, then the per-name-server loops."""
        if self.registrar.addrs:
            await self.registrar.register_all()
        self.registrar.start(registered=True)

    def _register_processors(self) -> pull.PullProcessor:
        """Every request handler on the server (which serves only after start()); the pull processor."""
        self.server.add_close_hook(self.long_polling.connection_closed)
        send.register(self.server, self)
        pull_processor = pull.register(self.server, self)
        query.register(self.server, self)
        admin.register(self.server, self)
        client_proc.register(self.server, self)
        consumer_proc.register(self.server, self)
        end_transaction.register(self.server, self, self.transactions)
        # POP (RocketMQ 5): pop, peek / notification, acks, invisible time; self.pop.s starts the revive service
        self.pop = pop_proc.register(self.server, self)
        pop_peek_proc.register(self.server, self.pop)
        ack_proc.register(self.server, self.pop)
        change_invisible_proc.register(self.server, self.pop)
        polling_info_proc.register(self.server, self.pop)
        pop_stats_proc.register(self.server, self.pop)
        # QUERY_ASSIGNMENT and the message request modes (messageRequestMode.json)
        self.assignment = assignment_proc.register(self.server, self)
        return pull_processor

    async def shutdown(self) -> None:
        """Unregister, stop serving, stop services, persist, close the store. Never raises."""
        steps: list[tuple[str, Callable[[], Awaitable[None] | None]]] = [
            ("registration", self.registrar.shutdown),
            ("unregister", self.registrar.unregister_all),
            ("front workers", lambda: self.front.shutdown() if self.front is not None else None),
            ("server", self.server.shutdown),
            ("fast failure", self.fast_failure.shutdown),
            ("metrics", self.metrics.shutdown),
            ("acl", lambda: self.acl.manager.shutdown() if self.acl is not None else None),
            ("long polling", self.long_polling.shutdown),
            ("pop", self.pop.s.shutdown),  # POP: before the offsets persist its revive progress
            ("schedule", self.schedule.shutdown),
            ("timer", lambda: self.timer.shutdown() if self.timer is not None else None),
            ("transaction check", self.transaction_check.shutdown),
            ("producers", self.producers.shutdown),
            ("consumers", self.consumers.shutdown),
            ("offsets", self.offsets.shutdown),
            ("topics", self.topics.persist),
            ("groups", self.groups.persist),
            ("replicas", lambda: self.replicas.shutdown() if self.replicas is not None else None),
            ("ha", lambda: self.ha_duties.shutdown() if self.ha_duties is not None else None),
            ("store", self.store.shutdown),
            ("client", self.client.close),
        ]
        if not self._started:
            steps = [s for s in steps if s[0] in ("server", "store", "client")]
        for name, step in steps:
            try:
                result = step()
                if result is not None:
                    await result
            except Exception:
                log.exception("shutdown step %s failed", name)

    async def _start_acl(self) -> None:
        """aclEnable=true: load plain_acl.yml (a bad file stops start-up), install the hook, watch the file."""
        cfg = self.config
        if not cfg.acl_enable:
            return
        try:
            manager = PlainPermissionManager(default_acl_path(cfg.acl_file_path), self.clock)
            manager.load()
        except (OSError, ValueError) as exc:
            await self.store.shutdown()
            raise StartError(f"ACL: {exc}") from None
        self.acl = AclService(manager, lambda: (cfg.broker_cluster_name, cfg.broker_name, self.broker_addr))
        self.acl.install(self.server)
        await manager.start(cfg.acl_watch_interval_mills / 1000)

    # --- ACL 2.0 hook (mqtools/server/broker/auth): Apache 5.5's auth keys switch it on --------------
    async def _start_auth(self) -> None:
        """Users and ACLs from the store's config dir when a metadata provider is named; the check when
        authenticationEnabled or authorizationEnabled. A bad key or unreadable metadata stops start-up."""
        from mqtools.server.broker.auth.config import AuthConfig
        from mqtools.server.broker.auth.service import AuthService
        from mqtools.server.broker.auth.store import AuthMetadataStore

        cfg = self.config
        try:
            auth = AuthConfig.from_properties(cfg.to_properties())
            if not (auth.any_enabled or auth.has_metadata):
                return
            store = AuthMetadataStore(cfg.config_dir)
            store.load()
            service = AuthService(auth, store, cfg.broker_cluster_name, self.clock)
            service.init_users()
            if auth.migrate_from_v1:
                from mqtools.server.broker.acl.plain_acl import PlainAclFile

                path = default_acl_path(cfg.acl_file_path)
                accounts = PlainAclFile.parse(path.read_text()).accounts if path.exists() else []
                log.info("ACL 2.0: migrated plain ACL accounts %s", service.migrate(accounts))
        except (OSError, ValueError) as exc:
            await self.store.shutdown()
            raise StartError(f"ACL 2.0: {exc}") from None
        service.install(self.server)
        self.auth = service
    # --- end of the ACL 2.0 hook ----------------------------------------------------------------------

    async def _start_ha(self) -> None:
        duties = HADuties(self)
        try:
            await duties.start()
        except OSError as exc:
            raise StartError(f"cannot listen on HA port {self.config.effective_ha_port}: "
                             f"{exc.strerror or exc}") from None
        self.ha_duties, self.ha = duties, duties.service

    async def _start_replicas(self) -> None:
        """Controller mode: the controllers say what this broker is; it registers as that once they have."""
        assert self.ha_duties is not None
        self.replicas = ReplicasManager(self, self.ha_duties)
        await self.replicas.start(FIRST_ROLE_WAIT_S, self._start_registration)

    # ------------------------------------------------------------------ live config

    def all_config_properties(self) -> dict[str, str]:
        """GET_BROKER_CONFIG: the broker's settings, then the store's it does not name itself (TLS key
        passwords masked), without the ACL 2.0 keys: Apache's answer leaves its AuthConfig out, and they
        carry Super users' passwords."""
        props = self.config.to_properties()
        for key, value in self.store.config.to_properties().items():
            props.setdefault(key, value)
        return dict(sorted((k, v) for k, v in masked(props).items() if k not in AUTH_CONFIG_KEYS))

    async def update_config(self, props: dict[str, str]) -> None:
        """UPDATE_BROKER_CONFIG: validate on a copy, apply live, write the properties file."""
        trial = dataclasses.replace(self.config, extra=dict(self.config.extra))
        trial.apply(props)
        trial.validate()
        old_perm = self.config.broker_permission
        self.config.apply(props)
        for name, value in STORE_PROPERTIES.parse(props).items():
            setattr(self.store.config, name, value)
        self.groups.auto_create = self.config.auto_create_subscription_group  # Apache reads it at each lookup
        self.config_version = self.config_version.next(int(self.clock() * 1000))
        data = render_properties(self.config.to_properties()).encode()
        await asyncio.to_thread(write_atomic, Path(self.config_path), data)
        if self.config.broker_permission != old_perm:
            self.registrar.kick()

