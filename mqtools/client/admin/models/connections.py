"""Who is connected: a consumer group's clients and a producer group's, as the brokers see them, and the gRPC
clients of RocketMQ 5 proxies beside them (`group connections`, `producer connections`; MCP's group_connections);
every producer of every group on the masters (`producer list`, mqadmin's producer).
The brokers never see a proxy's gRPC clients: those come from the proxies asked, with the proxy in a VIA column."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqtools.client.admin.models.groups import ClientConnection, GroupConnections, ProducerClients
from mqtools.client.admin.models.proxies import ProxiedClients
from mqtools.common.mqversion import version_desc
from mqtools.common.presentation import NA, Column, Unreachable, View, renders

__all__ = ["CLIENT_COLUMNS", "ProducerInstance", "ProducerTable", "client_json", "client_row", "group_connections_view",
           "producer_connections_view", "producer_table_view"]

CLIENT_COLUMNS = [Column("CLIENT ID"), Column("ADDR"), Column("LANGUAGE"), Column("VERSION")]


def client_row(c: ClientConnection) -> list[Any]:
    return [c.client_id, c.client_addr, c.language, version_desc(c.version)]


def client_json(c: ClientConnection) -> dict[str, Any]:
    """An online client (consumer or producer) as the JSON documents give it."""
    return {"clientId": c.client_id, "clientAddr": c.client_addr, "language": c.language, "version": c.version,
            "versionDesc": version_desc(c.version)}


@renders("GroupConnections")
def group_connections_view(group: str, online: GroupConnections | None,
                           through: ProxiedClients | None = None) -> View:
    """The group's online clients; `online` is None when no client of the group is online at the brokers.
    `through`: its gRPC clients as the proxies asked report them (the brokers never see those), as rows after
    the brokers' with the proxy in VIA; a proxy that did not answer makes the document partial."""
    conns = online.connections if online else []
    subs = online.subscriptions if online else {}
    via = through.clients if through is not None else []
    data = {"group": group, "clients": [client_json(c) for c in conns], "subscriptions": subs,
            "consumeType": online.consume_type if online else None,
            "messageModel": online.message_model if online else None,
            "consumeFromWhere": online.consume_from_where if online else None,
            "proxiesAsked": through.asked if through is not None else [],
            "proxyClients": [c.to_json() for c in via]}
    footer = [f"subscription: {t} {e}" for t, e in subs.items()] if online else \
        [f"no client of {group} is online" + ("" if through is None else
                                              f" at the brokers; {len(via)} through the proxies asked")]
    if online:
        footer.append(f"consume type {online.consume_type}, model {online.message_model}, "
                      f"from {online.consume_from_where}")
    if through is None:
        return View("GroupConnections", CLIENT_COLUMNS, [client_row(c) for c in conns], data, footer=footer)
    rows = [[*client_row(c), "broker"] for c in conns] + \
        [[c.client_id, c.client_addr, c.language, c.version, f"proxy {c.proxy} ({c.kind})"] for c in via]
    return View("GroupConnections", [*CLIENT_COLUMNS, Column("VIA")], rows, data, footer=footer,
                unreachable=through.unreachable)


@renders("ProducerConnections")
def producer_connections_view(group: str, topic: str, producers: ProducerClients,
                              through: ProxiedClients | None = None) -> View:
    """The producers of `group` connected to the brokers serving `topic` (the ones asked); `through`: the topic's
    gRPC producers as the proxies asked report them (a gRPC producer has no group: the proxy files it under the
    topic), with the proxy in VIA."""
    conns = producers.clients
    via = through.clients if through is not None else []
    data = {"group": group, "topic": topic, "clients": [client_json(c) for c in conns],
            "proxiesAsked": through.asked if through is not None else [],
            "proxyClients": [c.to_json() for c in via],
            "proxiesNotListing": through.not_listing if through is not None else []}
    footer = [] if conns else [f"no producer of {group} is connected to the brokers of {topic}"]
    if through is None:
        return View("ProducerConnections", CLIENT_COLUMNS, [client_row(c) for c in conns], data, footer=footer,
                    unreachable=producers.unreachable)
    footer.append(f"{len(via)} gRPC producer(s) of {topic} through the proxies asked")
    footer += [f"n/a producers on {p}: it answers only about consumers (Apache's rocketmq-proxy)"
               for p in through.not_listing]
    rows = [[*client_row(c), "broker"] for c in conns] + \
        [[c.client_id, c.client_addr, c.language, c.version, f"proxy {c.proxy}"] for c in via]
    return View("ProducerConnections", [*CLIENT_COLUMNS, Column("VIA")], rows, data, footer=footer,
                unreachable=[*producers.unreachable, *through.unreachable])


@dataclass(frozen=True, slots=True)
class ProducerInstance:
    """One producer as a broker's producer table lists it (GET_ALL_PRODUCER_INFO); `remote_ip` as the broker gives
    it (Apache: Netty's /host:port), `last_heartbeat_ms` the broker's time of its last heartbeat."""

    broker_name: str | None
    broker_addr: str
    group: str
    client_id: str
    remote_ip: str
    language: str
    version: int
    last_heartbeat_ms: int


@dataclass(frozen=True, slots=True)
class ProducerTable:
    """Every producer the brokers asked know of; a broker that did not answer (or a set without a master, where
    producers would be connected) is in `unreachable` and its producers are missing."""

    producers: list[ProducerInstance]
    unreachable: list[Unreachable] = field(default_factory=list)


@renders("ProducerTable")
def producer_table_view(table: ProducerTable) -> View:
    rows = [[p.group, p.client_id, p.remote_ip.lstrip("/"), p.language, version_desc(p.version), p.broker_name or NA]
            for p in table.producers]
    data = {"producers": [{"brokerName": p.broker_name, "brokerAddr": p.broker_addr, "group": p.group,
                           "clientId": p.client_id, "remoteIp": p.remote_ip, "language": p.language,
                           "version": p.version, "versionDesc": version_desc(p.version),
                           "lastHeartbeatMs": p.last_heartbeat_ms} for p in table.producers]}
    columns = [Column("GROUP"), Column("CLIENT ID"), Column("ADDR"), Column("LANGUAGE"), Column("VERSION"),
               Column("BROKER")]
    footer = [] if table.producers else ["no producer is connected to the brokers asked"]
    return View("ProducerTable", columns, rows, data, footer=footer, unreachable=table.unreachable)
