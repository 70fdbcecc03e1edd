"""`mq broker ...`: the broker role."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from mqtools.cli.frame import needs_extra
from mqtools.cli.serve import option_overrides, run_server, server_logging

app = typer.Typer(help="Broker role.", no_args_is_help=True)


@app.command()
def start(
    config_file: Annotated[
        Optional[Path],  # noqa: UP045 - typer needs Optional here
        typer.Option("-c", "--config", help="RocketMQ-style broker.properties file."),
    ] = None,
    namesrv: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("-n", "--namesrv-addr", help="Name servers, 'host:9876;host2:9876' (else NAMESRV_ADDR)."),
    ] = None,
    listen_port: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--listen-port", help="TCP port (listenPort); 0 lets the OS choose. Default 10911."),
    ] = None,
    store_dir: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--store-dir", help="storePathRootDir (default ~/store)."),
    ] = None,
    broker_name: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--broker-name", help="brokerName."),
    ] = None,
    enable_proxy: Annotated[
        bool,
        typer.Option("--enable-proxy", help="Also serve gRPC (RocketMQ 5 clients) in this process: the proxy's "
                                            "local mode, as mqbroker --enable-proxy (or enableProxy=true)."),
    ] = False,
    proxy_config: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--proxy-config", help="rmq-proxy.json for --enable-proxy (grpcServerPort, ...)."),
    ] = None,
    grpc_port: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--grpc-port", help="gRPC port with --enable-proxy; 0 lets the OS choose. Default 8081."),
    ] = None,
) -> None:
    """Start a broker; flags override the properties file. Stops cleanly on SIGINT/SIGTERM."""
    from mqtools.server.broker.app import BrokerController
    from mqtools.server.broker.config import load_config
    from mqtools.server.lifecycle import Together, serve

    overrides = option_overrides({"namesrvAddr": namesrv, "listenPort": listen_port,
                                  "storePathRootDir": store_dir, "brokerName": broker_name})
    config = load_config(config_file, overrides)
    server_logging()
    controller = BrokerController(config, config_path=config_file)
    if not (enable_proxy or config.extra.get("enableProxy", "").lower() == "true"):
        run_server(serve(controller, lambda: typer.echo(controller.ready_line())))
        return
    with needs_extra("proxy", "enableProxy (grpcio and protobuf)"):
        from mqtools.cli.proxy_cmd import LocalProxy
        proxy = LocalProxy(config.to_properties(), proxy_config, grpc_port)

    def ready() -> None:
        typer.echo(controller.ready_line())
        typer.echo(proxy.ready_line(config.broker_ip1))

    run_server(serve(Together(controller, proxy), ready))
