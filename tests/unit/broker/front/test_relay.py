"""The store process's end of a front link (front/relay.py): a relayed client is a connection of the broker's
RemotingServer like any other. A real RemotingServer (no socket of its own) on one end of a socket pair; the
test plays the worker on the other end, writing link messages and reading what comes back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from unit.broker.front.relay_world import CODE, Worker, linked_worker, request

from mqtools.cluster.certs import make_local_certificates
from mqtools.common.tls import TlsMode, TlsServerSettings
from mqtools.common.tls_certificates import TlsCertificateManager
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.frame import FrameDecoder
from mqtools.remoting.headers import send_v2_fields
from mqtools.server.broker.front import link as L
from mqtools.server.broker.front import relay
from mqtools.server.broker.front.send_record import SendSplitter
from mqtools.server.broker.processors import send


@pytest.fixture
async def worker() -> AsyncIterator[Worker]:
    async with linked_worker() as w:
        yield w


async def test_a_relayed_client_is_served_with_its_own_address(worker: Worker) -> None:
    worker.send(L.OPEN, 5, L.Opened(("192.0.2.7", 40001), False).encode())
    both = request(1, b"a") + request(2, b"b")
    worker.send(L.DATA, 5, both[:7])  # a frame cut anywhere arrives whole
    worker.send(L.DATA, 5, both[7:])
    answers = await worker.answers(5, 2)
    assert [(a.opaque, a.remark) for a in answers] == [(1, "192.0.2.7:40001 tls=False body=b'a'"),
                                                        (2, "192.0.2.7:40001 tls=False body=b'b'")]
    assert len(worker.server.connections) == 1


async def test_tls_facts_reach_the_connection(worker: Worker, tmp_path: Path) -> None:
    """The worker did the handshake; the connection says TLS, with the client certificate's expiry."""
    certs = make_local_certificates(tmp_path)
    worker.server.tls = TlsCertificateManager(TlsServerSettings(TlsMode.PERMISSIVE, str(certs.cert), str(certs.key)))
    worker.send(L.OPEN, 6, L.Opened(("192.0.2.8", 1), True, "Mar 17 17:46:40 2030 GMT").encode())
    worker.send(L.DATA, 6, request(1, b""))
    await worker.answers(6, 1)
    (conn,) = worker.seen
    assert conn.is_tls and conn.peer_not_after == 1_900_000_000.0


async def test_a_client_gone_is_a_connection_closed(worker: Worker) -> None:
    worker.send(L.OPEN, 8, L.Opened(("192.0.2.9", 2), False).encode())
    worker.send(L.DATA, 8, request(1, b""))
    await worker.answers(8, 1)
    (conn,) = worker.seen
    worker.send(L.CLOSE, 8)
    await asyncio.wait_for(asyncio.shield(conn.closed), 5)
    assert worker.server.connections == set()
    worker.send(L.DATA, 8, request(2, b""))  # late bytes for it are dropped, the link lives on
    worker.send(L.OPEN, 9, L.Opened(("192.0.2.9", 3), False).encode())
    worker.send(L.DATA, 9, request(3, b""))
    assert [a.opaque for a in await worker.answers(9, 1)] == [3]


@pytest.mark.parametrize(("kind", "payload"), [(L.DATA, b"\xff" * 64), (L.SEND, b"\x00" * 10)],
                         ids=["a bad frame", "a record the store cannot read (a worker's bug)"])
async def test_bad_input_closes_that_client_only(worker: Worker, kind: int, payload: bytes) -> None:
    """The link lives on, and its other clients with it."""
    worker.send(L.OPEN, 10, L.Opened(("192.0.2.10", 1), False).encode())
    worker.send(L.OPEN, 11, L.Opened(("192.0.2.10", 2), False).encode())
    worker.send(kind, 10, payload)
    assert await worker.next() == (L.CLOSE, 10, b"")
    worker.send(L.DATA, 11, request(4, b""))
    assert [a.opaque for a in await worker.answers(11, 1)] == [4]


