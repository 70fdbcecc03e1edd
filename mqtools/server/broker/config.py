"""Broker configuration: RocketMQ's BrokerConfig keys (and the store's) from a .properties file.

A RocketMQ `broker.properties` works unchanged. Known broker keys are parsed with type
checks (`listenPort=abc` is an error, not a silent default); every other key is kept in
`extra` and handed to the store's MessageStoreConfig, which knows the store keys
(flushDiskType, mappedFileSizeCommitLog, fileReservedTime, ...). GET_BROKER_CONFIG shows
the union, as RocketMQ's Configuration does.

RocketMQ's start-up rules are applied by `validate()`: a master's brokerId is forced to
0, a SLAVE with brokerId <= 0 is refused, a malformed name-server list is refused with the
expected format; the store and HA keys among the rest must parse as their configs type them.
`NAMESRV_ADDR` is the fallback when neither the file nor `-n` gives one.

TLS: the `tls.*` keys (mqtools.common.tls) may sit in this file; `tls_server()` and `tls_client()`
read them (and `tls.config.file`), and validate() checks them.

Deviation: brokerIP1 defaults to 127.0.0.1 (RocketMQ picks the first non-loopback
address); set brokerIP1 for a broker that other hosts must reach.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from mqtools.common.addresses import parse_namesrv_list
from mqtools.common.brokerrole import VIP_CHANNEL_OFFSET, BrokerRole
from mqtools.common.configkeys import ConfigError, PropertyMap
from mqtools.common.javaprops import parse_properties
from mqtools.common.security import ClientSecurity, TlsClientOptions
from mqtools.common.tls import TlsClientSettings, TlsServerSettings
from mqtools.common.topics import RMQ_SYS_TRACE_TOPIC
from mqtools.remoting.controller import LOWEST_ELECTION_PRIORITY
from mqtools.server.broker.consumer_offsets import FLUSH_INTERVAL_S
from mqtools.server.ha.service import HAConfig
from mqtools.server.store.config import MessageStoreConfig
from mqtools.server.store.delay_levels import DEFAULT_DELAY_LEVELS

DEFAULT_LISTEN_PORT = 10911
#: The most front worker processes a broker starts (each is a Python process of about 30 MiB).
MAX_FRONT_WORKERS = 64
FLUSH_TYPES = ("ASYNC_FLUSH", "SYNC_FLUSH")
MQ_VERSION_DESC = "V4_9_7"


def _default_store_root() -> str:
    return str(Path.home() / "store")


@dataclass
class BrokerConfig:
    # identity
    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = field(default_factory=socket.gethostname)
    broker_id: int = 0
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    broker_ip1: str = "127.0.0.1"
    broker_ip2: str = ""
    namesrv_addr: str = ""
    # network
    listen_port: int = DEFAULT_LISTEN_PORT
    ha_listen_port: int = -1  # -1: listenPort + 1, as RocketMQ derives it
    bind_address: str = "0.0.0.0"
    # processes that accept the clients' connections, parse their plain sends and relay the rest
    # (mqtools/server/broker/front); 0: the store's process serves its clients itself. Off by default: they take
    # 15-18% of the store loop's CPU per send, which is throughput only where the broker has cores of its own
    # (bench/front_workers.py, docs/compatibility.md)
    front_workers: int = 0
    # store (the broker reads these too; the store gets them through store_properties())
    store_path_root_dir: str = field(default_factory=_default_store_root)
    flush_disk_type: str = "ASYNC_FLUSH"
    message_delay_level: str = DEFAULT_DELAY_LEVELS
    max_message_size: int = 4 * 1024 * 1024
    # flow control (mqtools/server/broker/fast_failure.py); off by default, unlike RocketMQ: mq measures a send's wait
    # as its loop's lag, which also counts time the OS did not run the broker (docs/compatibility.md, Differences)
    broker_fast_failure_enable: bool = False
    wait_time_mills_in_send_queue: int = 200
    # metrics (mqtools/server/broker/metrics.py): RocketMQ 5's names; PROM serves them, DISABLE does not
    metrics_exporter_type: str = "DISABLE"
    metrics_prom_exporter_host: str = ""
    metrics_prom_exporter_port: int = 5557
    # topics and groups
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    enable_mixed_message_type: bool = False
    """Whether a topic may be created with message.type MIXED (RocketMQ 5 refuses it by default)."""
    default_topic_queue_nums: int = 8
    broker_permission: int = 6
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    trace_topic_enable: bool = False
    msg_trace_topic_name: str = RMQ_SYS_TRACE_TOPIC
    # registration
    register_name_server_period: int = 30_000
    register_broker_timeout_mills: int = 6_000
    force_register: bool = True
    # pull
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1_000
    max_transfer_bytes_on_message_in_memory: int = 256 * 1024
    max_transfer_count_on_message_in_memory: int = 32
    slave_read_enable: bool = False
    notify_consumer_ids_changed_enable: bool = True
    # offsets: ms between consumerOffset.json writes, the most a killed broker loses
    flush_consumer_offset_interval: int = int(FLUSH_INTERVAL_S * 1000)
    # transactions (mqtools/server/broker/transaction): a half message older than transactionTimeOut ms is asked
    # about every transactionCheckInterval ms, at most transactionCheckMax times (4.9.x's defaults)
    transaction_time_out: int = 6_000
    transaction_check_max: int = 15
    transaction_check_interval: int = 60_000
    reject_transaction_message: bool = False
    # ACL 1.0 (mqtools/server/broker/acl): plain_acl.yml from aclFilePath, else $ROCKETMQ_HOME/conf/
    acl_enable: bool = False
    acl_file_path: str = ""
    acl_watch_interval_mills: int = 1_000
    # controller mode (replicas_manager.py): the controller decides role and id at run time
    enable_controller_mode: bool = False
    controller_addr: str = ""
    sync_broker_metadata_period: int = 5_000
    check_sync_state_set_period: int = 5_000
    sync_controller_metadata_period: int = 10_000
    controller_heart_beat_timeout_mills: int = 10_000
    broker_election_priority: int = LOWEST_ELECTION_PRIORITY
    broker_heartbeat_interval: int = 1_000
    store_path_broker_identity: str = ""
    #: Keys we do not know ourselves: store keys and anything else, kept verbatim.
    extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.broker_role = BrokerRole.parse(self.broker_role)

    # ------------------------------------------------------------------ derived

    @property
    def is_slave(self) -> bool:
        return not self.broker_role.is_master

    @property
    def effective_ha_port(self) -> int:
        if self.ha_listen_port >= 0:
            return self.ha_listen_port
        return self.listen_port + 1 if self.listen_port else 0

    @property
    def vip_port(self) -> int | None:
        """RocketMQ's VIP channel, listenPort - 2, which every Apache broker also serves and some of
        Apache's own calls use (a slave syncing topic configs from its master, clients with
        vipChannelEnabled); none when the listen port is picked by the OS."""
        return self.listen_port - VIP_CHANNEL_OFFSET if self.listen_port > VIP_CHANNEL_OFFSET else None

    @property
    def config_dir(self) -> Path:
        return Path(self.store_path_root_dir) / "config"

    @property
    def register_period_s(self) -> float:
        """registerNameServerPeriod clamped to 10-60 s, as RocketMQ clamps it."""
        return min(max(self.register_name_server_period, 10_000), 60_000) / 1000.0

    def controller_addrs(self) -> list[str]:
        """controllerAddr split on ';' (ConfigError when one is not ip:port)."""
        try:
            return parse_namesrv_list(self.controller_addr) if self.controller_addr.strip() else []
        except ValueError as exc:
            raise ConfigError(f"{exc} (controllerAddr)") from None

    def namesrv_list(self) -> list[str]:
        return parse_namesrv_list(self.namesrv_addr) if self.namesrv_addr.strip() else []

    # ------------------------------------------------------------------ (de)serialisation

    def apply(self, props: dict[str, str]) -> None:
        """Set known keys from strings (ConfigError on bad values); keep the rest in extra."""
        staged = BROKER_PROPERTIES.parse(props)
        self.extra.update((key, raw.strip()) for key, raw in BROKER_PROPERTIES.unknown(props).items())
        for name, value in staged.items():
            setattr(self, name, value)

    def to_properties(self) -> dict[str, str]:
        """Every setting under its RocketMQ name (GET_BROKER_CONFIG, persisted config)."""
        return BROKER_PROPERTIES.to_properties(self, self.extra)

    def store_properties(self) -> dict[str, str]:
        """What the store's MessageStoreConfig is built from (it ignores keys it lacks)."""
        props = self.to_properties()
        props.setdefault("storePathCommitLog", str(Path(self.store_path_root_dir) / "commitlog"))
        return props

    def store_config(self) -> MessageStoreConfig:
        """The store's settings: the store keys among this broker's properties."""
        return MessageStoreConfig.from_properties(self.store_properties())

    def ha_config(self, store: MessageStoreConfig) -> HAConfig:
        """HA settings: the ha* keys of this broker's properties; role, address and sizes from the
        broker and its store, which own them."""
        return dataclasses.replace(
            HAConfig.from_properties(self.to_properties()), broker_role=self.broker_role,
            ha_listen_port=self.effective_ha_port, bind_address=self.bind_address,
            sync_flush_timeout=store.sync_flush_timeout,
            mapped_file_size_commit_log=store.mapped_file_size_commit_log)

    def tls_server(self) -> TlsServerSettings:
        """The remoting and HA ports' TLS mode and certificate (tls.server.*)."""
        return TlsServerSettings.from_properties(self.extra)

    def tls_client(self) -> TlsClientSettings:
        """The broker's own connections: registration, broker-to-broker calls, the HA slave (tls.enable)."""
        return TlsClientSettings.from_properties(self.extra)

    def client_security(self) -> ClientSecurity | None:
        """What the broker's RemotingClient wraps its connections with (None: plain)."""
        tls = self.tls_client()
        if not tls.enable:
            return None
        return ClientSecurity(tls=TlsClientOptions(tls.trust_cert_path, tls.cert_path, tls.key_path,
                                                   verify=tls.auth_server, key_password=tls.key_password))

    def validate(self) -> None:
        """RocketMQ's start-up checks; raises ConfigError with a one-line message."""
        if self.flush_disk_type not in FLUSH_TYPES:
            raise ConfigError(f"flushDiskType must be ASYNC_FLUSH or SYNC_FLUSH, not {self.flush_disk_type!r}")
        if self.enable_controller_mode:
            if not self.controller_addrs():
                raise ConfigError("enableControllerMode=true needs controllerAddr (ip:port;ip:port)")
        elif self.is_slave and self.broker_id <= 0:
            raise ConfigError(f"a SLAVE broker needs brokerId > 0 (got {self.broker_id})")
        elif not self.is_slave:
            self.broker_id = 0
        try:
            self.namesrv_list()
        except ValueError as exc:
            raise ConfigError(f"{exc} (namesrvAddr)") from None
        if not 0 <= self.listen_port < 65536:
            raise ConfigError(f"listenPort out of range: {self.listen_port}")
        if not self.broker_name.strip():
            raise ConfigError("brokerName is blank")
        if not 0 <= self.front_workers <= MAX_FRONT_WORKERS:
            raise ConfigError(f"frontWorkers must be 0 to {MAX_FRONT_WORKERS}, not {self.front_workers}")
        if self.default_topic_queue_nums <= 0:
            raise ConfigError("defaultTopicQueueNums must be > 0")
        if self.flush_consumer_offset_interval <= 0:  # RocketMQ's scheduler refuses it too
            raise ConfigError("flushConsumerOffsetInterval must be > 0")
        if self.transaction_check_interval <= 0:
            raise ConfigError("transactionCheckInterval must be > 0")
        if not self.broker_ip2:
            self.broker_ip2 = self.broker_ip1
        self.ha_config(self.store_config())  # the store and HA keys parse too, or this start fails here
        self.tls_server().context()  # certificate, key and CA files load, or this start fails here
        self.tls_client().context()


BROKER_PROPERTIES = PropertyMap(BrokerConfig,
                                overrides={"broker_ip1": "brokerIP1", "broker_ip2": "brokerIP2"})


def load_config(
    path: Path | None,
    overrides: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
) -> BrokerConfig:
    """File, then command-line overrides, then NAMESRV_ADDR when no address was given."""
    env = os.environ if env is None else env
    props: dict[str, str] = {}
    if path is not None:
        try:
            props = parse_properties(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    props.update(overrides or {})
    if not props.get("namesrvAddr", "").strip() and env.get("NAMESRV_ADDR", "").strip():
        props["namesrvAddr"] = env["NAMESRV_ADDR"].strip()
    config = BrokerConfig()
    config.apply(props)
    config.validate()
    return config
