"""`mq namesrv ...`: the name server role."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from mqtools.cli.serve import option_overrides, run_server, server_logging

app = typer.Typer(help="Name server role.", no_args_is_help=True)


@app.command()
def start(
    config_file: Annotated[
        Optional[Path],  # noqa: UP045 - typer needs Optional here
        typer.Option("-c", "--config", help="RocketMQ-style namesrv.properties file."),
    ] = None,
    listen_port: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--listen-port", help="TCP port (listenPort); 0 lets the OS choose. Default 9876."),
    ] = None,
    host: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--host", help="Address to listen on (bindAddress). Default 0.0.0.0."),
    ] = None,
    store_dir: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--store-dir",
            help="Directory for kvConfig.json (and namesrv.properties when no -c is given). "
            "Default ~/namesrv.",
        ),
    ] = None,
    kv_config_path: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--kv-config-path", help="Path of kvConfig.json (kvConfigPath); overrides --store-dir."),
    ] = None,
) -> None:
    """Start a name server; flags override the properties file. Stops cleanly on SIGINT/SIGTERM."""
    from mqtools.cli.controller_cmd import announce_controller, embedded_controller
    from mqtools.server.lifecycle import Together, serve
    from mqtools.server.namesrv.app import NamesrvController
    from mqtools.server.namesrv.config import NamesrvConfig, load_file

    config = NamesrvConfig()
    overrides: dict[str, str] = {}
    if store_dir is not None:
        overrides["kvConfigPath"] = str(store_dir / "kvConfig.json")
        overrides["configStorePath"] = str(store_dir / "namesrv.properties")
    overrides.update(option_overrides({"listenPort": listen_port, "bindAddress": host,
                                       "kvConfigPath": kv_config_path}))
    if config_file is not None:
        config.apply(load_file(config_file))
        config.config_store_path = str(config_file)
    config.apply(overrides)
    config.tls_server().context()  # the certificate and key load, or the start fails here in one line
    server_logging()

    namesrv = NamesrvController(config)
    controller = embedded_controller(config_file, config.extra) if config.enable_controller_in_namesrv else None

    def ready() -> None:
        bind = config.bind_address
        shown = "127.0.0.1" if bind in ("0.0.0.0", "::", "") else bind
        typer.echo(f"The Name Server boot success. address {bind}:{namesrv.port}")
        typer.echo(f"READY namesrv {shown}:{namesrv.port}")
        if controller is not None:
            announce_controller(controller)

    run_server(serve(namesrv if controller is None else Together(namesrv, controller), ready))
