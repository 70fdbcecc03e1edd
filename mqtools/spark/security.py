"""TLS for the rocketmq data source and spark-load: the options that carry it to every executor.

Options (case-insensitive, like all of the source's): `tls` ("true": TLS with the system's CAs),
`tls.caFile` (the CA that signs the servers; implies tls), `tls.certFile` and `tls.keyFile` (a
client certificate). Files are checked on the driver and must exist at the same paths on the
executors. The resolved ClientSecurity is a plain frozen value, so it travels inside the pickled
reader, writer and task closures.
"""

from __future__ import annotations

from collections.abc import Mapping

from mqtools.client.tls import options_from_flags
from mqtools.remoting.security import ClientSecurity, TlsClientOptions

OPTION_TLS = "tls"
OPTION_TLS_CA = "tls.caFile"
OPTION_TLS_CERT = "tls.certFile"
OPTION_TLS_KEY = "tls.keyFile"


def security_from_options(options: Mapping[str, str]) -> ClientSecurity | None:
    """The data source's TLS options (keys lower-cased) as a ClientSecurity; TlsOptionError when unusable."""
    def get(key: str) -> str | None:
        return options.get(key.lower()) or None

    enabled = (get(OPTION_TLS) or "false").strip().lower() in ("true", "1", "yes")
    tls = options_from_flags(enabled, get(OPTION_TLS_CA), get(OPTION_TLS_CERT), get(OPTION_TLS_KEY))
    return ClientSecurity(tls=tls) if tls is not None else None


def tls_reader_options(security: ClientSecurity | None) -> dict[str, str]:
    """The options that give a reader the same TLS as `security` (none when it has no TLS)."""
    tls: TlsClientOptions | None = security.tls if security is not None else None
    if tls is None:
        return {}
    named = {OPTION_TLS_CA: tls.ca_file, OPTION_TLS_CERT: tls.cert_file, OPTION_TLS_KEY: tls.key_file}
    return {OPTION_TLS: "true", **{k: v for k, v in named.items() if v}}
