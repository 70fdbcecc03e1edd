"""What a TLS port shows a new client, read without trusting it."""

from __future__ import annotations

import socket
import ssl


def served_certificate(port: int, host: str = "127.0.0.1") -> bytes:
    """The certificate (DER) a new TLS connection to `host`:`port` is shown."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection((host, port), timeout=10) as raw, ctx.wrap_socket(raw) as tls:
        cert = tls.getpeercert(binary_form=True)
    assert cert is not None
    return cert
