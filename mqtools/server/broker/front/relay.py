"""The store process's side of its front workers: their client connections, served as if accepted here.

Each client connection a worker relays becomes a RemotingConnection of the broker's RemotingServer whose
transport is a `RelayTransport`: what the connection writes goes to the worker's link, what the worker read
is fed to it. Processors, ACL, long polling, the broker's own requests to a client (transaction checks,
consumer notifications) see a connection like any other, with the client's address and its TLS facts. A
plain send the worker parsed (SEND) goes to the compiled send itself (_csend.send_record), in its place in
the client's stream; one it does not take, and every send where it is not built, ACL is on or the server's
SEND_MESSAGE_V2 processor is another, is fed to the connection as the frame the client sent.

A client that does not read its answers is not read either (Apache's server turns autoRead off): its worker stops
reading it once its socket's output passes the high-water mark and says PAUSE, and its connection here is told
pause_writing (it holds the requests it read until RESUME). The link backing up (answers written faster than the
worker takes them) pauses every connection of that worker the same way until it drains, so what waits to be
written stays bounded wherever the client's answers go.

`FrontWorkers` starts the worker processes (front/worker.py) on the server's listening sockets, waits for
each to serve, kills one that hangs, starts again one that dies (its clients reconnect, to another worker or
to it), and stops them by closing their links. It spreads the clients over them: each worker's count of
connections goes to an `AcceptGate` (accept_gate.py) on every OPEN and CLOSE, and when a worker stops or starts
serving; a worker told ACCEPT_PAUSE leaves new clients in the shared listening socket to the others.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mqtools.common.tls import TlsServerSettings
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.server import RemotingServer
from mqtools.remoting.transport import RemotingConnection
from mqtools.server.broker.front import link as L
from mqtools.server.broker.front import send_record as R
from mqtools.server.broker.front.accept_gate import AcceptGate
from mqtools.server.broker.front.endpoint import LinkEnd
from mqtools.server.broker.front.worker import tls_spec
from mqtools.server.broker.processors.send import SendV2, send_record
from mqtools.server.lifecycle import StartError

log = logging.getLogger(__name__)

_SEND_V2 = int(RequestCode.SEND_MESSAGE_V2)
#: A worker that has not said HELLO this long after it was started failed to start.
START_TIMEOUT_S = 30.0
#: A worker that died is started again after this (one that dies at once cannot spin the machine).
RESTART_DELAY_S = 1.0
#: How long a stopping worker may take to exit after its link closed before it is killed.
STOP_TIMEOUT_S = 5.0
#: A worker heard nothing from for this long is sent a PING ...
PING_AFTER_S = 2.0
#: ... one silent for this long (pinged, and no answer within PING_AFTER_S) is not counted serving ...
SILENT_AFTER_S = 2 * PING_AFTER_S
#: ... and one silent for this long is hung (stopped, wedged): it is killed, its clients reconnect to a live one.
HUNG_AFTER_S = 10.0
#: How often a worker's silence is looked at: a live one is pinged within PING_AFTER_S + this of its last word.
_CHECK_EVERY_S = PING_AFTER_S / 2
#: Answers waiting to be written to one worker's link past this pause all its clients' connections until it drains
#: below a quarter of it: more than a loop turn's answers to sends, bounded against a client that floods requests.
LINK_HIGH_WATER = 4 * 1024 * 1024


class RelayTransport(asyncio.Transport):
    """One relayed client connection, as its RemotingConnection sees it."""

    def __init__(self, link: WorkerLink, conn_id: int, extra: dict[str, Any]) -> None:
        super().__init__(extra)
        self._link = link
        self._conn_id = conn_id
        self.protocol: asyncio.Protocol | None = None
        self._closing = False
        self._lost = False
        self._paused = False
        self._held: collections.deque[tuple[int, bytes]] = collections.deque()
        #: The worker said PAUSE (the client does not read its answers) / the link backs up: either pauses writing.
        self._client_paused = False
        self._link_paused = False

    # what the link delivers
    def deliver(self, kind: int, payload: bytes) -> None:
        """A client's bytes (DATA) or one plain send of it (SEND), in the client's order."""
        if self._paused or self._held:
            self._held.append((kind, payload))
        elif self.protocol is not None and not self._closing:
            self._feed(kind, payload)

    def _feed(self, kind: int, payload: bytes) -> None:
        if kind == L.DATA:
            self.protocol.data_received(payload)  # type: ignore[union-attr]
        else:
            self._link.send(self.protocol, payload)  # type: ignore[arg-type]

    def lost(self) -> None:
        if self._lost:
            return
        self._lost = self._closing = True
        self._held.clear()
        if self.protocol is not None:
            self.protocol.connection_lost(None)

    def client_paused(self, paused: bool) -> None:
        """PAUSE / RESUME from the worker: the client's own socket backs up, or drained."""
        was = self._client_paused or self._link_paused
        self._client_paused = paused
        self._writing_changed(was)

    def link_paused(self, paused: bool) -> None:
        """The link to the worker backs up, or drained."""
        was = self._client_paused or self._link_paused
        self._link_paused = paused
        self._writing_changed(was)

    def _writing_changed(self, was: bool) -> None:
        """The protocol hears of a change as from a socket's transport: pause_writing, then resume_writing."""
        now = self._client_paused or self._link_paused
        if now is not was and self.protocol is not None and not self._closing:
            if now:
                self.protocol.pause_writing()
            else:
                self.protocol.resume_writing()

    # asyncio.Transport
    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._closing:
            self._link.write_data(self._conn_id, data)

    def writelines(self, list_of_data: Any) -> None:
        if not self._closing:
            parts = list(list_of_data)
            self._link.write_parts(self._conn_id, parts, sum(len(p) for p in parts))

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._link.forget(self._conn_id)
        self._link.emit(L.CLOSE, self._conn_id)
        asyncio.get_event_loop().call_soon(self.lost)

    def abort(self) -> None:
        self.close()

    def is_closing(self) -> bool:
        return self._closing

    def pause_reading(self) -> None:
        """Held here: the bytes the worker sent meanwhile wait until resume_reading (RemotingConnection pauses a
        connection that read much in one loop turn, until the next turn)."""
        self._paused = True

    def resume_reading(self) -> None:
        self._paused = False
        while self._held and not self._paused and not self._closing and self.protocol is not None:
            self._feed(*self._held.popleft())

    def is_reading(self) -> bool:
        return not self._paused

    def get_write_buffer_size(self) -> int:
        return self._link.write_buffer_size()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.protocol = protocol  # type: ignore[assignment]

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self.protocol  # type: ignore[return-value]


