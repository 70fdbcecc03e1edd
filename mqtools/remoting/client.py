"""Remoting client (RocketMQ's NettyRemotingClient role): a connection pool per address and the
name-server address list.

Name-server selection follows RocketMQ's client: start at a name server chosen at random, stick to
the chosen one while its connection is up; when it is down, try the next addresses in turn, starting
after the last index used, and stick to the first one that connects. A dead name server thus costs
one connect attempt, never a request timeout per call; a hung one (its port still accepts) costs its share of the
request's timeout, after which its connection is closed and the request goes to the next (invoke_namesrv).
"""

from __future__ import annotations

import asyncio
import logging
import random
import ssl
from collections.abc import Callable

from mqtools.common.addresses import parse_addr
from mqtools.common.security import ClientSecurity
from mqtools.common.tls import client_context
from mqtools.remoting import acl
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import (
    RemotingConnectError,
    RemotingConnectionClosed,
    RemotingError,
    RemotingTimeoutError,
    connect_failure,
)
from mqtools.remoting.frame import DEFAULT_MAX_FRAME
from mqtools.remoting.transport import RemotingConnection, RequestCallback

log = logging.getLogger(__name__)

DEFAULT_CONNECT_TIMEOUT = 3.0
#: Why a closed client's connect fails: it makes no new connection (RemotingClient.close).
CLIENT_CLOSED = "the client is closed"
#: The least a name server tried before the last one waits (unless less is left): a healthy one answers in
#: milliseconds, so a short timeout split over many name servers still gives each a real chance.
NAMESRV_ATTEMPT_FLOOR = 0.25


def namesrv_share(left: float, servers_left: int) -> float:
    """How long the next name server tried may take of the `left` seconds of a request: its even share with the
    `servers_left` still to try, at least NAMESRV_ATTEMPT_FLOOR, the whole of it for the last one. So a hung
    first one cannot take the time a second, live one needs, and a call never lasts a timeout per name server."""
    if servers_left <= 1:
        return left
    return min(left, max(NAMESRV_ATTEMPT_FLOOR, left / servers_left))


