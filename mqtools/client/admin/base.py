"""AdminBase: what every admin operation stands on, kept apart so `client.py` reads as the operations.

One ClientInstance (connections, route cache, and the gateway every request goes through: a code
outside the accepted set becomes the named MQBrokerError subclass, a connection failure or timeout
UnreachableError), one timeout, and fan-out helpers that ask several brokers or name servers at once.

Reads of a broker set go to its master, else to a slave, as Apache's mqadmin reads them (`read_sets`): a
master that is gone or does not answer costs one timeout per set, not one per queue, and what no replica
answered for comes back as `Unreachable`, for the document to say it is partial.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from mqtools.client.admin.models.configs import not_everywhere
from mqtools.client.errors import (
    MQClientError,
    NoMasterError,
    PartialWriteError,
    RequestTimeoutError,
    TopicNotExistError,
    UnreachableError,
    broker_error,
    reason_of,
    settled,
)
from mqtools.client.instance import ClientInstance
from mqtools.client.route import TopicRoute
from mqtools.common.addresses import parse_namesrv_list
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.presentation import ReadSource, Unreachable
from mqtools.common.security import ClientSecurity
from mqtools.common.topics import RETRY_GROUP_TOPIC_PREFIX
from mqtools.remoting.bodies import ClusterInfo
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand

if TYPE_CHECKING:
    from mqtools.client.admin.client import MQAdmin

T = TypeVar("T")


def masters_of(route: TopicRoute) -> dict[str, str]:
    """broker name -> master address of a route's brokers; brokers without a master are left out."""
    return {name: addrs[MASTER_ID] for name, addrs in route.broker_addrs.items() if MASTER_ID in addrs}


SILENT_FOR = 10.0
"""Seconds an admin session leaves a broker alone after a request to it timed out (a long-lived session, `mq top`
or the exporter, asks it again after that)."""

#: Requests a broker passes on to a client and answers with the client's answer: a paused or slow client
#: makes them time out while the broker is fine, so such a timeout does not silence the broker.
RELAYED = frozenset({RequestCode.GET_CONSUMER_RUNNING_INFO, RequestCode.CONSUME_MESSAGE_DIRECTLY,
                     RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS})

NO_MASTER = "no master registered"


def broker_sets(route: TopicRoute) -> dict[str, dict[int, str]]:
    """broker name -> {broker id: address} of a route's broker sets, master-less ones included."""
    return {name: dict(addrs) for name, addrs in route.broker_addrs.items()}


def one_target(cluster: str | None, broker_addr: str | None) -> None:
    """A cluster-or-broker operation is given exactly one of the two."""
    if (cluster is None) == (broker_addr is None):
        raise MQClientError("give exactly one of cluster= or broker_addr=")


@dataclass(slots=True)
class NamesrvWrites:
    """A change sent to every name server: the answers of those that applied it, the failures of the rest. Name
    servers do not talk to each other, so one that was down misses the change (as Apache's mqadmin, which
    reports each name server's outcome)."""

    applied: dict[str, RemotingCommand]
    failed: dict[str, MQClientError]

    def error(self) -> MQClientError:
        return not_everywhere(self.applied, self.failed)


@dataclass(slots=True)
class BrokerWrites:
    """A write sent to several targets (brokers, or broker sets) at once, every one settled: the answers of those
    that applied it, the failures of the rest."""

    applied: dict[str, Any]
    failed: dict[str, MQClientError]

    def error(self, what: str, namesrvs: Mapping[str, MQClientError | None] | None = None) -> MQClientError:
        """What kept `what` from some targets (and `namesrvs`, the name servers not updated after): a write to one
        target that failed there raises that failure as it is; otherwise PartialWriteError names them all."""
        if not self.applied and len(self.failed) == 1 and not namesrvs:
            return next(iter(self.failed.values()))
        return PartialWriteError(what, list(self.applied), self.failed, namesrvs)


@dataclass(frozen=True, slots=True)
class SetRead(Generic[T]):
    """One broker set's answer, the replica that gave it and whether that was its master or a slave."""

    addr: str
    source: ReadSource
    value: T


