"""A client connection knows when the certificate its peer served expires, once it has verified it: that is how
`diagnose cluster` sees a name server's certificate coming to its end (a name server reports nothing of its own)."""

from __future__ import annotations

import asyncio
import datetime
import ssl
import time
from pathlib import Path

from mqtools.cluster.certs import VALID_DAYS, make_local_certificates
from mqtools.common.security import ClientSecurity, TlsClientOptions
from mqtools.remoting.client import RemotingClient


async def _not_after(tmp_path: Path, *, verify: bool) -> float | None:
    made = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=VALID_DAYS - 5)  # 5 days left
    certs = make_local_certificates(tmp_path, made)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(certs.cert, certs.key)
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0, ssl=server_ctx)
    addr = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    client = RemotingClient([], security=ClientSecurity(tls=TlsClientOptions(str(certs.ca), verify=verify)))
    try:
        assert client.peer_not_after(addr) is None  # no connection yet
        await client.connection(addr)
        return client.peer_not_after(addr)
    finally:
        await client.close()
        server.close()


async def test_a_verified_peer_certificates_expiry_is_known(tmp_path: Path) -> None:
    not_after = await _not_after(tmp_path, verify=True)
    assert not_after is not None and abs(not_after - (time.time() + 5 * 86_400)) < 600


async def test_an_unverified_one_is_not_known(tmp_path: Path) -> None:
    assert await _not_after(tmp_path, verify=False) is None