class RemotingClient:
    def __init__(
        self,
        namesrv_addrs: list[str] | None = None,
        *,
        on_request: RequestCallback | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        max_frame: int = DEFAULT_MAX_FRAME,
        security: ClientSecurity | None = None,
    ) -> None:
        self.security = security or ClientSecurity()
        self._namesrv_addrs = list(namesrv_addrs or [])
        #: Where the search for a live name server starts: at random, as Apache's client starts, so that clients
        #: spread over the name servers instead of all asking the first.
        self._namesrv_index = random.randrange(len(self._namesrv_addrs)) if self._namesrv_addrs else 0
        self._namesrv_chosen: str | None = None
        self._on_request = on_request
        self.connect_timeout = connect_timeout
        self.max_frame = max_frame
        self._conns: dict[str, RemotingConnection] = {}
        self._connecting: dict[str, asyncio.Future[RemotingConnection]] = {}
        self.on_connection_closed: Callable[[str], None] | None = None
        self._ssl: ssl.SSLContext | None = None
        self._closed = False

    # connections --------------------------------------------------------------------

    @property
    def namesrv_addrs(self) -> list[str]:
        return list(self._namesrv_addrs)

    async def connection(self, addr: str) -> RemotingConnection:
        conn = self._conns.get(addr)
        if conn is not None and conn.is_open:
            return conn
        if self._closed:
            raise RemotingConnectError(addr, CLIENT_CLOSED)
        pending = self._connecting.get(addr)
        if pending is None:
            pending = asyncio.ensure_future(self._connect(addr))
            self._connecting[addr] = pending
            pending.add_done_callback(lambda f: self._connected(addr, f))
        return await asyncio.shield(pending)

    def _connected(self, addr: str, attempt: asyncio.Future[RemotingConnection]) -> None:
        self._connecting.pop(addr, None)
        if not attempt.cancelled():
            attempt.exception()  # retrieved here too: every caller may have given up waiting (shield)

    async def _connect(self, addr: str) -> RemotingConnection:
        host, port = parse_addr(addr)
        loop = asyncio.get_running_loop()

        def factory() -> RemotingConnection:
            return RemotingConnection(self._on_request, lambda c: self._dropped(addr, c), self.max_frame,
                                      large_in_place=True)

        tls = self.ssl_context()
        server_name = (self.security.tls.server_name or host) if self.security.tls is not None else None
        try:
            async with asyncio.timeout(self.connect_timeout):
                _transport, conn = await loop.create_connection(factory, host, port, ssl=tls,
                                                                server_hostname=server_name)
        except (OSError, TimeoutError) as exc:
            raise RemotingConnectError(addr, connect_failure(exc), str(exc) or None) from None
        if self._closed:  # closed while connecting
            conn.close()
            raise RemotingConnectError(addr, CLIENT_CLOSED)
        conn.peer = addr
        self._conns[addr] = conn
        return conn

    def peer_not_after(self, addr: str) -> float | None:
        """When the certificate `addr` served on this client's open connection expires (epoch seconds); None
        without one, without TLS or without verification."""
        conn = self._conns.get(addr)
        return conn.peer_not_after if conn is not None and conn.is_open else None

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context for every connection of this client (built once), None without TLS."""
        tls = self.security.tls
        if tls is None:
            return None
        if self._ssl is None:
            self._ssl = client_context(tls.ca_file, tls.cert_file, tls.key_file, verify=tls.verify,
                                       key_password=tls.key_password)
        return self._ssl

    def _dropped(self, addr: str, conn: RemotingConnection) -> None:
        if self._conns.get(addr) is conn:
            del self._conns[addr]
        if addr == self._namesrv_chosen:
            self._namesrv_chosen = None
        if self.on_connection_closed is not None:
            self.on_connection_closed(addr)

    async def close(self) -> None:
        """Close every connection, for good: a request after this (a send's retry that outlived its producer) gets
        a RemotingConnectError instead of a new connection, as Apache's NettyRemotingClient.shutdown leaves none."""
        self._closed = True
        for conn in list(self._conns.values()):
            conn.close()
        waits = [c.closed for c in self._conns.values()]
        self._conns.clear()
        if waits:
            await asyncio.wait(waits, timeout=1.0)

    # requests -----------------------------------------------------------------------

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """`cmd` to `addr` and its answer, each within `timeout`: a host that drops packets holds a connect for
        connect_timeout, which must not outlast the request's own time (a producer's attempt gets a share of its
        budget, and the next one goes to another broker)."""
        conn = self._conns.get(addr)
        if conn is None or not conn.is_open:
            try:
                async with asyncio.timeout(timeout):
                    conn = await self.connection(addr)  # shielded: other callers' wait for it goes on
            except TimeoutError:
                raise RemotingConnectError(addr, connect_failure(TimeoutError()),
                                           f"no connection within the request's {timeout:.3f} s") from None
        return await conn.invoke(self._signed(cmd), timeout)

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None:
        conn = await self.connection(addr)
        conn.invoke_oneway(self._signed(cmd))

    def _signed(self, cmd: RemotingCommand) -> RemotingCommand:
        """ACL 1.0: every request carries AccessKey and Signature when credentials are configured."""
        if self.security.credentials is not None:
            acl.sign(cmd, self.security.credentials)
        return cmd

    async def namesrv_connection(self, connect_wait: float | None = None) -> RemotingConnection:
        """The chosen name server's connection, rotating past dead ones; with `connect_wait`, a connect that takes
        longer (a host that drops packets holds it for connect_timeout) counts as failed and the next is tried."""
        chosen = self._namesrv_chosen
        if chosen is not None:
            conn = self._conns.get(chosen)
            if conn is not None and conn.is_open:
                return conn
        addrs = self._namesrv_addrs
        if not addrs:
            raise RemotingConnectError("<no name server>", "no name server address configured")
        last_error: RemotingError | None = None
        start = self._namesrv_index
        for step in range(len(addrs)):
            chosen = self._namesrv_chosen  # a concurrent caller may have found a live one while this one waited
            conn = self._conns.get(chosen) if chosen is not None else None
            if conn is not None and conn.is_open:
                return conn
            index = (start + step) % len(addrs)
            addr = addrs[index]
            try:
                conn = await self._connect_within(addr, connect_wait)
            except RemotingConnectError as exc:
                log.info("name server %s unreachable: %s", addr, exc)
                last_error = exc
                continue
            self._namesrv_index = index + 1
            self._namesrv_chosen = addr
            return conn
        assert last_error is not None
        raise last_error

    async def _connect_within(self, addr: str, wait: float | None) -> RemotingConnection:
        if wait is None:
            return await self.connection(addr)
        try:
            async with asyncio.timeout(max(wait, 0.0)):
                return await self.connection(addr)  # shielded: the connect goes on for other callers
        except TimeoutError:
            raise RemotingConnectError(addr, connect_failure(TimeoutError()),
                                       f"no connection within the request's {wait:.3f} s") from None

    async def invoke_namesrv(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """`cmd` to the chosen name server, answered within `timeout` in all; one that lets it time out or drops it
        is left (its connection closed, as Apache's client does with clientCloseSocketIfTimeout) and the request
        goes to the next, each at most once. Each waits only its share of the time left (namesrv_share), so a hung
        name server (its port still accepts) costs a client part of one timeout, after which it reads from
        another; kept, it would time out every route refresh for as long as it hangs."""
        signed = self._signed(cmd)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        servers = len(self._namesrv_addrs)
        for tried in range(servers - 1):
            try:
                return await self._ask_namesrv(signed, deadline, servers - tried)
            except (RemotingTimeoutError, RemotingConnectionClosed):
                if loop.time() >= deadline:
                    raise
        return await self._ask_namesrv(signed, deadline, 1)

    async def _ask_namesrv(self, cmd: RemotingCommand, deadline: float, servers_left: int) -> RemotingCommand:
        loop = asyncio.get_running_loop()
        conn = await self.namesrv_connection(namesrv_share(deadline - loop.time(), servers_left))
        wait = namesrv_share(deadline - loop.time(), servers_left)
        if wait <= 0:  # the connects took the time: no fault of this name server, which is kept
            raise RemotingTimeoutError(conn.peer, 0.0, cmd.code)
        try:
            return await conn.invoke(cmd, wait)
        except RemotingConnectionClosed as exc:
            self._leave_namesrv(conn, exc)
            raise
        except RemotingTimeoutError as exc:
            # left only when it had a real chance: a budget nearly spent (a send's last milliseconds) timing out on
            # a healthy name server would close its connection under every other request on it
            if wait >= NAMESRV_ATTEMPT_FLOOR:
                self._leave_namesrv(conn, exc)
            raise

    def _leave_namesrv(self, conn: RemotingConnection, exc: RemotingError) -> None:
        """Stop using a name server that failed a request: the next one is chosen by the next request."""
        if conn.peer == self._namesrv_chosen:
            self._namesrv_chosen = None
        if conn.is_open:
            log.warning("name server %s: %s; asking the next one", conn.peer, exc)
            conn.close()

    async def invoke_each_namesrv(
        self, make_cmd: Callable[[], RemotingCommand], timeout: float
    ) -> dict[str, RemotingCommand | RemotingError]:
        """Send to every name server concurrently; one dead server never delays the rest."""

        async def one(addr: str) -> RemotingCommand | RemotingError:
            try:
                return await self.invoke(addr, make_cmd(), timeout)
            except RemotingError as exc:
                return exc

        addrs = list(self._namesrv_addrs)
        results = await asyncio.gather(*(one(a) for a in addrs))
        return dict(zip(addrs, results, strict=True))
