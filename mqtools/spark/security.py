"""TLS for the rocketmq data source and spark-load: the options that carry it to every executor.

Options (case-insensitive, like all of the source's): `tls` ("true": TLS with the system's CAs),
`tls.caFile` (the CA that signs the servers; implies tls), `tls.certFile` and `tls.keyFile` (a
client certificate). Files are checked on the driver and must exist at the same paths on the
executors. ACL credentials: `accessKey` and `secretKey` (spark-load passes the tool's; Spark's
default spark.redaction.regex hides both in plans and the UI), else MQ_ACCESS_KEY/MQ_SECRET_KEY in
the driver's environment. The resolved ClientSecurity is a plain frozen value, so it travels inside the pickled
reader, writer and task closures.
"""

from __future__ import annotations

from collections.abc import Mapping

from mqtools.client.credentials import CredentialsError, from_env
from mqtools.client.tls import options_from_flags
from mqtools.common.security import ClientSecurity, SessionCredentials, TlsClientOptions

OPTION_TLS = "tls"
OPTION_TLS_CA = "tls.caFile"
OPTION_TLS_CERT = "tls.certFile"
OPTION_TLS_KEY = "tls.keyFile"
OPTION_ACCESS_KEY = "accessKey"
OPTION_SECRET_KEY = "secretKey"


def security_from_options(options: Mapping[str, str]) -> ClientSecurity | None:
    """The data source's TLS and ACL options (keys lower-cased) as a ClientSecurity; TlsOptionError or
    CredentialsError when unusable."""
    def get(key: str) -> str | None:
        return options.get(key.lower()) or None

    enabled = (get(OPTION_TLS) or "false").strip().lower() in ("true", "1", "yes")
    tls = options_from_flags(enabled, get(OPTION_TLS_CA), get(OPTION_TLS_CERT), get(OPTION_TLS_KEY))
    access, secret = get(OPTION_ACCESS_KEY), get(OPTION_SECRET_KEY)
    if (access is None) != (secret is None):
        raise CredentialsError(f"give both {OPTION_ACCESS_KEY} and {OPTION_SECRET_KEY}, or neither")
    creds = SessionCredentials(access, secret) if access and secret else from_env()
    return ClientSecurity(creds, tls) if tls is not None or creds is not None else None


def security_reader_options(security: ClientSecurity | None) -> dict[str, str]:
    """The options that give a reader the same TLS and credentials as `security` (none without)."""
    options: dict[str, str] = {}
    creds = security.credentials if security is not None else None
    if creds is not None:
        options.update({OPTION_ACCESS_KEY: creds.access_key, OPTION_SECRET_KEY: creds.secret_key})
    tls: TlsClientOptions | None = security.tls if security is not None else None
    if tls is None:
        return options
    named = {OPTION_TLS_CA: tls.ca_file, OPTION_TLS_CERT: tls.cert_file, OPTION_TLS_KEY: tls.key_file}
    return {**options, OPTION_TLS: "true", **{k: v for k, v in named.items() if v}}