@dataclass
class RecordCounts:
    """Plain sends the workers parsed (records) since the broker started, and those of them the store served as
    the client's frame (ACL on, fast failure's probe overdue, anything but a plain put)."""

    records: int = 0
    as_frames: int = 0


class WorkerLink(LinkEnd):
    """The store process's end of one worker's link."""

    def __init__(self, server: RemotingServer, on_hello: Callable[[], None],
                 counts: RecordCounts | None = None, on_count: Callable[[int], None] | None = None) -> None:
        super().__init__()
        self._server = server
        self._on_hello = on_hello
        #: Told the number of relayed connections whenever one opens or closes (FrontWorkers' accept gate).
        self._on_count = on_count
        self.counts = RecordCounts() if counts is None else counts
        self.conns: dict[int, RelayTransport] = {}
        #: Answers added to the outbox this loop turn (bytes), and whether they passed LINK_HIGH_WATER.
        self._queued = 0
        self._outbox_full = False
        #: The link's socket buffer passed LINK_HIGH_WATER (asyncio's pause_writing), until it drains.
        self._socket_full = False
        #: Either: every relayed connection is paused (RelayTransport.link_paused).
        self.backed_up = False

    # what the relayed connections write: their answers, checked against the link's high-water mark
    def write_data(self, conn_id: int, data: bytes | bytearray | memoryview) -> None:
        """One answer (or a read's answers joined): every answer to a send comes this way, hence inline."""
        size = len(data)
        if size > L.MAX_PAYLOAD:
            self._out.add_data(conn_id, (data,), size)
        else:
            self._out.add(L.DATA, conn_id, data)
        self._schedule()
        self._queued += size
        if self._queued > LINK_HIGH_WATER and not self._outbox_full:
            self._outbox_full = True
            self._backed_up_changed()

    def write_parts(self, conn_id: int, parts: list[bytes | bytearray | memoryview], size: int) -> None:
        self._out.add_data(conn_id, parts, size)
        self._wrote(size)

    def _wrote(self, size: int) -> None:
        self._schedule()
        self._queued += size
        if self._queued > LINK_HIGH_WATER and not self._outbox_full:
            self._outbox_full = True
            self._backed_up_changed()

    def _flush(self) -> None:
        super()._flush()  # into the socket's buffer: over its mark, asyncio calls pause_writing from in here
        self._queued = 0
        if self._outbox_full:
            self._outbox_full = False
            self._backed_up_changed()

    def pause_writing(self) -> None:
        self._socket_full = True
        self._backed_up_changed()

    def resume_writing(self) -> None:
        self._socket_full = False
        self._backed_up_changed()

    def _backed_up_changed(self) -> None:
        backed_up = self._outbox_full or self._socket_full
        if backed_up is not self.backed_up:
            self.backed_up = backed_up
            for transport in list(self.conns.values()):
                transport.link_paused(backed_up)

    def forget(self, conn_id: int) -> None:
        if self.conns.pop(conn_id, None) is not None:
            self._counted()

    def _counted(self) -> None:
        if self._on_count is not None:
            self._on_count(len(self.conns))

    def send(self, conn: RemotingConnection, record: bytes) -> None:
        """A plain send a worker parsed: stored and answered by the compiled send, or fed as its frame. It counts
        towards the connection's fair share of a loop turn as its frame would."""
        server = self._server
        processor = server.processors.get(_SEND_V2)
        self.counts.records += 1
        if send_record is None or server.access_check is not None or type(processor) is not SendV2:
            self._as_frame(conn, record)
            return
        conn.count_read(len(record))
        try:
            done = send_record(processor, conn, record)
        except Exception as exc:  # noqa: BLE001 - as RemotingServer answers a processor's failure
            server.failed(conn, R.command_of(record), exc)
            return
        if done is False:
            self._as_frame(conn, record)
        elif done is not None:
            server.answer(conn, *done)

    def _as_frame(self, conn: RemotingConnection, record: bytes) -> None:
        self.counts.as_frames += 1
        try:
            frame = R.frame(record)
        except R.BadRecord as exc:  # a worker's bug: that client's connection closes, as for a bad frame
            self._server.bad_input.warning("record", "closing %s: %s", conn.peer, exc)
            conn.close()
            return
        conn.data_received(frame)

    def on_events(self, events: list[tuple[int, int, bytes]]) -> None:
        for kind, conn_id, payload in events:
            if kind == L.DATA or kind == L.SEND:
                if (transport := self.conns.get(conn_id)) is not None:
                    transport.deliver(kind, payload)
            elif kind == L.PAUSE or kind == L.RESUME:
                if (transport := self.conns.get(conn_id)) is not None:
                    transport.client_paused(kind == L.PAUSE)
            elif kind == L.OPEN:
                self._open(conn_id, L.Opened.decode(payload))
            elif kind == L.CLOSE:
                if (transport := self.conns.pop(conn_id, None)) is not None:
                    self._counted()
                    transport.lost()
            elif kind == L.HELLO:
                self._on_hello()

    def _open(self, conn_id: int, opened: L.Opened) -> None:
        tls = self._server.tls
        extra: dict[str, Any] = {"peername": opened.peer,
                                 "sslcontext": tls.context if opened.tls and tls is not None else None}
        if opened.not_after is not None:
            extra["peercert"] = {"notAfter": opened.not_after}  # as the worker's handshake gave it
        transport = RelayTransport(self, conn_id, extra)
        conn = self._server.new_connection()
        transport.set_protocol(conn)
        self.conns[conn_id] = transport
        self._counted()
        conn.connection_made(transport)
        if self.backed_up:
            transport.link_paused(True)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        transport.set_write_buffer_limits(LINK_HIGH_WATER, LINK_HIGH_WATER // 4)  # type: ignore[attr-defined]

    def connection_lost(self, exc: Exception | None) -> None:
        conns, self.conns = self.conns, {}
        for transport in conns.values():
            transport.lost()
        super().connection_lost(exc)


class FrontWorkers:
    """The worker processes of one broker."""

    def __init__(self, server: RemotingServer, count: int, tls: TlsServerSettings | None, cluster: str) -> None:
        self._server = server
        self.count = count
        #: The broker's cluster: a worker stores it in the properties of the sends it parses.
        self._cluster = cluster
        self._tls = tls
        self._sockets: list[socket.socket] = []
        self._procs: dict[int, asyncio.subprocess.Process] = {}
        self._links: dict[int, WorkerLink] = {}
        self._tasks: set[asyncio.Task] = set()
        self._stopping = False
        #: Workers started again after dying or hanging, since the broker started.
        self.restarts = 0
        #: The workers that said HELLO and have not died since.
        self._serving: set[int] = set()
        self.counts = RecordCounts()
        #: Which workers are told to stop accepting for now, from their counts of connections.
        self._gate = AcceptGate()

    async def start(self, sockets: list[socket.socket]) -> None:
        """Start every worker on `sockets` and wait until each serves; StartError when one does not."""
        self._sockets = sockets
        await asyncio.gather(*(self._spawn(index) for index in range(self.count)))

    async def _spawn(self, index: int) -> None:
        loop = asyncio.get_running_loop()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        spec = {"index": index, "link": theirs.fileno(), "listen": [s.fileno() for s in self._sockets],
                "tls": tls_spec(self._tls), "maxFrame": self._server.max_frame,
                "sendRecords": send_record is not None, "cluster": self._cluster}
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "mqtools.server.broker.front.worker", json.dumps(spec),
                stdin=asyncio.subprocess.DEVNULL, pass_fds=(theirs.fileno(), *spec["listen"]))
        finally:
            theirs.close()
        hello = loop.create_future()
        _, link = await loop.create_unix_connection(
            lambda: WorkerLink(self._server, lambda: hello.done() or hello.set_result(None), self.counts,
                               lambda count: self._tell(self._gate.count(index, count))), sock=mine)
        self._procs[index], self._links[index] = proc, link
        try:
            await asyncio.wait_for(asyncio.shield(hello), START_TIMEOUT_S)
        except TimeoutError:
            proc.kill()
            link.close()
            raise StartError(f"front worker {index} (pid {proc.pid}) did not start within {START_TIMEOUT_S:.0f} s")
        if link.closed.done():
            raise StartError(f"front worker {index} (pid {proc.pid}) exited as it started")
        self._serving.add(index)
        self._tell(self._gate.join(index, len(link.conns)))
        self._watch(index, link, proc)

    def _watch(self, index: int, link: WorkerLink, proc: asyncio.subprocess.Process) -> None:
        task = asyncio.create_task(self._supervise(index, link, proc), name=f"front-worker-{index}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _supervise(self, index: int, link: WorkerLink, proc: asyncio.subprocess.Process) -> None:
        """Kill the worker when it hangs; start it again once it died, until the broker stops."""
        await self._until_dead_or_hung(index, link, proc)
        if self._stopping:
            return
        link.close()
        self._serving.discard(index)
        self._tell(self._gate.leave(index))
        code = await proc.wait()
        log.warning("front worker %d (pid %d) exited with %s; its clients reconnect; starting it again in %.0f s",
                    index, proc.pid, code, RESTART_DELAY_S)
        while not self._stopping:
            await asyncio.sleep(RESTART_DELAY_S)
            if self._stopping:
                return
            try:
                await self._spawn(index)
            except (StartError, OSError) as exc:
                log.warning("front worker %d: %s; trying again", index, exc)
                continue
            self.restarts += 1
            return

    async def _until_dead_or_hung(self, index: int, link: WorkerLink, proc: asyncio.subprocess.Process) -> None:
        while not link.closed.done():
            await asyncio.wait([link.closed], timeout=_CHECK_EVERY_S)
            silent = link.silent_for()
            if link.closed.done() or self._stopping:
                return
            self._tell(self._gate.serving(index, silent <= SILENT_AFTER_S))
            if silent >= HUNG_AFTER_S:
                log.warning("front worker %d (pid %d) has not answered for %.0f s: killing it", index, proc.pid, silent)
                proc.kill()
                return
            if silent >= PING_AFTER_S:
                link.emit(L.PING, 0)

    def _tell(self, changes: dict[int, bool]) -> None:
        """ACCEPT_PAUSE / ACCEPT_RESUME to the workers whose verdict changed."""
        for index, paused in changes.items():
            link = self._links.get(index)
            if link is not None and not link.closed.done():
                link.emit(L.ACCEPT_PAUSE if paused else L.ACCEPT_RESUME, 0)

    def serving(self) -> int:
        """The workers that said HELLO, have not died since and answer: one silent past SILENT_AFTER_S (a ping not
        answered) is not counted, long before it is killed as hung."""
        return sum(1 for index in self._serving
                   if (link := self._links.get(index)) is not None and link.silent_for() <= SILENT_AFTER_S)

    def runtime_info(self) -> dict[str, str]:
        """mq's own GET_BROKER_RUNTIME_INFO keys: workers configured, serving now, and started again; the plain
        sends they parsed, and those the store served as the client's frame."""
        return {"frontWorkers": str(self.count), "frontWorkersServing": str(self.serving()),
                "frontWorkerRestarts": str(self.restarts), "frontWorkerSendRecords": str(self.counts.records),
                "frontWorkerSendRecordsAsFrames": str(self.counts.as_frames)}

    async def shutdown(self) -> None:
        """Close every link (a worker exits when its link closes), then wait for the processes; kill a late one."""
        self._stopping = True
        for task in list(self._tasks):
            task.cancel()
        for link in self._links.values():
            link.close()
        for proc in self._procs.values():
            try:
                await asyncio.wait_for(proc.wait(), STOP_TIMEOUT_S)
            except TimeoutError:
                proc.kill()
                await proc.wait()
