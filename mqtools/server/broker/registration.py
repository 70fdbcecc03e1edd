"""Broker registration with every name server (RocketMQ's BrokerOuterAPI register/unregister calls).

Each name server gets its own loop: register at start, then every
registerNameServerPeriod (clamped to 10-60 s, as RocketMQ clamps it), so a dead or slow
name server only ever delays its own loop. A topic change triggers an immediate
registration with all of them (so new topics get routes without waiting a period).
The body is the topic config wrapper with its data version, CRC32-checked like
RocketMQ's. At shutdown the broker unregisters from each name server in parallel.

The body is encoded once per data version (every change bumps it) and shared by every name server and
every periodic round until the table changes; a large table (10,000 topics are 1.7 MB and tens of ms
of encoding) is encoded in a worker thread from a copy of the table taken on the loop, so sends are
answered meanwhile. Topic configs are replaced, not changed in place, except the order flag
(TopicConfigManager.update_order), which bumps the version and so brings a new body right after.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mqtools.remoting.bodies import KVTable, RegisterBrokerBody, TopicConfigSerializeWrapper
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingError
from mqtools.remoting.headers import (
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from mqtools.server.lifecycle import cancel_and_wait

log = logging.getLogger(__name__)

FIRST_PERIODIC_DELAY_S = 10.0
#: How long a caller of kick_and_wait waits for the other name servers once one has answered: a topic created
#: through the admin API is answered when every name server has its route, or this long after the first did, so
#: that a name server that does not answer (hung: its port still accepts) does not make the creation outlast the
#: client's own timeout (3-5 s) and look failed; its registration goes on in its loop.
REGISTRATION_WAIT_S = 1.0
#: A topic table at least this large is encoded off the loop (1,000 topics take a few ms; a thread hand-off
#: costs more than that below).
OFF_LOOP_ENCODE_TOPICS = 1_000
#: Runs a blocking call away from the event loop (asyncio.to_thread; tests pass their own).
Offload = Callable[..., Awaitable[Any]]


@dataclass(slots=True)
class BrokerIdentity:
    cluster_name: str
    broker_name: str
    broker_addr: str
    broker_id: int
    ha_server_addr: str


@dataclass(slots=True)
class RegisterResult:
    namesrv: str
    ok: bool
    master_addr: str | None = None
    ha_server_addr: str | None = None
    order_topics: set[str] | None = None
    error: str | None = None


def body_crc32(body: bytes) -> int:
    """RocketMQ's UtilAll.crc32: the CRC32 masked to a non-negative int."""
    return zlib.crc32(body) & 0x7FFFFFFF


def register_body(wrapper: TopicConfigSerializeWrapper) -> bytes:
    return RegisterBrokerBody(topic_config_serialize_wrapper=wrapper).to_json()


def register_command(ident: BrokerIdentity, wrapper: TopicConfigSerializeWrapper | bytes) -> RemotingCommand:
    """REGISTER_BROKER of `wrapper`, or of a body register_body already encoded."""
    body = wrapper if isinstance(wrapper, bytes) else register_body(wrapper)
    header = RegisterBrokerRequestHeader(
        broker_name=ident.broker_name,
        broker_addr=ident.broker_addr,
        cluster_name=ident.cluster_name,
        ha_server_addr=ident.ha_server_addr,
        broker_id=ident.broker_id,
        compressed=False,
        body_crc32=body_crc32(body),
    )
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header.to_ext(), body)


def parse_register_response(namesrv: str, resp: RemotingCommand) -> RegisterResult:
    if resp.code != ResponseCode.SUCCESS:
        return RegisterResult(namesrv, False, error=f"code {resp.code}: {resp.remark}")
    header = RegisterBrokerResponseHeader.from_ext(resp.ext_fields)
    order: set[str] | None = None
    if resp.body:
        with contextlib.suppress(Exception):
            order = set(KVTable.from_json(resp.body).table)
    return RegisterResult(namesrv, True, header.master_addr or None, header.ha_server_addr or None, order)


