"""Before the load: the cluster's layout as the report's header shows it, the target group, `ha ready`.

Everything is read through MQAdmin, so a local cluster and one elsewhere look the same; for a local
cluster the process names of its state dir are attached to the addresses.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from mqtools.client.errors import MQClientError
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.errors import UsageError
from mqtools.drills.scenarios import Node, ScenarioError, Target

if TYPE_CHECKING:
    from mqtools.client.admin import MQAdmin


HA_WINDOW = 1.0
"""Seconds of HA samples behind a verdict: enough for a trend, short enough to repeat while draining."""


class UnknownTarget(UsageError):
    """--target names a broker group the name servers do not know."""


async def layout(admin: MQAdmin, names: dict[str, str]) -> dict[str, Any]:
    """Clusters, every broker with role, flush and replication mode, and the name servers."""
    info = await admin.cluster_info()
    rows = []
    for cluster, brokers in sorted(info.cluster_addr_table.items()):
        for broker_name in sorted(brokers):
            data = info.broker_addr_table.get(broker_name)
            for broker_id, addr in sorted(data.broker_addrs.items()) if data else ():
                rows.append({"cluster": cluster, "brokerName": broker_name, "brokerId": broker_id, "addr": addr,
                             "name": names.get(addr, addr)})
    configs = await asyncio.gather(*(_config(admin, r["addr"]) for r in rows))
    controllers: set[str] = set()
    for row, config in zip(rows, configs, strict=True):
        row["role"] = config.get("brokerRole")
        row["flushDiskType"] = config.get("flushDiskType")
        row["controllerMode"] = config.get("enableControllerMode", "false").lower() == "true"
        if row["controllerMode"]:
            controllers.update(a.strip() for a in config.get("controllerAddr", "").split(";") if a.strip())
    return {"namesrv": list(admin.namesrv_addrs), "brokers": rows,
            "namesrvNames": [names.get(a, a) for a in admin.namesrv_addrs],
            "controllers": sorted(controllers), "controllerNames": [names.get(a, a) for a in sorted(controllers)]}


async def _config(admin: MQAdmin, addr: str) -> dict[str, str]:
    try:
        return await admin.brokers.broker_config(addr)
    except MQClientError:
        return {}


def choose_target(view: dict[str, Any], wanted: str | None, needs: str) -> Target:
    """The group named by --target, else the first by name; with the node the scenario needs."""
    groups = sorted({r["brokerName"] for r in view["brokers"]})
    if not groups:
        raise ScenarioError("the name servers know no broker")
    name = wanted or groups[0]
    if name not in groups:
        raise UnknownTarget(f"broker group {name} not found (known: {', '.join(groups)})")
    rows = [r for r in view["brokers"] if r["brokerName"] == name]
    master_row = next((r for r in rows if r["brokerId"] == MASTER_ID), None)
    slave_row = min((r for r in rows if r["brokerId"] != MASTER_ID), key=lambda r: r["brokerId"], default=None)
    master = None if master_row is None else Node(master_row["name"], master_row["addr"], master_row["role"] or "")
    slave = None if slave_row is None else Node(slave_row["name"], slave_row["addr"], slave_row["role"] or "SLAVE")
    namesrvs = list(zip(view["namesrvNames"], view["namesrv"], strict=True))
    namesrv = Node(namesrvs[0][0], namesrvs[0][1], "NAMESRV") if len(namesrvs) > 1 else None
    controlled = any(r.get("controllerMode") for r in rows)
    controllers = tuple(Node(n, a, "CONTROLLER")
                        for n, a in zip(view.get("controllerNames", []), view.get("controllers", []), strict=True)
                        ) if controlled else ()
    proxies = tuple(Node(p["name"], p["addr"], "PROXY") for p in view.get("proxies", []))
    target = Target(name, master, slave, master.role if master else None, namesrv, controllers, proxies)
    if needs.startswith("controller") and not controllers:
        raise ScenarioError(f"broker group {name} is not in controller mode: this drill needs a controller "
                            "(mq cluster up --preset 2m-2s-controller)")
    needs = needs.removeprefix("controller").lstrip("-") or "controller"
    if needs == "master" and master is None:
        raise ScenarioError(f"broker group {name} has no master registered")
    if needs in ("master", "slave") and slave is None:
        raise ScenarioError(f"broker group {name} has no slave: a {needs} drill needs one (try preset 2m-2s-sync)")
    if needs == "proxy" and len(proxies) < 2:
        raise ScenarioError("kill-proxy needs two or more gRPC proxies to move between (a local cluster from mq "
                            "cluster up --proxies 2, --preset, which brings two, or -n with --proxies A,B)")
    if needs == "namesrv" and namesrv is None:
        raise ScenarioError("a name-server drill (kill-namesrv, pause-namesrv) needs at least two name servers "
                            "(mq cluster up --namesrv 2)")
    return target


async def ha_verdict(admin: MQAdmin, target: Target, window: float = HA_WINDOW) -> dict[str, Any]:
    """`mq admin ha ready` for the target group (MQAdmin.ha_ready): safe / not safe / unknown, with its checks."""
    try:
        ready = await admin.ha.ha_ready(target.broker_name, window=window)
    except MQClientError as exc:
        return {"verdict": "unknown", "checks": [{"name": "ha ready", "ok": None, "detail": str(exc)}],
                "lossBytes": None, "lossMessages": None}
    return {"verdict": ready.verdict, "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in ready.checks],
            "lossBytes": ready.loss_bytes, "lossMessages": ready.loss_messages}
