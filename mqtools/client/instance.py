"""ClientInstance: what producers, consumers and the admin API of one process share.

One remoting client (name-server selection, a connection per broker), the route cache,
heartbeats to brokers, and the handler for requests brokers send to clients
(NOTIFY_CONSUMER_IDS_CHANGED, RESET_CONSUMER_CLIENT_OFFSET, CHECK_TRANSACTION_STATE). It is also the client side's one wire
gateway (RocketMQ's MQClientAPIImpl role): every request goes out through `invoke`, `invoke_oneway`
or `invoke_each_namesrv`, which turn transport failures into `UnreachableError` subclasses and
unexpected response codes into their named `MQBrokerError`, so nothing above sees the transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
from collections.abc import Callable, Collection
from typing import Protocol

from mqtools.client.errors import (
    MQClientError,
    NotAvailable,
    RequestTimeoutError,
    UnreachableError,
    broker_error,
    unreachable_error,
)
from mqtools.client.route import TopicRoute, with_default_queue_nums
from mqtools.common.addresses import parse_namesrv_list
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.codec import CorruptMessageError, decode_stored
from mqtools.common.message import MessageExt
from mqtools.common.properties import PGROUP
from mqtools.common.security import ClientSecurity
from mqtools.common.topics import AUTO_CREATE_TOPIC_KEY
from mqtools.remoting import fastjson
from mqtools.remoting.bodies import ConsumerData, HeartbeatData, ProducerData, TopicRouteData
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import LanguageCode, RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingError
from mqtools.remoting.headers import GetRouteInfoRequestHeader
from mqtools.remoting.transaction import CheckTransactionStateRequestHeader
from mqtools.remoting.transport import RemotingConnection

log = logging.getLogger(__name__)

ROUTE_REFRESH_INTERVAL = 30.0
HEARTBEAT_INTERVAL = 30.0
HEADLESS_ROUTE_RECHECK = 0.5
_instance_ids = itertools.count(1)


class ConsumerHooks(Protocol):
    """What the instance needs from a push consumer."""

    group: str

    def consumer_data(self) -> ConsumerData: ...
    def running_info(self) -> bytes: ...
    def rebalance_soon(self) -> None: ...
    def reset_offsets(self, topic: str, offsets: dict) -> None: ...


#: What a transactional producer is given when a broker asks about one of its half messages: the broker's
#: address, the request's header and the message.
TransactionChecker = Callable[[str, CheckTransactionStateRequestHeader, MessageExt], None]


def local_ip() -> str:
    """The address other hosts would see: the one the default route leaves from."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("10.255.255.255", 1))
        return sock.getsockname()[0]
    return "127.0.0.1"