class NamesrvRegistrar:
    """Keeps one registration loop per name server address."""

    def __init__(
        self,
        client: RemotingClient,
        identity: Callable[[], BrokerIdentity],
        topics: Callable[[], TopicConfigSerializeWrapper],
        *,
        period_s: float = 30.0,
        timeout_s: float = 6.0,
        on_result: Callable[[RegisterResult], None] | None = None,
        offload: Offload = asyncio.to_thread,
    ) -> None:
        self.client = client
        self.identity = identity
        self.topics = topics
        self.period_s = period_s
        self.timeout_s = timeout_s
        self.on_result = on_result
        self.last: dict[str, RegisterResult] = {}
        self._tasks: dict[str, asyncio.Task] = {}
        self._kicks: dict[str, asyncio.Event] = {}
        self._waiters: dict[str, list[asyncio.Future[RegisterResult]]] = {}
        self.offload = offload
        #: The body of the table's data version (and size) it was encoded from; a future while it is encoded.
        self._encoded: tuple[tuple[int, int, int, int], asyncio.Future[bytes]] | None = None
        #: Bodies encoded so far (a figure for tests and benches: one per data version, not one per round).
        self.encodes = 0

    @property
    def addrs(self) -> list[str]:
        return self.client.namesrv_addrs

    async def register_one(self, addr: str) -> RegisterResult:
        try:
            resp = await self.client.invoke(addr, register_command(self.identity(), await self.body()), self.timeout_s)
            result = parse_register_response(addr, resp)
        except RemotingError as exc:
            result = RegisterResult(addr, False, error=str(exc))
        except Exception as exc:
            log.exception("register to %s failed unexpectedly", addr)
            result = RegisterResult(addr, False, error=f"{type(exc).__name__}: {exc}")
        if not result.ok:
            log.warning("register to name server %s failed: %s", addr, result.error)
        self.last[addr] = result
        if self.on_result is not None:
            try:
                self.on_result(result)
            except Exception:
                log.exception("registration result handler failed")
        return result

    async def body(self) -> bytes:
        """The registration body of the current table: encoded once per data version, large ones off the loop."""
        wrapper = self.topics()
        version = wrapper.data_version
        key = (version.timestamp, version.counter, version.state_version, len(wrapper.topic_config_table))
        if self._encoded is None or self._encoded[0] != key:
            self.encodes += 1
            if len(wrapper.topic_config_table) >= OFF_LOOP_ENCODE_TOPICS:
                encoding = asyncio.ensure_future(self.offload(register_body, wrapper))
            else:
                encoding = asyncio.get_running_loop().create_future()
                encoding.set_result(register_body(wrapper))
            self._encoded = (key, encoding)
        encoding = self._encoded[1]
        try:
            return await asyncio.shield(encoding)  # other name servers' rounds may share it
        except Exception:
            if self._encoded is not None and self._encoded[1] is encoding:
                self._encoded = None  # the next round tries again
            raise

    async def register_all(self) -> list[RegisterResult]:
        """One concurrent round; each address has its own timeout."""
        return list(await asyncio.gather(*(self.register_one(a) for a in self.addrs)))

    def start(self, *, registered: bool = False) -> None:
        """Start the loops; `registered`: a first round was just done, wait a period first."""
        for addr in self.addrs:
            self._kicks[addr] = asyncio.Event()
            self._waiters[addr] = []
            self._tasks[addr] = asyncio.create_task(self._loop(addr, registered), name=f"register-{addr}")

    def kick(self) -> None:
        """Register everywhere now (topic table changed)."""
        for event in self._kicks.values():
            event.set()

    async def kick_and_wait(self, within: float = REGISTRATION_WAIT_S) -> list[RegisterResult]:
        """Register everywhere now; the results of every name server, or of those that answered (or failed) by
        `within` seconds after the first one did.

        A topic created through the admin API is then routable the moment its request is answered,
        as RocketMQ's broker does by registering synchronously after UPDATE_AND_CREATE_TOPIC.
        """
        loop = asyncio.get_running_loop()
        waits = []
        for waiters in self._waiters.values():
            future: asyncio.Future[RegisterResult] = loop.create_future()
            waiters.append(future)
            waits.append(future)
        self.kick()
        if not waits:
            return []
        _, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if pending:
            await asyncio.wait(pending, timeout=within)
        return [f.result() for f in waits if f.done()]

    async def _loop(self, addr: str, skip_first: bool) -> None:
        """Register, then wait a period (or a kick). After the start-up round the first
        periodic registration comes after 10 s, as RocketMQ schedules it."""
        kick = self._kicks[addr]
        wait = min(FIRST_PERIODIC_DELAY_S, self.period_s) if skip_first else self.period_s
        while True:
            if not skip_first:
                waiting, self._waiters[addr] = self._waiters[addr], []
                result = await self.register_one(addr)
                for future in waiting:
                    if not future.done():
                        future.set_result(result)
                wait = self.period_s
            skip_first = False
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await kick.wait()
            kick.clear()

    async def shutdown(self) -> None:
        for waiters in self._waiters.values():
            for future in waiters:
                future.cancel()
        await cancel_and_wait(*self._tasks.values())
        self._tasks.clear()

    async def unregister_all(self, timeout_s: float = 3.0) -> None:
        ident = self.identity()

        async def one(addr: str) -> None:
            header = UnRegisterBrokerRequestHeader(
                broker_name=ident.broker_name,
                broker_addr=ident.broker_addr,
                cluster_name=ident.cluster_name,
                broker_id=ident.broker_id,
            )
            try:
                await self.client.invoke(
                    addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header.to_ext()), timeout_s
                )
            except RemotingError as exc:
                log.warning("unregister from %s failed: %s", addr, exc)

        await asyncio.gather(*(one(a) for a in self.addrs))
