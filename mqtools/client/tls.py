"""TLS options for tools: from command-line flags or a context, checked before anything connects.

`--tls` turns TLS on with the system's CAs; `--tls-ca FILE` (which implies --tls) trusts that CA
instead; `--tls-cert FILE --tls-key FILE` add a client certificate for servers that ask for one.
Files are loaded here, once, so a missing or bad file is one usage error naming it, not a failed
connection later. Contexts keep the same options as JSON (`mq context add ... --tls-ca FILE`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqtools.client.errors import MQClientError
from mqtools.common.configkeys import ConfigError
from mqtools.common.exitcodes import EXIT_USAGE
from mqtools.common.security import TlsClientOptions
from mqtools.common.tls import client_context


class TlsOptionError(MQClientError):
    """A TLS flag or a context's TLS entry that cannot be used (missing file, cert without key)."""

    exit_code = EXIT_USAGE


def options_from_flags(tls: bool, ca: str | None = None, cert: str | None = None,
                       key: str | None = None) -> TlsClientOptions | None:
    """The flags as options (None when none was given); TlsOptionError when they cannot work."""
    if not (tls or ca or cert or key):
        return None
    if (cert is None) != (key is None):
        raise TlsOptionError("--tls-cert and --tls-key go together (a client certificate needs its key)")
    options = TlsClientOptions(_absolute(ca), _absolute(cert), _absolute(key))
    check(options)
    return options


def check(options: TlsClientOptions) -> None:
    """Load the files the options name, so a bad one fails here with its name."""
    try:
        client_context(options.ca_file, options.cert_file, options.key_file, verify=options.verify,
                       key_password=options.key_password)
    except ConfigError as exc:
        raise TlsOptionError(str(exc)) from None


def options_to_json(options: TlsClientOptions) -> dict[str, Any]:
    return {"caFile": options.ca_file, "certFile": options.cert_file, "keyFile": options.key_file,
            "verify": options.verify, "serverName": options.server_name}


def options_from_json(raw: dict[str, Any] | None) -> TlsClientOptions | None:
    if not raw:
        return None
    return TlsClientOptions(raw.get("caFile"), raw.get("certFile"), raw.get("keyFile"),
                            bool(raw.get("verify", True)), raw.get("serverName"))


def _absolute(path: str | None) -> str | None:
    """Contexts outlive the directory a flag was typed in."""
    return str(Path(path).expanduser().resolve()) if path else None
