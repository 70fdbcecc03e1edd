"""`mq admin ha status|ready`: replication in human terms, and whether stopping a master is safe now.

mqadmin's haStatus gives a byte diff per slave connection. `ha status` adds what the bytes mean: the
diff in messages, the time to catch up, whether the slave is falling behind (the trend over a window of
samples), and the slave's own view (its master, max offset, last read and write). `ha ready` answers
"can I stop this group's master now?" with a verdict and its reasons, and an exit code for scripts:
0 safe, 1 not safe, 3 unknown (the name servers or the master cannot be asked), 2 usage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from mqtools.cli.admin.common import (
    usage,
)
from mqtools.cli.admin.session import Session, admin_command
from mqtools.cli.output import View

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin
    from mqtools.client.admin.models.ha_readiness import HAReadiness

app = typer.Typer(help="Replication: per-slave lag in bytes, messages and seconds; safe-to-stop verdicts.",
                  no_args_is_help=True)
WindowOpt = Annotated[float, typer.Option(
    "--window", help="Seconds of samples the trend is taken over (0: one sample, no trend).", min=0.0)]


@admin_command(app, "status", output=True, watch=True)
def status(
    s: Session,
    broker_addr: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "-b", "--broker", help="The group holding this broker address (master or slave).")] = None,
    cluster: Annotated[Optional[str], typer.Option("-c", "--cluster", help="Every group of this cluster.")] = None,  # noqa: UP045
    window: WindowOpt = 2.0,
) -> None:
    """Replication per master and slave: lag in bytes, messages and seconds, trend, the slave's view.

    Per master, every slave: ack offset, diff in bytes and in messages, transfer speed, time to catch
    up, in sync, the trend over --window; and what the slave reports: its master, max offset, last read
    and write. Neither -b nor -c: every group the name servers know.

    Example: mq admin ha status -c DefaultCluster --window 5
    """
    if broker_addr is not None and cluster is not None:
        raise usage("give -b or -c, not both")
    from mqtools.client.admin.models.ha_views import ha_status_view

    async def build(admin: MQAdmin) -> View:
        groups = await admin.ha.ha_replication(broker_addr=broker_addr, cluster=cluster, window=window)
        return ha_status_view(groups, window)

    s.show(build)


@admin_command(app, "ready", output=True)
def ready(
    s: Session,
    broker_name: Annotated[str, typer.Argument(help="Broker name (the group), e.g. broker-a.")],
    max_diff: Annotated[int, typer.Option("--max-diff", help="Most bytes the slave may lack.", min=0)] = 1024 * 1024,
    max_catchup: Annotated[float, typer.Option(
        "--max-catchup", help="Most seconds the slave may need to catch up.", min=0.0)] = 10.0,
    window: WindowOpt = 2.0,
) -> None:
    """Is it safe to stop this group's master now? Exit 0 safe, 1 not safe, 3 unknown.

    The verdict comes with its reasons: slave connected and answering, in sync, diff under --max-diff,
    catching up within --max-catchup, not falling behind; and what the master's send mode makes stopping
    it cost (SYNC_MASTER with an in-sync slave: nothing acknowledged; ASYNC_MASTER: up to the diff).

    Example: mq admin ha ready broker-a --max-diff 0 -o json
    """
    from mqtools.client.admin.models.ha_views import EXIT_BY_VERDICT, ha_ready_view

    async def assess(admin: MQAdmin) -> HAReadiness:
        return await admin.ha.ha_ready(broker_name, max_diff=max_diff, max_catchup_s=max_catchup, window=window)

    result = s.run(assess)
    s.print(ha_ready_view(result, window))
    raise typer.Exit(EXIT_BY_VERDICT[result.verdict])