async def test_the_link_gone_closes_every_relayed_client(worker: Worker) -> None:
    for conn_id in (12, 13):
        worker.send(L.OPEN, conn_id, L.Opened(("192.0.2.11", conn_id), False).encode())
    await asyncio.sleep(0.05)
    conns = list(worker.server.connections)
    assert len(conns) == 2
    worker.writer.close()
    await asyncio.wait_for(asyncio.gather(*(asyncio.shield(c.closed) for c in conns)), 5)
    await asyncio.wait_for(asyncio.shield(worker.link.closed), 5)
    assert worker.server.connections == set()


@pytest.mark.skipif(send._compiled is None, reason="workers make records only where the compiled send is built")
async def test_records_and_frames_of_one_client_are_served_in_its_order(worker: Worker) -> None:
    """Where SEND_MESSAGE_V2's processor is not the compiled send (here an echo), a record is fed as its frame."""
    worker.server.register(RequestCode.SEND_MESSAGE_V2, worker.server.processors[CODE])
    worker.send(L.OPEN, 16, L.Opened(("192.0.2.13", 1), False).encode())
    send_v2 = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, send_v2_fields(
        "PG", "T", "TBW102", "4", 0, 0, 1_700_000_000_000, 0, "K\x01v\x02"), b"two")
    send_v2.opaque = 2
    [(kind, record)] = SendSplitter(1 << 20, "C").feed(send_v2.encode())
    assert kind == SendSplitter.SEND
    worker.send(L.DATA, 16, request(1, b"one"))
    worker.send(L.SEND, 16, record)
    worker.send(L.DATA, 16, request(3, b"three"))
    answers = await worker.answers(16, 3)
    assert [(a.opaque, a.remark.rsplit("=", 1)[1]) for a in answers] == [(1, "b'one'"), (2, "b'two'"), (3, "b'three'")]


async def test_an_answer_over_the_links_largest_payload_goes_as_several(worker: Worker,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Found in review: a QUERY_MESSAGE answer of 64 bodies of 4 MiB (256 MiB and more) went as one DATA over
    MAX_PAYLOAD, which the worker refused, closing its link and every client on it. DATA is a byte stream."""
    monkeypatch.setattr(L, "MAX_PAYLOAD", 64 * 1024)
    big = bytes(range(256)) * 1024  # 256 KiB: four messages' worth and more with the frame's header
    worker.server.register(CODE + 1, lambda conn, req: req.response(ResponseCode.SUCCESS, body=big))
    worker.send(L.OPEN, 17, L.Opened(("192.0.2.14", 1), False).encode())
    worker.send(L.DATA, 17, request(1, b"", CODE + 1) + request(2, b"after"))
    frames, sizes, answers = FrameDecoder(), [], []
    while len(answers) < 2:  # the worker's decoder refuses a payload over MAX_PAYLOAD (ProtocolError)
        kind, conn_id, payload = await worker.next()
        assert (kind, conn_id) == (L.DATA, 17)
        sizes.append(len(payload))
        answers += frames.feed(payload)
    assert max(sizes) <= 64 * 1024 and len(sizes) >= 5
    assert answers[0].body == big and answers[1].opaque == 2


async def test_a_worker_silent_past_a_ping_is_not_counted_serving(worker: Worker) -> None:
    """Found in review: a hung worker was counted serving until it was killed (10-12 s)."""
    workers = relay.FrontWorkers(worker.server, 1, None, "C")
    workers._links, workers._serving = {0: worker.link}, {0}
    assert workers.runtime_info()["frontWorkersServing"] == "1"
    worker.link.last_heard -= relay.HUNG_AFTER_S - 1  # pinged, no answer: hung, not yet killed
    assert workers.runtime_info()["frontWorkersServing"] == "0"
