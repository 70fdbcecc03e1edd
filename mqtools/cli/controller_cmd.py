"""`mq controller ...`: the RocketMQ 5 controller role (controller mode's elections), standalone or, with
`enableControllerInNamesrv=true`, inside `mq namesrv start`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.serve import option_overrides, run_server, server_logging

if TYPE_CHECKING:
    from mqtools.server.controller.app import ControllerManager

app = typer.Typer(help="Controller role (RocketMQ 5 controller mode: master election, SyncStateSet).",
                  no_args_is_help=True)


@app.command()
def start(
    config_file: Annotated[
        Optional[Path],  # noqa: UP045 - typer needs Optional here
        typer.Option("-c", "--config", help="RocketMQ-style controller.properties file."),
    ] = None,
    listen_port: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--listen-port", help="TCP port of a lone controller (no controllerDLegerPeers). "
                     "Default 19876."),
    ] = None,
    store_dir: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--store-dir", help="Directory of the Raft log and snapshot (controllerStorePath). "
                     "Default ~/mqController."),
    ] = None,
) -> None:
    """Start a controller; flags override the properties file. Stops cleanly on SIGINT/SIGTERM."""
    from mqtools.server.lifecycle import serve

    server_logging()
    props = _load(config_file)
    props.update(option_overrides({"listenPort": listen_port, "controllerStorePath": store_dir}))
    controller = _build(props)
    run_server(serve(controller, lambda: announce_controller(controller)))


def embedded_controller(config_file: Path | None, props: dict[str, str]) -> ControllerManager:
    """The controller a name server runs inside (enableControllerInNamesrv), from the same file's keys."""
    return _build(_load(config_file) if config_file is not None else dict(props))


def announce_controller(controller: ControllerManager) -> None:
    config = controller.config
    typer.echo(f"The ControllerManager boot success. peers {config.controller_d_leger_peers or '(alone)'}")
    typer.echo(f"READY controller {config.peers()[config.self_id()]}")


def _load(config_file: Path | None) -> dict[str, str]:
    from mqtools.server.namesrv.config import load_file

    return load_file(config_file) if config_file is not None else {}


def _build(props: dict[str, str]) -> ControllerManager:
    from mqtools.server.controller.app import ControllerManager
    from mqtools.server.controller.config import ControllerConfig

    config = ControllerConfig()
    config.apply(props)
    return ControllerManager(config)
