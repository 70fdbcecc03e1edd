"""Name server configuration: RocketMQ's NamesrvConfig + NettyServerConfig keys.

A RocketMQ `namesrv.properties` works unchanged: known keys are applied (with type
checks, so `listenPort=abc` is an error, not a silent default), unknown keys are kept
and shown by GET_NAMESRV_CONFIG as RocketMQ does, but otherwise ignored.

Deviations, on purpose: `scanNotActiveBrokerInterval` defaults to 10 s (RocketMQ 4.x's
fixed period; 5.x uses 5 s), and `brokerChannelExpiredTime` (ms, default 120 s) is
mq's own key for the heartbeat timeout of brokers that do not send one themselves; below 10 s, the shortest
period brokers register in, a start (or UPDATE_NAMESRV_CONFIG) is refused.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from mqtools.common.configkeys import ConfigError, PropertyMap
from mqtools.common.javaprops import parse_properties
from mqtools.common.tls import TlsServerSettings

DEFAULT_LISTEN_PORT = 9876
#: Brokers register every registerNameServerPeriod, clamped to 10-60 s (Apache's and mq's brokers alike): an
#: expiry shorter than the shortest period drops every live broker between two of its registrations.
MIN_BROKER_CHANNEL_EXPIRED_TIME = 10_000


def _home_path(*parts: str) -> str:
    return str(Path.home().joinpath("namesrv", *parts))


@dataclass
class NamesrvConfig:
    # NettyServerConfig
    listen_port: int = DEFAULT_LISTEN_PORT
    bind_address: str = "0.0.0.0"
    # NamesrvConfig
    rocketmq_home: str = ""
    kv_config_path: str = field(default_factory=lambda: _home_path("kvConfig.json"))
    config_store_path: str = field(default_factory=lambda: _home_path("namesrv.properties"))
    product_env_name: str = "center"
    cluster_test: bool = False
    order_message_enable: bool = False
    return_order_topic_config_to_broker: bool = True
    scan_not_active_broker_interval: int = 10_000
    broker_channel_expired_time: int = 120_000
    enable_all_topic_list: bool = True
    #: Run a controller in this process too, configured by the ControllerConfig keys of the same file.
    enable_controller_in_namesrv: bool = False
    enable_topic_list: bool = True
    delete_topic_with_broker_registration: bool = False
    config_black_list: str = "configBlackList;configStorePath;kvConfigPath"
    #: Keys we do not use, kept so GET_NAMESRV_CONFIG shows the whole file.
    extra: dict[str, str] = field(default_factory=dict)

    def apply(self, props: dict[str, str]) -> None:
        """Set known keys from strings (raising ConfigError on bad values); keep the rest."""
        staged = NAMESRV_PROPERTIES.parse(props)
        _validate(dataclasses.replace(self, **staged))
        for name, value in staged.items():
            setattr(self, name, value)
        self.extra.update(NAMESRV_PROPERTIES.unknown(props))

    def to_properties(self) -> dict[str, str]:
        """All settings under their RocketMQ names, as GET_NAMESRV_CONFIG reports them."""
        return NAMESRV_PROPERTIES.to_properties(self, self.extra)

    def tls_server(self) -> TlsServerSettings:
        """TLS on the listening port: the tls.server.* keys of this file (mqtools.common.tls)."""
        return TlsServerSettings.from_properties(self.extra)

    def black_list(self) -> set[str]:
        return {k.strip() for k in self.config_black_list.split(";") if k.strip()}


NAMESRV_PROPERTIES = PropertyMap(NamesrvConfig)


def _validate(config: NamesrvConfig) -> None:
    """The values a name server cannot run with, checked before any is applied."""
    port = config.listen_port
    if not 0 <= port <= 65535:
        raise ConfigError(f"listenPort={port}: expected 0..65535")
    if config.scan_not_active_broker_interval <= 0:
        raise ConfigError("scanNotActiveBrokerInterval must be a positive number of milliseconds")
    if config.broker_channel_expired_time < MIN_BROKER_CHANNEL_EXPIRED_TIME:
        raise ConfigError(
            f"brokerChannelExpiredTime={config.broker_channel_expired_time}: expected at least "
            f"{MIN_BROKER_CHANNEL_EXPIRED_TIME} ms (brokers register every 10-60 s: shorter, every live broker "
            "expires between two registrations)")
    if not config.bind_address.strip():
        raise ConfigError("bindAddress must not be empty")


def load_file(path: Path) -> dict[str, str]:
    try:
        return parse_properties(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
