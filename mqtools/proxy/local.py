"""Apache's local mode (`mqbroker --enable-proxy`): the gRPC proxy's config taken from the broker's properties,
and the READY line's TLS words shared with `mq proxy start`."""

from __future__ import annotations

from pathlib import Path

from mqtools.common.tls import TlsMode
from mqtools.proxy.config import ProxyConfig, ProxyConfigError, load_file
from mqtools.proxy.server import server_certificates

#: Broker properties a local-mode proxy takes over: its cluster, limits and authentication follow the broker's
#: (not authenticationWhitelist: the broker's lists remoting codes, the proxy's gRPC request names).
FROM_BROKER = {"brokerClusterName": "rocketMQClusterName", "namesrvAddr": "namesrvAddr",
               "maxMessageSize": "maxMessageSize", "authenticationEnabled": "authenticationEnabled",
               "authorizationEnabled": "authorizationEnabled",
               "innerClientAuthenticationCredentials": "innerClientAuthenticationCredentials",
               "tls.enable": "tls.enable", "tls.client.trustCertPath": "tls.client.trustCertPath",
               "tls.server.certPath": "tlsCertPath", "tls.server.keyPath": "tlsKeyPath",
               "tls.server.mode": "tls.server.mode"}


def tls_words(config: ProxyConfig) -> str:
    """The READY line's TLS words: nothing when the gRPC port is plaintext only."""
    mode = config.tls_mode
    return "" if mode is TlsMode.DISABLED else f" tls=true tls.server.mode={mode.value}"


def local_config(broker_props: dict[str, str], config_file: Path | None, grpc_port: int | None) -> ProxyConfig:
    """The proxy's config in a broker with enableProxy: the broker's cluster, name servers, maxMessageSize,
    authentication and TLS over the proxy's own file, `proxyMode` local; ProxyConfigError, led by
    `enableProxy:`, for what would not start (no name server, unreadable TLS files)."""
    config = ProxyConfig()
    taken = {mine: broker_props[theirs] for theirs, mine in FROM_BROKER.items() if broker_props.get(theirs)}
    try:
        if config_file is not None:
            config.apply(load_file(config_file))
        config.apply({**taken, "proxyMode": "local", **({"grpcServerPort": grpc_port} if grpc_port is not None
                                                         else {})})
        config.namesrv_list  # noqa: B018
        server_certificates(config)
    except ProxyConfigError as exc:
        raise ProxyConfigError(f"enableProxy: {exc}") from None
    return config
