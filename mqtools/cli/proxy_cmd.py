"""`mq proxy ...`: the gRPC proxy role (RocketMQ 5's rocketmq-proxy, cluster mode)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from mqtools.cli.frame import needs_extra
from mqtools.cli.serve import run_server, server_logging

app = typer.Typer(help="gRPC proxy role (RocketMQ 5 clients over gRPC, brokers over remoting).",
                  no_args_is_help=True)


@app.command()
def start(
    config_file: Annotated[
        Optional[Path],  # noqa: UP045 - typer needs Optional here
        typer.Option("-c", "--config", help="Apache-style rmq-proxy.json (rocketMQClusterName, namesrvAddr, "
                                            "grpcServerPort, proxyMode, ...)."),
    ] = None,
    namesrv: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("-n", "--namesrv-addr", help="Name servers, 'host:9876;host2:9876' (else NAMESRV_ADDR)."),
    ] = None,
    grpc_port: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--grpc-port", help="gRPC port (grpcServerPort); 0 lets the OS choose. Default 8081."),
    ] = None,
    remoting_port: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--remoting-port", help="remotingListenPort: the port tools ask about the proxy's gRPC clients "
                                             "(mq admin proxy ...); 0 lets the OS choose. Default 8080."),
    ] = None,
    host: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--host", help="Address the gRPC server binds. Default 0.0.0.0."),
    ] = None,
) -> None:
    """Start a proxy in cluster mode; flags override the file. Stops cleanly on SIGINT/SIGTERM."""
    with needs_extra("proxy", "the proxy (grpcio and protobuf)"):
        from mqtools.proxy.config import ProxyConfig, ProxyConfigError, load_file
        from mqtools.proxy.local import tls_words
        from mqtools.proxy.server import ProxyServer, server_certificates
    from mqtools.server.lifecycle import listen, serve

    config = ProxyConfig()
    overrides: dict[str, object] = {k: v for k, v in {"namesrvAddr": namesrv, "grpcServerPort": grpc_port,
                                                      "remotingListenPort": remoting_port,
                                                      "grpcBindAddress": host}.items() if v is not None}
    if config_file is not None:
        config.apply(load_file(config_file))
    config.apply(overrides)
    config.namesrv_list  # noqa: B018 - no name server is a start failure, in one line
    server_certificates(config)  # unreadable TLS files too
    if config.proxy_mode.lower() == "local":
        raise ProxyConfigError("proxyMode local runs inside a broker: mq broker start -c broker.properties "
                               "--enable-proxy (or enableProxy=true in its properties)")
    server_logging()
    proxy = ProxyServer(config)

    class _Listening:
        async def start(self) -> None:
            bind = config.grpc_bind_address
            await listen(proxy, f"{bind}:{config.grpc_server_port} (gRPC) or {bind}:{config.remoting_listen_port} "
                                f"(remoting)")

        async def shutdown(self) -> None:
            await proxy.shutdown()

    def ready() -> None:
        bind = config.grpc_bind_address
        shown = "127.0.0.1" if bind in ("0.0.0.0", "::", "") else bind
        typer.echo(f"The Proxy boot success. gRPC {bind}:{proxy.port}, cluster {config.rocketmq_cluster_name}, "
                   f"name servers {config.namesrv_list}")
        auth = " authentication=true" if config.authentication_enabled else ""
        remoting = f" remoting={proxy.remoting.port}" if proxy.remoting is not None else ""
        typer.echo(f"READY proxy {shown}:{proxy.port} mode=cluster{remoting}{tls_words(config)}{auth}")

    run_server(serve(_Listening(), ready))


class LocalProxy:
    """Apache's local mode (`mqbroker --enable-proxy`): the gRPC proxy in the broker's process and loop, started
    after the broker and stopped before it. It reaches the broker over loopback remoting like a cluster-mode
    proxy (Apache's calls the broker's processors directly), with the broker's cluster, name servers,
    maxMessageSize, authentication and TLS (the gRPC port serves TLS when the broker's port does)."""

    def __init__(self, broker_props: dict[str, str], config_file: Path | None, grpc_port: int | None) -> None:
        from mqtools.proxy.local import local_config
        from mqtools.proxy.server import ProxyServer

        self.config = local_config(broker_props, config_file, grpc_port)
        self.server = ProxyServer(self.config)

    async def start(self) -> None:
        from mqtools.server.lifecycle import listen

        await listen(self.server, f"{self.config.grpc_bind_address}:{self.config.grpc_server_port}")

    async def shutdown(self) -> None:
        await self.server.shutdown()

    def ready_line(self, host: str) -> str:
        from mqtools.proxy.local import tls_words

        auth = (" authentication=true" if self.config.authentication_enabled else "") + \
            (" authorization=true" if self.config.authorization_enabled else "")
        return f"READY proxy {host}:{self.server.port} mode=local{tls_words(self.config)}{auth}"