class ClientInstance:
    """One process's link to the cluster (RocketMQ's MQClientInstance).

    `client_ip` is the address reported to brokers (RocketMQ's ClientConfig.clientIP), found
    from the default route when not given. `remoting` replaces the transport: tests pass an
    in-memory fake, which then receives no broker-initiated requests.
    """

    def __init__(self, namesrv: str | list[str], *, timeout: float = 3.0, instance_name: str | None = None,
                 client_ip: str | None = None, remoting: RemotingClient | None = None,
                 security: ClientSecurity | None = None) -> None:
        addrs = parse_namesrv_list(namesrv) if isinstance(namesrv, str) else list(namesrv)
        self.ip = client_ip or local_ip()
        self.client_id = f"{self.ip}@{instance_name or os.getpid()}#{next(_instance_ids)}"
        self.timeout = timeout
        self.remoting = remoting or RemotingClient(addrs, on_request=self._on_request, security=security)
        #: Topic -> its route, in the order read, the newest last (broker_addr reads the newest first).
        self.routes: dict[str, TopicRoute] = {}
        self._doubted: set[str] = set()
        #: Topic -> (when its route, in which a set has no master, is read next; the wait after that read).
        self._headless_next: dict[str, tuple[float, float]] = {}
        #: Addresses whose last request timed out (timed_out).
        self._unanswered: set[str] = set()
        #: Brokers a heartbeat went to (answered or not): the only ones that may have registered this client.
        self._greeted: set[str] = set()
        self.producer_groups: set[str] = set()
        self.consumers: dict[str, ConsumerHooks] = {}
        #: Producer group -> its TransactionProducer's handler of CHECK_TRANSACTION_STATE.
        self.transaction_checkers: dict[str, TransactionChecker] = {}
        self._task: asyncio.Task | None = None
        self._started = 0

    @property
    def namesrv_addrs(self) -> list[str]:
        return self.remoting.namesrv_addrs

    # life cycle -----------------------------------------------------------------------

    async def start(self) -> None:
        self._started += 1
        if self._task is None:
            self._task = asyncio.create_task(self._timers())

    async def shutdown(self) -> None:
        self._started -= 1
        if self._started > 0:
            return
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.remoting.close()

    async def _timers(self) -> None:
        """Every route and a heartbeat each period, as RocketMQ's clients; besides, at each tick, those a send
        doubted (refresh_soon) and, backing off, the routes in which a broker group has no master (_headless_due)."""
        loop = asyncio.get_running_loop()
        last_full = loop.time()
        while True:
            await asyncio.sleep(HEADLESS_ROUTE_RECHECK)
            now = loop.time()
            full = now - last_full >= min(ROUTE_REFRESH_INTERVAL, HEARTBEAT_INTERVAL)
            doubted, self._doubted = self._doubted, set()
            for topic, route in list(self.routes.items()):
                if full or topic in doubted or (route.headless and self._headless_due(topic, now)):
                    with contextlib.suppress(MQClientError):
                        await self.route(topic, refresh=True)
            if full:
                last_full = loop.time()
                await self.heartbeat()

    def _headless_due(self, topic: str, now: float) -> bool:
        """Whether a route in which a group has no master is read at this tick: at once, then after waits
        doubling from HEADLESS_ROUTE_RECHECK up to ROUTE_REFRESH_INTERVAL. A failover (in controller mode a
        master is elected within a second) is still seen within a second or two, while a classic set whose
        master is down for hours costs no more reads than the normal period; a master back resets it (_keep)."""
        due, wait = self._headless_next.get(topic, (now, HEADLESS_ROUTE_RECHECK))
        if now < due:
            return False
        self._headless_next[topic] = (now + wait, min(2 * wait, ROUTE_REFRESH_INTERVAL))
        return True

    # routes ---------------------------------------------------------------------------

    async def fetch_route(self, topic: str, timeout: float | None = None) -> TopicRouteData | None:
        """GET_ROUTEINFO_BY_TOPIC; None when the name server does not know the topic."""
        cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic).to_ext())
        resp = await self.invoke(None, cmd, timeout, ok=(ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST))
        if resp.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        if not resp.body:
            raise broker_error(ResponseCode.SYSTEM_ERROR, f"the route of {topic} came without a body")
        return TopicRouteData.from_json(resp.body)

    def refresh_soon(self, topic: str) -> None:
        """Re-read the topic's route at the next half-second tick, without the caller waiting on a name server:
        a send failed (the name servers may have dropped a dead master), or a master answered a send as stored
        but not replicated (FLUSH_SLAVE_TIMEOUT), which is what a master cut off from its group answers while
        the controllers elect another."""
        self._doubted.add(topic)

    async def route(self, topic: str, *, refresh: bool = False, timeout: float | None = None) -> TopicRoute | None:
        """The topic's route, read from the name servers when not cached or `refresh` (waiting at most `timeout`
        seconds, the instance's own by default); None when they do not know the topic.

        That answer does not drop a route held: a name server restarted empty says it of every topic until the
        brokers register again (up to 30 s), and Apache's MQClientInstance keeps topicRouteTable then, so the
        senders, pullers and heartbeats go on (the producer and the rebalance use `routes`). A topic really deleted
        keeps its route too, as in Apache's client: its brokers answer TOPIC_NOT_EXIST, or create it again where
        auto-create is on. An admin read that needs the literal answer gets None all the same."""
        if not refresh and topic in self.routes:
            return self.routes[topic]
        data = await self.fetch_route(topic, timeout)
        if data is None:
            return None
        route = TopicRoute.build(topic, data)
        self._keep(route)
        return route

    def _keep(self, route: TopicRoute) -> None:
        """Cache a route just read as the newest, so it decides its groups' nodes (RocketMQ overwrites
        brokerAddrTable with each route read); one with every master in it ends its backoff."""
        self.routes.pop(route.topic, None)
        self.routes[route.topic] = route
        if not route.headless:
            self._headless_next.pop(route.topic, None)

    async def publish_route(self, topic: str, default_queue_nums: int = 4, timeout: float | None = None
                            ) -> TopicRoute:
        """A route to send with; a new topic borrows TBW102's brokers so they auto-create it. Its reads take at most
        `timeout` in all (the instance's own by default): a send passes what is left of its budget."""
        route = self.routes.get(topic)
        if route is not None and route.publish:
            return route
        wait = timeout or self.timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        route = await self.route(topic, refresh=True, timeout=wait)
        if route is not None and route.publish:
            return route
        left = deadline - loop.time()
        if left <= 0:
            raise RequestTimeoutError(f"no route of {topic} within {wait:.3f}s")
        default = await self.fetch_route(AUTO_CREATE_TOPIC_KEY, left)
        if default is None:
            raise MQClientError(f"No route info of this topic: {topic}, and auto-create is not enabled on any broker")
        route = TopicRoute.build(topic, with_default_queue_nums(default, default_queue_nums))
        if not route.publish:
            raise MQClientError(f"No writable queue for topic {topic}")
        self._keep(route)
        return route

    def _node_table(self, broker_name: str) -> dict[int, str]:
        """The broker's id -> address table in the newest cached route that names it, as RocketMQ's
        brokerAddrTable that each route read overwrites: an older route may still list a master the name
        servers dropped since."""
        routes = reversed(self.routes.values())
        return next((r.broker_addrs[broker_name] for r in routes if broker_name in r.broker_addrs), {})

    def broker_addr(self, broker_name: str, broker_id: int = MASTER_ID, *, any_node: bool = True) -> str | None:
        """The address of that node of the broker; with any_node, another node when it is gone."""
        addrs = self._node_table(broker_name)
        if broker_id in addrs:
            return addrs[broker_id]
        return addrs[min(addrs)] if any_node and addrs else None

    def broker_nodes(self, broker_name: str) -> list[str]:
        """Every node of the broker in the table broker_addr reads, the master first, then the slaves by id."""
        addrs = self._node_table(broker_name)
        return [addrs[i] for i in sorted(addrs)]

    def timed_out(self, addr: str) -> bool:
        """True when the last request to this broker timed out (a hung broker): a goodbye that is only a courtesy
        (unregister, unlock) is not sent there, to close without waiting out another timeout."""
        return addr in self._unanswered

    def all_broker_addrs(self) -> set[str]:
        return {a for r in self.routes.values() for addrs in r.broker_addrs.values() for a in addrs.values()}

    # requests -------------------------------------------------------------------------

    async def invoke(self, addr: str | None, cmd: RemotingCommand, timeout: float | None = None, *,
                     ok: Collection[int] = (ResponseCode.SUCCESS,)) -> RemotingCommand:
        """One request to `addr` (the chosen name server when None) and its answer, whose code is in `ok`.

        A transport failure raises the UnreachableError subclass that says whether the request may
        have arrived; any other code raises its named MQBrokerError (NotAvailable when the server
        does not know the request, e.g. an mq-private code sent to Apache RocketMQ).
        """
        wait = timeout or self.timeout
        try:
            resp = await (self.remoting.invoke_namesrv(cmd, wait) if addr is None
                          else self.remoting.invoke(addr, cmd, wait))
        except RemotingError as exc:
            error = unreachable_error(exc)
            if addr is not None and isinstance(error, RequestTimeoutError):
                self._unanswered.add(addr)
            raise error from None
        if addr is not None:
            self._unanswered.discard(addr)
        if resp.code in ok:
            return resp
        if resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            raise NotAvailable(resp.code, f"{addr or 'name server'} does not support request code {int(cmd.code)}: "
                                          f"{resp.remark}")
        raise broker_error(resp.code, resp.remark)

    async def invoke_routed(self, topic: str, addr: str, cmd: RemotingCommand, timeout: float | None = None, *,
                            ok: Collection[int] = (ResponseCode.SUCCESS,)) -> RemotingCommand:
        """invoke to a broker chosen from `topic`'s route; one that cannot be reached has the route read again at
        the next tick (refresh_soon), so the requests after it skip a dead master the name server dropped."""
        try:
            return await self.invoke(addr, cmd, timeout, ok=ok)
        except UnreachableError:
            self.refresh_soon(topic)
            raise

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None:
        """A request no answer comes for (e.g. a reply to the broker, END_TRANSACTION)."""
        try:
            await self.remoting.invoke_oneway(addr, cmd)
        except RemotingError as exc:
            raise unreachable_error(exc) from None

    async def invoke_each_namesrv(self, make_cmd: Callable[[], RemotingCommand], timeout: float | None = None
                                  ) -> dict[str, RemotingCommand | UnreachableError]:
        """The same request to every name server at once: each one's answer (any code) or its failure."""
        answers = await self.remoting.invoke_each_namesrv(make_cmd, timeout or self.timeout)
        return {addr: unreachable_error(a) if isinstance(a, RemotingError) else a for addr, a in answers.items()}

    async def heartbeat(self) -> None:
        """HEART_BEAT with this process's producer and consumer groups; none when it has neither (a pull-only
        reader such as the Spark source's, an admin client), as Apache's client sends none then either."""
        if not self.producer_groups and not self.consumers:
            return
        data = HeartbeatData(
            client_id=self.client_id,
            producer_data_set=[ProducerData(g) for g in sorted(self.producer_groups)],
            consumer_data_set=[c.consumer_data() for c in self.consumers.values()],
        )
        body = data.to_json()
        targets = {
            addr
            for route in self.routes.values()
            for addrs in route.broker_addrs.values()
            for bid, addr in addrs.items()
            if bid == MASTER_ID or self.consumers
        }

        async def one(addr: str) -> None:
            self._greeted.add(addr)
            cmd = RemotingCommand.request(RequestCode.HEART_BEAT, body=body, language=LanguageCode.PYTHON)
            try:
                await self.invoke(addr, cmd)
            except MQClientError as exc:
                log.debug("heartbeat to %s failed: %s", addr, exc)

        await asyncio.gather(*(one(a) for a in sorted(targets)))

    async def unregister(self, *, producer_group: str | None = None, consumer_group: str | None = None) -> None:
        """UNREGISTER_CLIENT, to the brokers of the routes that this instance's heartbeats went to, at once.

        A broker learns a client's groups only from its heartbeats (and forgets them when the connection closes),
        so one no heartbeat went to has nothing to forget: a short-lived producer (a Spark task, shorter than the
        30 s heartbeat period) sends no goodbye at all. Apache's client says goodbye to every broker of its routes,
        one after the other, each waiting up to 3 s (mqClientApiTimeout): with a master hung, every closing
        producer of `mq spark-load` waited out a whole timeout there (3 s of a 4-message task's 3.02 s)."""
        ext = {"clientID": self.client_id}
        if producer_group:
            ext["producerGroup"] = producer_group
        if consumer_group:
            ext["consumerGroup"] = consumer_group

        async def one(addr: str) -> None:
            with contextlib.suppress(MQClientError):
                await self.invoke(addr, RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, dict(ext)))

        # A broker whose last request timed out is not asked: it would cost the shutdown a whole timeout, and the
        # broker drops the client's registration anyway when the connection closes.
        told = self._greeted & self.all_broker_addrs()
        await asyncio.gather(*(one(a) for a in sorted(told) if not self.timed_out(a)))

    def _on_request(self, conn: RemotingConnection, req: RemotingCommand) -> None:
        if req.code == RequestCode.CHECK_TRANSACTION_STATE:  # oneway: the answer is an END_TRANSACTION
            self._check_transaction(conn.peer, req)
            return
        handler: Callable[[RemotingCommand], RemotingCommand] | None = {
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: self._notify_ids_changed,
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET: self._reset_offset,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self._running_info,
        }.get(req.code)
        if handler is None:
            resp = req.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {req.code} not supported")
        else:
            try:
                resp = handler(req)
            except Exception as exc:  # noqa: BLE001 - a broker's odd request must not kill the client
                resp = req.response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")
        if not req.is_oneway and conn.is_open:
            conn.send(resp)

    def _notify_ids_changed(self, req: RemotingCommand) -> RemotingCommand:
        consumer = self.consumers.get(req.ext_fields.get("consumerGroup", ""))
        if consumer is not None:
            consumer.rebalance_soon()
        return req.response()

    def _running_info(self, req: RemotingCommand) -> RemotingCommand:
        group = req.ext_fields.get("consumerGroup", "")
        consumer = self.consumers.get(group)
        if consumer is None:
            return req.response(ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{group}> not exist in this consumer")
        return req.response(body=consumer.running_info())

    def _check_transaction(self, broker_addr: str, req: RemotingCommand) -> None:
        try:
            header = CheckTransactionStateRequestHeader.from_ext(req.ext_fields)
            msg = decode_stored(req.body or b"")
        except (RemotingError, CorruptMessageError, ValueError) as exc:
            log.warning("unreadable CHECK_TRANSACTION_STATE from %s: %s", broker_addr, exc)
            return
        group = msg.properties.get(PGROUP, "")
        checker = self.transaction_checkers.get(group)
        if checker is None:
            log.warning("CHECK_TRANSACTION_STATE from %s for producer group %r, which has no transactional "
                        "producer here", broker_addr, group)
            return
        checker(broker_addr, header, msg)

    def _reset_offset(self, req: RemotingCommand) -> RemotingCommand:
        consumer = self.consumers.get(req.ext_fields.get("group", ""))
        if consumer is not None and req.body:
            raw = fastjson.loads(req.body).get("offsetTable", {})
            consumer.reset_offsets(req.ext_fields.get("topic", ""), raw)
        return req.response()
