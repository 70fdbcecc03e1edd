"""The proxy's configuration: Apache's rmq-proxy.json keys (ProxyConfig), their defaults, flags over the file.

Apache's proxy reads a JSON object whose keys are ProxyConfig's field names (rocketMQClusterName, namesrvAddr,
proxyMode, grpcServerPort, remotingListenPort, ...). The same file works here: the keys this proxy uses are
fields below; any other key Apache knows is kept in `extra` and ignored, so a real rmq-proxy.json loads as is.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqtools.common.configkeys import ConfigError
from mqtools.common.errors import ToolkitError
from mqtools.common.tls import TLS_SERVER_MODE, TlsMode


class ProxyConfigError(ToolkitError, ValueError):
    """A config file or value the proxy cannot use; the message is one line for the user (exit 1 through the
    CLI's frame)."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


#: Field names whose camelCase form is not the mechanical one (Apache spells the cluster key oddly).
_KEY_OF = {"rocketmq_cluster_name": "rocketMQClusterName", "tls_enable": "tls.enable",
           "tls_client_trust_cert_path": "tls.client.trustCertPath", "tls_server_mode": TLS_SERVER_MODE}


@dataclass
class ProxyConfig:
    """What `mq proxy start` runs with (ProxyConfig's names and defaults, Apache 5.5)."""

    rocketmq_cluster_name: str = "DefaultCluster"
    namesrv_addr: str | None = None
    #: cluster: `mq proxy start`; local: inside a broker's process (`mq broker start --enable-proxy`).
    proxy_mode: str = "cluster"
    grpc_server_port: int = 8081
    remoting_listen_port: int = 8080
    #: Address the gRPC server binds (not an Apache key: Apache binds every interface).
    grpc_bind_address: str = "0.0.0.0"
    #: The host answered in QueryRoute; empty: the host the client reached the proxy at (its access point).
    grpc_advertised_host: str = ""
    #: QueryRoute answers the ports of the client's access point, not this proxy's own gRPC port (Apache's key):
    #: for proxies on one host with different ports, so a client given all of them can move between them.
    use_endpoint_port_from_request: bool = False
    grpc_max_inbound_message_size: int = 130 * 1024 * 1024
    max_message_size: int = 4 * 1024 * 1024
    enable_message_body_empty_check: bool = True
    max_user_property_size: int = 16 * 1024
    user_property_max_num: int = 128
    max_message_group_size: int = 64
    min_invisible_time_mills_for_recv: int = 10_000
    max_invisible_time_mills: int = 12 * 3600 * 1000
    max_delay_time_mills: int = 24 * 3600 * 1000
    max_transaction_recovery_second: int = 3600
    enable_topic_message_type_check: bool = True
    grpc_client_producer_max_attempts: int = 3
    grpc_client_producer_backoff_initial_millis: int = 10
    grpc_client_producer_backoff_max_millis: int = 1000
    grpc_client_producer_backoff_multiplier: int = 2
    grpc_client_consumer_min_long_polling_timeout_millis: int = 5_000
    grpc_client_consumer_max_long_polling_timeout_millis: int = 20_000
    grpc_client_consumer_long_polling_batch_size: int = 32
    transaction_heartbeat_period_second: int = 20
    transaction_data_expire_millis: int = 30_000
    long_polling_reserve_time_in_millis: int = 100
    #: The gRPC port's certificate and key (PEM), Apache's keys; empty: plaintext only.
    tls_cert_path: str = ""
    tls_key_path: str = ""
    #: How often the proxy looks whether tlsCertPath or tlsKeyPath changed (Apache 5.5's key and default: an hour;
    #: the brokers and name servers look every half second, as Apache's do).
    tls_cert_watch_interval_ms: int = 3_600_000
    #: tls.server.mode (a JVM property of Apache's proxy): permissive takes TLS and plaintext on the one port,
    #: enforcing TLS only, disabled plaintext only. Empty: permissive with a certificate, else disabled.
    tls_server_mode: str = ""
    #: RocketMQ's tls.enable / tls.client.trustCertPath for the proxy's own connections to the brokers and
    #: name servers (Apache reads them as JVM properties; here they may sit in the JSON file).
    tls_enable: bool = False
    tls_client_trust_cert_path: str = ""
    #: AuthConfig (ACL 2.0): check every call's signature against the brokers' users.
    authentication_enabled: bool = False
    #: Request names (e.g. apache.rocketmq.v2.QueryRouteRequest), comma-separated, that skip authentication.
    authentication_whitelist: str = ""
    #: JSON {"accessKey": ..., "secretKey": ...}: the proxy's own user towards brokers that authenticate.
    inner_client_authentication_credentials: str = ""
    user_cache_max_num: int = 1000
    user_cache_refresh_second: int = 60
    #: AuthConfig (ACL 2.0): check what every call asks against the signed user's rules (Super users pass).
    authorization_enabled: bool = False
    #: Request names, comma-separated, that skip authorization.
    authorization_whitelist: str = ""
    acl_cache_max_num: int = 1000
    acl_cache_refresh_second: int = 60
    #: Concurrent ReceiveMessage calls (each one holds a broker long poll, which a call whose client left holds
    #: until the broker answers it); more are answered TOO_MANY_REQUESTS.
    max_concurrent_receive: int = 1024
    #: Apache 5's send fault tolerance (fault.py): sends leave a broker whose sends failed or were slow.
    send_latency_enable: bool = False
    #: ...and each such broker is asked every detectInterval ms whether it answers (within detectTimeout ms).
    start_detector_enable: bool = False
    detect_timeout: int = 200
    detect_interval: int = 2000
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def keys(cls) -> dict[str, str]:
        """Apache's key -> field name, for every field the file may set."""
        return {_KEY_OF.get(f.name, _camel(f.name)): f.name for f in dataclasses.fields(cls) if f.name != "extra"}

    def apply(self, values: dict[str, Any]) -> None:
        """Set the known keys (type-checked against the defaults), keep the rest in `extra`."""
        keys = self.keys()
        for key, value in values.items():
            name = keys.get(key)
            if name is None:
                self.extra[key] = value
                continue
            setattr(self, name, _coerce(key, value, type(getattr(self, name)) if getattr(self, name) is not None
                                        else str))
        self.validate()

    def validate(self) -> None:
        if self.proxy_mode.lower() not in ("cluster", "local"):
            raise ProxyConfigError(f"proxyMode {self.proxy_mode!r}: 'cluster' or 'local'")
        for key, port in (("grpcServerPort", self.grpc_server_port), ("remotingListenPort", self.remoting_listen_port)):
            if not 0 <= port <= 65535:
                raise ProxyConfigError(f"{key} {port} is not a port")
        if self.detect_timeout <= 0 or self.detect_interval <= 0:
            raise ProxyConfigError("detectTimeout and detectInterval must be > 0 (milliseconds)")
        if self.max_message_size <= 0 or self.grpc_max_inbound_message_size <= 0:
            raise ProxyConfigError("maxMessageSize and grpcMaxInboundMessageSize must be > 0")
        if self.tls_cert_watch_interval_ms <= 0:
            raise ProxyConfigError("tlsCertWatchIntervalMs must be > 0 (milliseconds)")
        if bool(self.tls_cert_path) != bool(self.tls_key_path):
            raise ProxyConfigError("tlsCertPath and tlsKeyPath go together: set both to serve TLS, or neither")
        if self.tls_mode is not TlsMode.DISABLED and not self.tls_cert_path:
            raise ProxyConfigError(f"{TLS_SERVER_MODE}={self.tls_mode.value} needs tlsCertPath and tlsKeyPath "
                                   "(mq makes no test-mode certificates; mq cluster up --tls makes a local CA)")
        self.inner_credentials()

    def inner_credentials(self) -> tuple[str, str] | None:
        """(accessKey, secretKey) of innerClientAuthenticationCredentials, None when not set."""
        raw = self.inner_client_authentication_credentials.strip()
        if not raw:
            return None
        try:
            data = json.loads(raw)
            return str(data["accessKey"]), str(data["secretKey"])
        except (ValueError, KeyError, TypeError):
            raise ProxyConfigError("innerClientAuthenticationCredentials must be JSON with accessKey and "
                                   "secretKey") from None

    @property
    def tls_mode(self) -> TlsMode:
        """What the gRPC port takes: tls.server.mode, by default permissive with a certificate (Apache's default)."""
        if not self.tls_server_mode.strip():
            return TlsMode.PERMISSIVE if self.tls_cert_path else TlsMode.DISABLED
        try:
            return TlsMode.parse(self.tls_server_mode)
        except ConfigError as exc:
            raise ProxyConfigError(str(exc)) from None

    @property
    def namesrv_list(self) -> str:
        addr = self.namesrv_addr or os.environ.get("NAMESRV_ADDR")
        if not addr:
            raise ProxyConfigError("no name server: set namesrvAddr in the config, -n, or NAMESRV_ADDR")
        return addr


def _coerce(key: str, value: Any, kind: type) -> Any:
    if kind is bool:
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("true", "false"):
            return str(value).lower() == "true"
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
            return int(value)
    elif kind is str:
        return str(value)
    raise ProxyConfigError(f"{key}: {value!r} is not a {kind.__name__}")


def load_file(path: Path) -> dict[str, Any]:
    """The JSON object of an rmq-proxy.json."""
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise ProxyConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ProxyConfigError(f"{path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProxyConfigError(f"{path}: a JSON object of settings is expected")
    return data