@dataclass(slots=True)
class SetReads(Generic[T]):
    """What `read_sets` got: an answer per broker set that answered, and the sets no replica answered for."""

    reads: dict[str, SetRead[T]]
    unreachable: list[Unreachable]

    def from_slaves(self) -> list[str]:
        return sorted(name for name, r in self.reads.items() if r.source == ReadSource.SLAVE)

    def doubt_slaves(self, what: str, empty: Callable[[T], bool] = lambda value: value is None) -> SetReads[T]:
        """A slave learns topics, groups and offsets from its master every few seconds (Apache 5.5's every 60 s,
        or never: see docs/outages.md): its "no such `what`" (an answer `empty` says holds nothing) for a set
        whose master did not answer is not a fact, so that set becomes unreachable. Unreachable sets are kept
        sorted by name."""
        for name, r in list(self.reads.items()):
            if r.source == ReadSource.SLAVE and empty(r.value):
                del self.reads[name]
                self.unreachable.append(Unreachable(name, r.addr, f"no master answering; the slave does not know "
                                                                  f"the {what} yet"))
        self.unreachable.sort(key=lambda u: u.broker_name or "")
        return self


class AdminBase:
    """Connections, timeout and request plumbing shared by every admin operation."""

    def __init__(self, namesrv: str | list[str], *, timeout: float = 5.0,
                 security: ClientSecurity | None = None, silent_for: float = SILENT_FOR) -> None:
        addrs = parse_namesrv_list(namesrv) if isinstance(namesrv, str) else list(namesrv)
        if not addrs:
            raise MQClientError("no name server address given")
        self.timeout = timeout
        self.instance = ClientInstance(addrs, timeout=timeout, security=security)
        self.silent_for = silent_for
        """Seconds a broker that let a request time out is not asked again (0: always asked, for a session that
        measures recovery)."""
        self._silent: dict[str, float] = {}
        """Broker address -> monotonic time until which it is not asked again."""

    async def close(self) -> None:
        await self.instance.shutdown()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def namesrv_addrs(self) -> list[str]:
        return self.instance.namesrv_addrs

    def certificate_not_after(self, addr: str) -> float | None:
        """When the TLS certificate `addr` served on the open connection expires (epoch seconds): what a name
        server, which reports nothing of its own, is known by; None without TLS, verification or a connection."""
        return self.instance.remoting.peer_not_after(addr)

    # plumbing -------------------------------------------------------------------------

    async def call(self, addr: str | None, code: int, ext: dict[str, str] | None = None, body: bytes | None = None,
                   *, ok: tuple[int, ...] = (ResponseCode.SUCCESS,), timeout: float | None = None) -> RemotingCommand:
        """One request (to a name server when addr is None); a code outside `ok` raises. A broker that let a
        request time out is not asked again for `silent_for` seconds: a hung broker costs a command one
        timeout, not one per request (a read that tries it again gets the same RequestTimeoutError at once). A
        request the broker relays to a client (RELAYED) that times out says nothing of the broker; a name server
        is always asked (Apache's leaves mq's private requests unanswered, and the other requests still work)."""
        if addr is not None and self._silent.get(addr, 0.0) > time.monotonic():
            raise RequestTimeoutError(f"{addr} let a request time out in the last {self.silent_for:g} s; "
                                      "not asked again yet")
        try:
            return await self.instance.invoke(addr, RemotingCommand.request(code, ext or {}, body),
                                              timeout or self.timeout, ok=ok)
        except RequestTimeoutError:
            if addr is not None and code not in RELAYED and addr not in self.instance.namesrv_addrs:
                self._silent[addr] = time.monotonic() + self.silent_for
            raise

    async def _namesrv_writes(self, code: int, ext: dict[str, str], body: bytes | None = None) -> NamesrvWrites:
        """A change sent to every name server at once (each keeps its own tables): who applied it, who did not."""
        results = await self.instance.invoke_each_namesrv(lambda: RemotingCommand.request(code, dict(ext), body))
        writes = NamesrvWrites({}, {})
        for addr, resp in results.items():
            if isinstance(resp, MQClientError):
                writes.failed[addr] = resp
            elif resp.code != ResponseCode.SUCCESS:
                writes.failed[addr] = broker_error(resp.code, resp.remark)
            else:
                writes.applied[addr] = resp
        return writes

    async def _each_namesrv(self, code: int, ext: dict[str, str],
                            body: bytes | None = None) -> dict[str, RemotingCommand]:
        """Send to every name server; any failure raises after all have been tried, naming where it applied."""
        writes = await self._namesrv_writes(code, ext, body)
        if writes.failed:
            raise writes.error()
        return writes.applied

    @staticmethod
    async def write_each(targets: Sequence[str], fn: Callable[[str], Awaitable[Any]]) -> BrokerWrites:
        """`fn(target)` for every target at once, each settled before this returns: a target that failed or hung
        never cuts short the others, nor hides where they applied."""
        answers = await asyncio.gather(*(settled(fn(t)) for t in targets))
        writes = BrokerWrites({}, {})
        for target, answer in zip(targets, answers, strict=True):
            if isinstance(answer, MQClientError):
                writes.failed[target] = answer
            else:
                writes.applied[target] = answer
        return writes

    async def _each(self, addrs: list[str], fn: Callable[[str], Awaitable[Any]],
                    what: str = "the change") -> dict[str, Any]:
        """A write to every address at once (write_each): each one's answer, or, once all have settled, one error
        naming where `what` applied and where not (BrokerWrites.error)."""
        writes = await self.write_each(addrs, fn)
        if writes.failed:
            raise writes.error(what)
        return writes.applied

    async def cluster_info(self) -> ClusterInfo:
        resp = await self.call(None, RequestCode.GET_BROKER_CLUSTER_INFO)
        return ClusterInfo.from_json(resp.body or b"{}")

    async def master_addrs(self, cluster: str | None = None) -> dict[str, str]:
        """broker name -> master address, for one cluster or all; brokers without a master are left out."""
        info = await self.cluster_info()
        if cluster is not None and cluster not in info.cluster_addr_table:
            raise MQClientError(f"cluster {cluster} not found (known: {', '.join(sorted(info.cluster_addr_table))})")
        names = info.cluster_addr_table[cluster] if cluster else set(info.broker_addr_table)
        out = {}
        for name in sorted(names):
            data = info.broker_addr_table.get(name)
            if data is not None and MASTER_ID in data.broker_addrs:
                out[name] = data.broker_addrs[MASTER_ID]
        return out

    async def read_sets(self, sets: Mapping[str, Mapping[int, str]],
                        fn: Callable[[str], Awaitable[T]]) -> SetReads[T]:
        """`fn(addr)` once per broker set: its master, else (gone or not answering) each slave by id until
        one answers. Errors other than unreachability (a refusal) are answers and propagate."""

        async def one(name: str, addrs: Mapping[int, str]) -> SetRead[T] | Unreachable:
            order = sorted(addrs, key=lambda i: (i != MASTER_ID, i))
            if not order:
                return Unreachable(name, None, "not registered")
            tried: list[str] = [] if MASTER_ID in addrs else [NO_MASTER]
            for broker_id in order:
                addr = addrs[broker_id]
                try:
                    return SetRead(addr, ReadSource.MASTER if broker_id == MASTER_ID else ReadSource.SLAVE, await fn(addr))
                except UnreachableError as exc:
                    tried.append(reason_of(exc) if broker_id == MASTER_ID else f"slave {addr}: {reason_of(exc)}")
            master = addrs.get(MASTER_ID)
            return Unreachable(name, master or addrs[order[0]], "; ".join(tried))

        names = sorted(sets)
        results = await asyncio.gather(*(one(n, sets[n]) for n in names))
        reads: dict[str, SetRead[T]] = {}
        missed: list[Unreachable] = []
        for name, result in zip(names, results, strict=True):
            if isinstance(result, Unreachable):
                missed.append(result)
            else:
                reads[name] = result
        return SetReads(reads, missed)

    _settled = staticmethod(settled)
    """One dead broker never sinks a snapshot (mqtools.client.errors.settled)."""

    async def ask_each(self, targets: Sequence[tuple[str | None, str]], code: int, ext: dict[str, str] | None = None, *,
                       ok: tuple[int, ...] = (ResponseCode.SUCCESS,)
                       ) -> tuple[list[tuple[str | None, str, RemotingCommand]], list[Unreachable]]:
        """`code` to each (broker name, address) at once: (name, address, answer) of those that answered, in
        order, and those that did not, named; a refusal (a code outside `ok`) propagates."""
        answers = await asyncio.gather(*(settled(self.call(addr, code, ext, ok=ok)) for _, addr in targets))
        got: list[tuple[str | None, str, RemotingCommand]] = []
        missed: list[Unreachable] = []
        for (name, addr), resp in zip(targets, answers, strict=True):
            if isinstance(resp, UnreachableError):
                missed.append(Unreachable(name, addr, reason_of(resp)))
            elif isinstance(resp, MQClientError):
                raise resp
            else:
                got.append((name, addr, resp))
        return got, missed

    async def _route(self, topic: str) -> TopicRoute:
        """Fetch and cache the route, so offset and pull helpers find the topic's brokers."""
        route = await self.instance.route(topic, refresh=True)
        if route is None:
            raise TopicNotExistError(ResponseCode.TOPIC_NOT_EXIST,
                                     f"No topic route info in name server for the topic: {topic}")
        return route

    async def route_masters(self, topic: str) -> dict[str, str]:
        """broker name -> master address for the brokers that serve a topic."""
        return masters_of(await self._route(topic))

    async def _targets(self, cluster: str | None, broker_addr: str | None) -> list[str]:
        """Where a write goes: one broker, or every master of a cluster; NoMasterError (nothing written) when
        a set of the cluster has no master."""
        one_target(cluster, broker_addr)
        if broker_addr is not None:
            return [broker_addr]
        return self.masters_of_all(await self.all_sets(cluster), f"cluster {cluster}'s change")

    @staticmethod
    def masters_of_all(sets: Mapping[str, Mapping[int, str]], what: str) -> list[str]:
        """The masters of every set, for a write that must reach them all; NoMasterError naming the sets
        without one (and MQClientError for no set at all)."""
        if not sets:
            raise MQClientError(f"no broker set to write {what} to")
        missing = sorted(n for n, addrs in sets.items() if MASTER_ID not in addrs)
        if missing:
            raise NoMasterError(missing, what)
        return [sets[n][MASTER_ID] for n in sorted(sets)]

    async def every_broker(self, cluster: str | None, broker_addr: str | None) -> list[str]:
        """Where a change each broker keeps on its own goes (ACL accounts, users and rules): one broker, or every
        broker of a cluster, masters and slaves, as mqadmin's `-c` sends it; a set without a master still gets
        it on its slaves."""
        one_target(cluster, broker_addr)
        if broker_addr is not None:
            return [broker_addr]
        sets = await self.all_sets(cluster)
        addrs = [a for name in sorted(sets) for _, a in sorted(sets[name].items())]
        if not addrs:
            raise MQClientError(f"no broker in cluster {cluster}")
        return addrs

    async def read_brokers(self, cluster: str | None, broker_addr: str | None,
                           fn: Callable[[str], Awaitable[T]]) -> tuple[list[T], list[Unreachable]]:
        """A read of what each broker keeps on its own: one broker, or each set of a cluster from its master,
        else a slave (which `every_broker` writes reach too). What did not answer is named, never left out;
        other errors (a refusal) propagate."""
        one_target(cluster, broker_addr)
        if broker_addr is not None:
            try:
                return [await fn(broker_addr)], []
            except UnreachableError as exc:
                return [], [Unreachable(None, broker_addr, reason_of(exc))]
        sets = await self.all_sets(cluster)
        if not sets:
            raise MQClientError(f"no broker in cluster {cluster}")
        read = await self.read_sets(sets, fn)
        return [read.reads[name].value for name in sorted(read.reads)], read.unreachable

    async def all_sets(self, cluster: str | None = None) -> dict[str, dict[int, str]]:
        """broker name -> {id: address} of every broker set (of one cluster), master-less ones included."""
        info = await self.cluster_info()
        if cluster is not None and cluster not in info.cluster_addr_table:
            raise MQClientError(f"cluster {cluster} not found (known: {', '.join(sorted(info.cluster_addr_table))})")
        names = info.cluster_addr_table[cluster] if cluster else set(info.broker_addr_table)
        return {n: dict(info.broker_addr_table[n].broker_addrs) for n in sorted(names) if n in info.broker_addr_table}

    async def group_sets(self, group: str, topic: str | None) -> dict[str, dict[int, str]]:
        """Where a group's offsets live, as broker sets: the topic's, else its retry topic's, else every set."""
        for candidate in (topic, RETRY_GROUP_TOPIC_PREFIX + group):
            if candidate is None:
                continue
            with contextlib.suppress(TopicNotExistError):
                return broker_sets(await self._route(candidate))
        return await self.all_sets()


class AdminService:
    """One area of the admin API (topics, groups, offsets, ...): its operations, over the facade's
    connections and plumbing (`admin`, an MQAdmin), through which it also asks the other areas."""

    def __init__(self, admin: MQAdmin) -> None:
        self.admin = admin
