"""Exceptions of the remoting layer."""

from __future__ import annotations

import ssl


class RemotingError(Exception):
    """Base of every remoting failure."""


class ProtocolError(RemotingError):
    """The peer sent bytes that are not a valid remoting frame: close that connection only."""


class RemotingConnectError(RemotingError):
    """No connection could be made to the address; `reason` says why in a few words (connect_failure)."""

    def __init__(self, addr: str, reason: str, detail: str | None = None) -> None:
        super().__init__(f"connect to {addr} failed: {detail or reason}")
        self.addr = addr
        self.reason = reason


def connect_failure(exc: BaseException) -> str:
    """Why a connect failed, as an operator reads it: refused (nothing listens: a process down), timed out (nothing
    answers: a host down or cut off), the certificate or the handshake (TLS), or the system's own words."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS: {exc.verify_message or exc.reason}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS handshake failed: {exc.reason or exc}"
    if isinstance(exc, TimeoutError):
        return "connect timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError):
        return "connection reset"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[:1].lower() + exc.strerror[1:]
    return str(exc) or type(exc).__name__


class RemotingTimeoutError(RemotingError):
    """No response arrived within the timeout."""

    def __init__(self, addr: str, timeout: float, code: int) -> None:
        super().__init__(f"request code {code} to {addr} timed out after {timeout:.3f}s")
        self.addr = addr


class RemotingConnectionClosed(RemotingError):
    """The connection dropped while the request was pending."""

    def __init__(self, addr: str, silent_plain: bool = False) -> None:
        hint = (" before answering anything: a server in TLS enforcing mode closes plain connections (is TLS "
                "needed, e.g. --tls-ca FILE?), one out of file descriptors closes new ones") if silent_plain else ""
        super().__init__(f"connection to {addr} closed{hint}")
        self.addr = addr


class BadRequestError(RemotingError):
    """The peer's request is malformed (its fault, not ours).

    The server answers it with a code and this text as the remark, and logs one rate-limited line
    without a traceback; any other exception out of a processor is our bug and keeps its traceback.
    """


class HeaderError(BadRequestError):
    """A request header misses a required field or has one of the wrong type or range."""


class BodyError(BadRequestError, ValueError):
    """A request body is not what its code calls for: not UTF-8, not JSON, or the wrong shape.
    Also a ValueError, so callers that catch decoding failures as ValueError keep working."""
