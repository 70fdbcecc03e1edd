"""`mq broker ...`: the broker role."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(help="Broker role.", no_args_is_help=True)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"mq: error: {message}", err=True)
    return typer.Exit(1)


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
) -> None:
    """Start a broker; flags override the properties file. Stops cleanly on SIGINT/SIGTERM."""
    from mqtools.remoting.loop import run
    from mqtools.server.broker.app import BrokerController, StartError, serve
    from mqtools.server.broker.config import ConfigError, load_config

    overrides: dict[str, str] = {}
    if namesrv is not None:
        overrides["namesrvAddr"] = namesrv
    if listen_port is not None:
        overrides["listenPort"] = str(listen_port)
    if store_dir is not None:
        overrides["storePathRootDir"] = str(store_dir)
    if broker_name is not None:
        overrides["brokerName"] = broker_name
    try:
        config = load_config(config_file, overrides)
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    controller = BrokerController(config, config_path=config_file)
    try:
        run(serve(controller))
    except StartError as exc:
        raise _fail(str(exc)) from None
