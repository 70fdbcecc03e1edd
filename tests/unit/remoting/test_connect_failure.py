"""Why a connect failed, in the words a partial document gives: a process down, a host that does not answer and a
certificate are three different outages, and each is named as itself, not all as "connection refused"."""

from __future__ import annotations

import asyncio
import datetime
import errno
import socket
import ssl
from pathlib import Path

import pytest
from support.ports import free_port

from mqtools.client.admin.base import reason_of
from mqtools.client.errors import ConnectFailedError, unreachable_error
from mqtools.cluster.certs import make_local_certificates
from mqtools.common.security import ClientSecurity, TlsClientOptions
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingConnectError, connect_failure


@pytest.mark.parametrize(("exc", "said"), [
    (ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), "connection refused"),
    (TimeoutError(), "connect timed out"),
    (ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"), "connection reset"),
    (OSError(errno.EHOSTUNREACH, "No route to host"), "no route to host"),
    (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "name or service not known"),
])
def test_each_way_a_connect_fails_is_named(exc: BaseException, said: str) -> None:
    assert connect_failure(exc) == said


async def _failure(port: int, security: ClientSecurity | None = None) -> RemotingConnectError:
    client = RemotingClient(security=security)
    try:
        with pytest.raises(RemotingConnectError) as failed:
            await client.invoke(f"127.0.0.1:{port}", RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG), 5.0)
        return failed.value
    finally:
        await client.close()


async def test_a_port_nothing_listens_on_is_refused_and_an_expired_certificate_is_named(tmp_path: Path) -> None:
    refused = await _failure(free_port())
    assert refused.reason == "connection refused"
    assert reason_of(unreachable_error(refused)) == "connection refused"
    old = make_local_certificates(tmp_path, datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=400))
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(old.cert, old.key)
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0, ssl=server_ctx)
    try:
        port = server.sockets[0].getsockname()[1]
        expired = await _failure(port, ClientSecurity(tls=TlsClientOptions(str(old.ca))))
    finally:
        server.close()
    assert expired.reason == "TLS: certificate has expired"
    assert "certificate has expired" in str(expired)
    failed = unreachable_error(expired)
    assert isinstance(failed, ConnectFailedError) and reason_of(failed) == "TLS: certificate has expired"


def test_a_connect_failure_made_elsewhere_keeps_its_message_as_reason() -> None:
    assert reason_of(ConnectFailedError("connection refused")) == "connection refused"


async def test_a_connect_that_hangs_is_bounded_by_the_requests_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host that drops packets: the connect waits connect_timeout (3 s), which a request with a shorter timeout (a
    producer's attempt, its share of the budget) must not wait out. Until stop 106 it did."""
    client = RemotingClient()
    connects: list[str] = []

    async def hangs(addr: str) -> None:
        connects.append(addr)
        await asyncio.sleep(30)

    monkeypatch.setattr(client, "_connect", hangs)
    cmd = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)
    loop = asyncio.get_running_loop()
    began = loop.time()
    with pytest.raises(RemotingConnectError, match="no connection within the request's 0.200 s") as failed:
        await client.invoke("10.255.255.1:10911", cmd, 0.2)
    assert loop.time() - began < 2.0 and failed.value.reason == "connect timed out"
    # the connect goes on for the others (shielded), one attempt for all
    with pytest.raises(RemotingConnectError):
        await client.invoke("10.255.255.1:10911", cmd, 0.05)
    assert connects == ["10.255.255.1:10911"]
    client._connecting.pop("10.255.255.1:10911").cancel()
