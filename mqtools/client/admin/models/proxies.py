"""What RocketMQ 5 proxies know of their gRPC clients: `mq admin proxy status` (one line per proxy) and
`mq admin proxy clients` (one line per client).

The brokers never see a proxy's gRPC consumers, so a group served only through proxies is "not online" at the
brokers; `group connections` lists them from the proxies it is given, and each proxy answers for its own clients on
its remoting port. A consumer is listed under its
group, a producer under its topic (a gRPC producer's group is its topic). A proxy that lists no producers
(Apache's answers only about consumers) has `producers` unknown, not 0.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mqtools.common.presentation import Column, Unreachable, View, renders

__all__ = ["ProxiedClients", "ProxyClient", "ProxyClients", "ProxyRead", "proxy_clients_view", "proxy_status_view"]

#: ProxyClient.kind by the ConsumeType a proxy reports for a group (a PushConsumer, a SimpleConsumer).
CONSUMER_KINDS = {"CONSUME_PASSIVELY": "PUSH", "CONSUME_ACTIVELY": "SIMPLE"}
PRODUCER = "PRODUCER"


@dataclass(frozen=True, slots=True)
class ProxyClient:
    proxy: str
    kind: str
    """PUSH or SIMPLE (a consumer), PRODUCER, or the consume type as the proxy named it."""
    group: str
    """The consumer group; a producer's topic."""
    client_id: str
    client_addr: str
    language: str
    version: str
    """MQVersion's name of the version the proxy reports."""

    def to_json(self) -> dict[str, Any]:
        return {"proxy": self.proxy, "kind": self.kind, "group": self.group, "clientId": self.client_id,
                "clientAddr": self.client_addr, "language": self.language, "version": self.version}


@dataclass(frozen=True, slots=True)
class ProxyRead:
    """One proxy that answered."""

    addr: str
    clients: list[ProxyClient]
    lists_producers: bool
    """False: the proxy does not answer for producers (Apache's), so how many it has is not known."""

    @property
    def consumer_groups(self) -> int:
        return len({c.group for c in self.clients if c.kind != PRODUCER})

    @property
    def consumers(self) -> int:
        return len({(c.group, c.client_id) for c in self.clients if c.kind != PRODUCER})

    @property
    def producers(self) -> int | None:
        return len({c.client_id for c in self.clients if c.kind == PRODUCER}) if self.lists_producers else None

    @property
    def languages(self) -> dict[str, int]:
        """Distinct clients per language."""
        seen = {(c.client_id, c.language) for c in self.clients}
        return dict(sorted(Counter(lang for _, lang in seen).items()))

    @property
    def languages_text(self) -> str:
        """`JAVA 2, PYTHON 1`, or `-` for a proxy without clients: how tables show `languages`."""
        return ", ".join(f"{lang} {n}" for lang, n in self.languages.items()) or "-"

    def to_json(self) -> dict[str, Any]:
        return {"addr": self.addr, "consumerGroups": self.consumer_groups, "consumers": self.consumers,
                "producers": self.producers, "languages": self.languages}


@dataclass(frozen=True, slots=True)
class ProxiedClients:
    """A consumer group's gRPC clients, or a topic's gRPC producers, as the proxies asked report them (`group
    connections -p`, `producer connections -p`)."""

    asked: list[str]
    clients: list[ProxyClient]
    unreachable: list[Unreachable] = field(default_factory=list)
    not_listing: list[str] = field(default_factory=list)
    """Proxies that answer only about consumers (Apache's): their producers are not known."""


@dataclass(frozen=True, slots=True)
class ProxyClients:
    proxies: list[ProxyRead]
    groups_asked: list[str]
    topics_asked: list[str]
    listing_error: str | None = None
    """Why the cluster's groups and topics could not be listed (only those given were asked); None: listed."""
    unreachable: list[Unreachable] = field(default_factory=list)

    @property
    def clients(self) -> list[ProxyClient]:
        return [c for p in self.proxies for c in p.clients]

    @property
    def missed(self) -> list[Unreachable]:
        """What the read could not reach: the proxies that did not answer, and the name servers when the cluster's
        groups and topics could not be listed (every proxy's figures then leave out what was not asked)."""
        listing = [Unreachable(None, None, f"the cluster's groups and topics: {self.listing_error}")] \
            if self.listing_error else []
        return [*self.unreachable, *listing]

    def footer(self) -> list[str]:
        notes = [(f"the cluster's groups and topics could not be listed ({self.listing_error}): only "
                 f"{len(self.groups_asked)} group(s) and {len(self.topics_asked)} topic(s) given were asked")] \
            if self.listing_error else []
        if any(not p.lists_producers for p in self.proxies):
            notes.append("n/a producers: the proxy answers only about consumers (Apache's rocketmq-proxy)")
        return notes

    def _json(self) -> dict[str, Any]:
        return {"groupsAsked": len(self.groups_asked), "topicsAsked": len(self.topics_asked),
                "listingError": self.listing_error}


@renders("ProxyStatus")
def proxy_status_view(p: ProxyClients) -> View:
    rows: list[list[Any]] = [[r.addr, r.consumer_groups, r.consumers, r.producers, r.languages_text]
                             for r in p.proxies]
    # a proxy asked that did not answer keeps its line, its figures not known (the JSON's `unreachable` names it)
    rows += [[u.addr, None, None, None, f"not answering: {u.reason}"] for u in p.unreachable]
    data = {"proxies": [r.to_json() for r in p.proxies], **p._json()}
    return View("ProxyStatus", [Column("PROXY"), Column("GROUPS", True), Column("CONSUMERS", True),
                                Column("PRODUCERS", True), Column("LANGUAGES")],
                rows, data, title="proxies", footer=p.footer(), unreachable=p.missed)


@renders("ProxyClients")
def proxy_clients_view(p: ProxyClients) -> View:
    rows = [[c.proxy, c.kind, c.group, c.client_id, c.client_addr, c.language, c.version] for c in p.clients]
    data = {"clients": [c.to_json() for c in p.clients], **p._json()}
    return View("ProxyClients", [Column("PROXY"), Column("KIND"), Column("GROUP / TOPIC"), Column("CLIENT ID"),
                                 Column("ADDR"), Column("LANGUAGE"), Column("VERSION")],
                rows, data, title="gRPC clients of the proxies", footer=p.footer(), unreachable=p.missed)
