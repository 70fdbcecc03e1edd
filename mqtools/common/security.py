"""What a client needs to talk to a secured cluster: ACL session credentials and TLS settings.

One value, `ClientSecurity`, travels from where a tool learns it (a context, a credentials file,
the environment) down to the remoting client that signs requests and wraps sockets. Keeping it
in one object means every tool (admin, top, drills, spark-load) gets both by passing one argument.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

MASK = "****"
"""What the toolkit prints where a secret (a secret key, a password) stands."""


@dataclass(frozen=True, slots=True)
class SessionCredentials:
    """RocketMQ ACL 1.0 credentials (AclClientRPCHook's SessionCredentials)."""

    access_key: str
    secret_key: str
    security_token: str | None = None

    def __repr__(self) -> str:
        return f"SessionCredentials(access_key={self.access_key!r}, secret_key='***')"


@dataclass(frozen=True, slots=True)
class TlsClientOptions:
    """TLS for client connections: the CA that signs the servers, and an optional client certificate.

    `verify` checks the server's chain and name (the address's host, or `server_name` when the
    certificate names the servers differently); `ca_file` None means the system's CAs.
    """

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    verify: bool = True
    server_name: str | None = None
    key_password: str | None = None


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    credentials: SessionCredentials | None = None
    tls: TlsClientOptions | None = None

    def to_json(self) -> dict[str, Any]:
        """For a child process of a tool (a drill's producer), handed over in its environment, not argv."""
        return {"credentials": asdict(self.credentials) if self.credentials else None,
                "tls": asdict(self.tls) if self.tls else None}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> ClientSecurity:
        creds, tls = raw.get("credentials"), raw.get("tls")
        return cls(SessionCredentials(**creds) if creds else None, TlsClientOptions(**tls) if tls else None)
