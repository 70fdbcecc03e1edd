"""RocketMQ 5 proxies and their gRPC clients: `mq admin proxy status|clients`.

A proxy answers GET_CONSUMER_CONNECTION_LIST for a group on its remoting port (Apache's rocketmq-proxy and
mq's); it has no request that lists its groups, so the groups asked are the cluster's (every broker set's
subscription groups) plus those given. mq's proxy also answers GET_PRODUCER_CONNECTION_LIST for a topic (the
group of a gRPC producer); Apache's refuses the code, and its producers are then not known. With the name
server down the cluster's groups and topics cannot be listed: only the ones given are asked, and the document
says so. A proxy that does not answer, or refuses the user (a proxy with authenticationEnabled), is named in
`unreachable` with why, the others are read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from mqtools.client.admin.base import AdminService, reason_of
from mqtools.client.admin.models.proxies import (
    CONSUMER_KINDS,
    PRODUCER,
    ProxiedClients,
    ProxyClient,
    ProxyClients,
    ProxyRead,
)
from mqtools.client.errors import MQBrokerError, MQClientError, UnreachableError
from mqtools.common.mqversion import version_desc
from mqtools.common.presentation import NA, Unreachable
from mqtools.common.topics import is_dlq_topic, is_retry_topic, is_system_group, is_system_topic
from mqtools.remoting.bodies import Connection, ConsumerConnection, ProducerConnection
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import ConsumerGroupRequestHeader, GetProducerConnectionListRequestHeader


def _client(proxy: str, kind: str, group: str, conn: Connection) -> ProxyClient:
    return ProxyClient(proxy, kind, group, conn.client_id, conn.client_addr, conn.language, version_desc(conn.version))


class ProxyAdmin(AdminService):
    """What each proxy reports of its gRPC clients."""

    async def _names(self) -> tuple[list[str], list[str]]:
        """The cluster's consumer groups and topics, without the system ones."""
        listed = await self.admin.groups.group_list()
        if listed.unreachable:  # the proxies would be asked about some groups only: their figures not whole
            raise UnreachableError("the groups of " + "; ".join(str(u) for u in listed.unreachable))
        groups = [e.group for e in listed.entries if not is_system_group(e.group)]
        topics = [t for t in await self.admin.topics.topic_list()
                  if not (is_system_topic(t) or is_retry_topic(t) or is_dlq_topic(t))]
        return groups, topics

    async def consumers(self, proxy: str, group: str) -> list[ProxyClient]:
        """The group's clients on `proxy` (none: the proxy answered CONSUMER_NOT_ONLINE)."""
        resp = await self.admin.call(proxy, RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                     ConsumerGroupRequestHeader(group).to_ext(),
                                     ok=(ResponseCode.SUCCESS, ResponseCode.CONSUMER_NOT_ONLINE))
        if resp.code != ResponseCode.SUCCESS:
            return []
        body = ConsumerConnection.from_json(resp.body or b"{}")
        kind = CONSUMER_KINDS.get(body.consume_type or "", body.consume_type or NA)
        return [_client(proxy, kind, group, c) for c in body.connection_set]

    async def producers(self, proxy: str, topic: str) -> list[ProxyClient] | None:
        """The topic's producers on `proxy`; None when the proxy does not answer for producers."""
        resp = await self.admin.call(proxy, RequestCode.GET_PRODUCER_CONNECTION_LIST,
                                     GetProducerConnectionListRequestHeader(topic).to_ext(),
                                     ok=(ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR,
                                         ResponseCode.REQUEST_CODE_NOT_SUPPORTED))
        if resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            return None
        if resp.code != ResponseCode.SUCCESS:
            return []
        body = ProducerConnection.from_json(resp.body or b"{}")
        return [_client(proxy, PRODUCER, topic, c) for c in body.connection_set]

    async def _read(self, proxy: str, groups: Sequence[str], topics: Sequence[str]) -> ProxyRead | Unreachable:
        try:
            found = [c for g in await asyncio.gather(*(self.consumers(proxy, g) for g in groups)) for c in g]
            # the first topic alone: a proxy that refuses the code (Apache's) is asked once; then the rest at once
            first = await self.producers(proxy, topics[0]) if topics else []
            lists_producers = first is not None
            if first is not None:
                rest = await asyncio.gather(*(self.producers(proxy, t) for t in topics[1:]))
                found += [c for got in (first, *rest) for c in got or ()]
        except UnreachableError as exc:
            return Unreachable(None, proxy, reason_of(exc))
        except MQBrokerError as exc:  # a proxy that checks users refused this one (or answered an error)
            return Unreachable(None, proxy, f"refused: {exc.remark or exc}")
        return ProxyRead(proxy, sorted(found, key=lambda c: (c.kind == PRODUCER, c.group, c.client_id)),
                         lists_producers)

    async def proxy_clients(self, proxies: Sequence[str], groups: Sequence[str] = (), topics: Sequence[str] = ()
                            ) -> ProxyClients:
        """Ask each proxy about the cluster's groups and topics and those given."""
        if not proxies:
            raise MQClientError("no proxy to ask: give its remoting address (host:8080)")
        listing_error = None
        try:
            cluster_groups, cluster_topics = await self._names()
        except MQClientError as exc:
            cluster_groups, cluster_topics, listing_error = [], [], str(exc) or type(exc).__name__
        asked_groups = sorted({*cluster_groups, *groups})
        asked_topics = sorted({*cluster_topics, *topics})
        reads = await asyncio.gather(*(self._read(p, asked_groups, asked_topics) for p in proxies))
        return ProxyClients([r for r in reads if isinstance(r, ProxyRead)], asked_groups, asked_topics,
                            listing_error, [r for r in reads if isinstance(r, Unreachable)])

    async def clients_of(self, proxies: Sequence[str], groups: Sequence[str] = (), topics: Sequence[str] = ()
                         ) -> ProxiedClients:
        """The given groups' gRPC consumers and topics' gRPC producers on each of `proxies`, asked about those alone
        (`group connections -p`, `producer connections -p`); a proxy that answers only about consumers is named
        in `not_listing` when topics were asked."""
        reads = await asyncio.gather(*(self._read(p, groups, topics) for p in proxies))
        answered = [r for r in reads if isinstance(r, ProxyRead)]
        return ProxiedClients(list(proxies), [c for r in answered for c in r.clients],
                              [r for r in reads if isinstance(r, Unreachable)],
                              [r.addr for r in answered if topics and not r.lists_producers])
