"""`mq exporter`: serve a cluster's figures to Prometheus under rocketmq-exporter's metric names."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from mqtools.cli.admin.common import NO_OPTIONS, ClusterOptions, TimeoutOpt, cluster_command, usage
from mqtools.cli.frame import on_interrupt
from mqtools.common.exitcodes import EXIT_OK

DEFAULT_LISTEN = "127.0.0.1:5557"


def listen_addr(text: str) -> tuple[str, int]:
    """--listen's HOST:PORT, port 0 allowed (any free one)."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise usage(f"--listen: expected HOST:PORT, not {text!r}")
    return host.strip("[]"), int(port)


@cluster_command
def exporter(
    where: ClusterOptions = NO_OPTIONS,
    listen: Annotated[str, typer.Option("--listen", help="HOST:PORT to serve /metrics on (port 0: any free one).")]
    = DEFAULT_LISTEN,
    interval: Annotated[float, typer.Option("--interval", help="Seconds between polls of the cluster.", min=1.0)]
    = 15.0,
    timeout: TimeoutOpt = 5.0,
    proxies: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045 - typer needs Optional here
        "--proxy", help="Also a RocketMQ 5 proxy's remoting address (host:8080; repeat for more): its gRPC clients, "
                        "which the brokers never see.")] = None,
) -> None:
    """Prometheus exporter: rocketmq-exporter's metrics (dashboard 10477 works unchanged) plus mq's own
    (HA diff and catch-up, ha ready, heartbeat ages, controller epoch, with --proxy the proxies' gRPC clients).
    Runs until interrupted.

    Example: mq exporter -n 127.0.0.1:9876 --listen 0.0.0.0:5557
    """
    from mqtools.client.admin import MQAdmin
    from mqtools.common.loop import run as run_loop
    from mqtools.exporter.collector import serve_metrics
    from mqtools.exporter.poller import ExporterPoller

    host, port = listen_addr(listen)
    target = where.resolve()

    async def serve() -> None:
        async with MQAdmin(target.namesrv, timeout=timeout, security=target.security) as admin:
            poller = ExporterPoller(admin, interval, proxies=list(proxies or (target.context.proxies if target.context else ())))
            server, bound = serve_metrics(poller, host, port)
            typer.echo(f"serving metrics on http://{host}:{bound}/metrics (polling {target.namesrv} "
                       f"every {interval:g} s)", err=False)
            try:
                await poller.run()
            finally:
                server.shutdown()

    on_interrupt(EXIT_OK)
    run_loop(serve())
