"""TLS settings as RocketMQ names them (TlsSystemConfig, TlsMode, TlsHelper) and the SSLContexts built from them.

RocketMQ reads `tls.*` from JVM system properties and then from the file named by `tls.config.file`.
Our servers have no JVM flags, so the broker's and name server's own properties file carries the
same keys; when it names a `tls.config.file`, that file is read and its keys win, as TlsHelper's
file wins over the system properties.

Server side (`tls.server.*`): `tls.server.mode` is disabled, permissive (TLS and plain on one port,
told apart by the first byte) or enforcing (plain connections are closed). Client side (`tls.enable`,
`tls.client.*`): what the broker's own connections (registration, broker-to-broker calls, the HA
slave) use.

Deviations, on purpose: an unknown mode is refused (RocketMQ falls back to permissive, so a typo
would silently accept plain connections); with no mode given the default is permissive when a
certificate is configured and disabled when not (RocketMQ defaults to permissive with a generated
self-signed certificate, `tls.test.mode.enable`; we never make throwaway certificates in a server).
A client certificate, when asked for, is always checked against `tls.server.trustCertPath`.
"""

from __future__ import annotations

import enum
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from mqtools.common.configkeys import ConfigError
from mqtools.common.javaprops import parse_properties

#: Every TLS property starts with this (RocketMQ's TlsSystemConfig names).
TLS_KEY_PREFIX = "tls."
TLS_SERVER_MODE = "tls.server.mode"
TLS_ENABLE = "tls.enable"
TLS_CONFIG_FILE = "tls.config.file"
TLS_TEST_MODE_ENABLE = "tls.test.mode.enable"
TLS_SERVER_NEED_CLIENT_AUTH = "tls.server.need.client.auth"
TLS_SERVER_KEYPATH = "tls.server.keyPath"
TLS_SERVER_KEYPASSWORD = "tls.server.keyPassword"
TLS_SERVER_CERTPATH = "tls.server.certPath"
TLS_SERVER_AUTHCLIENT = "tls.server.authClient"
TLS_SERVER_TRUSTCERTPATH = "tls.server.trustCertPath"
TLS_CLIENT_KEYPATH = "tls.client.keyPath"
TLS_CLIENT_KEYPASSWORD = "tls.client.keyPassword"
TLS_CLIENT_CERTPATH = "tls.client.certPath"
TLS_CLIENT_AUTHSERVER = "tls.client.authServer"
TLS_CLIENT_TRUSTCERTPATH = "tls.client.trustCertPath"

_E = TypeVar("_E", bound=enum.Enum)

#: Values a server never shows (GET_BROKER_CONFIG, GET_NAMESRV_CONFIG): they unlock its private keys.
SECRET_KEYS = frozenset({TLS_SERVER_KEYPASSWORD, TLS_CLIENT_KEYPASSWORD})
MASK = "***"

#: The first byte of a TLS record carrying a handshake (RocketMQ's HANDSHAKE_MAGIC_CODE).
HANDSHAKE_MAGIC_CODE = 0x16


def _choice(cls: type[_E], key: str, value: str) -> _E:
    """One of an enum's values by name; a wrong name is a ConfigError naming the key and the choices."""
    try:
        return cls(value.strip().lower())
    except ValueError:
        names = ", ".join(str(m.value) for m in cls)
        raise ConfigError(f"{key}={value!r}: expected one of {names}") from None


class TlsMode(enum.Enum):
    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"

    @classmethod
    def parse(cls, value: str) -> TlsMode:
        return _choice(cls, TLS_SERVER_MODE, value)


class ClientAuth(enum.Enum):
    """tls.server.need.client.auth: whether a client must show a certificate."""

    NONE = "none"
    OPTIONAL = "optional"
    REQUIRE = "require"


class FirstByte(enum.Enum):
    """What a server in some mode does with a new connection, judged by its first byte."""

    TLS = "tls"
    PLAIN = "plain"
    REFUSE_TLS = "refuse-tls"
    REFUSE_PLAIN = "refuse-plain"


def classify_first_byte(first: int, mode: TlsMode) -> FirstByte:
    """RocketMQ's TlsModeHandler decision: 0x16 starts a handshake, anything else is a plain frame."""
    if first == HANDSHAKE_MAGIC_CODE:
        return FirstByte.REFUSE_TLS if mode is TlsMode.DISABLED else FirstByte.TLS
    return FirstByte.REFUSE_PLAIN if mode is TlsMode.ENFORCING else FirstByte.PLAIN


def masked(props: Mapping[str, str]) -> dict[str, str]:
    """The properties as a server may show them: key passwords replaced by ***."""
    return {k: MASK if k in SECRET_KEYS and v else v for k, v in props.items()}


def _flag(props: Mapping[str, str], key: str, default: bool) -> bool:
    raw = props.get(key)
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"{key}={raw!r}: expected true or false")
    return value == "true"


def _path(props: Mapping[str, str], key: str) -> str | None:
    value = props.get(key, "").strip()
    return value or None


def tls_properties(props: Mapping[str, str]) -> dict[str, str]:
    """The tls.* keys of a server's properties, with those of `tls.config.file` (when named) on top."""
    merged = {k: v for k, v in props.items() if k.startswith(TLS_KEY_PREFIX)}
    config_file = _path(merged, TLS_CONFIG_FILE)
    if config_file is not None:
        try:
            text = Path(config_file).expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {TLS_CONFIG_FILE} {config_file}: {exc}") from None
        merged.update((k, v) for k, v in parse_properties(text).items() if k.startswith(TLS_KEY_PREFIX))
    return merged


@dataclass(frozen=True, slots=True)
class TlsServerSettings:
    """The listening side: mode, certificate and key, and the client-certificate policy."""

    mode: TlsMode = TlsMode.DISABLED
    cert_path: str | None = None
    key_path: str | None = None
    key_password: str | None = None
    trust_cert_path: str | None = None
    need_client_auth: ClientAuth = ClientAuth.NONE

    @property
    def enabled(self) -> bool:
        return self.mode is not TlsMode.DISABLED

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> TlsServerSettings:
        tls = tls_properties(props)
        cert, key = _path(tls, TLS_SERVER_CERTPATH), _path(tls, TLS_SERVER_KEYPATH)
        raw_mode = tls.get(TLS_SERVER_MODE, "").strip()
        default = TlsMode.PERMISSIVE if cert else TlsMode.DISABLED
        mode = TlsMode.parse(raw_mode) if raw_mode else default
        auth = _choice(ClientAuth, TLS_SERVER_NEED_CLIENT_AUTH, tls.get(TLS_SERVER_NEED_CLIENT_AUTH, "") or "none")
        settings = cls(mode, cert, key, tls.get(TLS_SERVER_KEYPASSWORD) or None,
                       _path(tls, TLS_SERVER_TRUSTCERTPATH), auth)
        if settings.enabled and (cert is None or key is None):
            raise ConfigError(f"{TLS_SERVER_MODE}={mode.value} needs {TLS_SERVER_CERTPATH} and {TLS_SERVER_KEYPATH} "
                              "(mq makes no test-mode certificates; mq cluster up --tls makes a local CA)")
        if auth is not ClientAuth.NONE and settings.trust_cert_path is None:
            raise ConfigError(f"{TLS_SERVER_NEED_CLIENT_AUTH}={auth.value} needs {TLS_SERVER_TRUSTCERTPATH}")
        return settings

    def context(self) -> ssl.SSLContext | None:
        """The server SSLContext (None when disabled); ConfigError names the file that failed."""
        if not self.enabled:
            return None
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        _load_chain(ctx, self.cert_path, self.key_path, self.key_password)
        if self.need_client_auth is not ClientAuth.NONE:
            _load_ca(ctx, self.trust_cert_path)
            ctx.verify_mode = ssl.CERT_REQUIRED if self.need_client_auth is ClientAuth.REQUIRE else ssl.CERT_OPTIONAL
        return ctx


@dataclass(frozen=True, slots=True)
class TlsClientSettings:
    """A server's own outgoing connections: tls.enable and tls.client.* (authServer: verify the peer)."""

    enable: bool = False
    trust_cert_path: str | None = None
    cert_path: str | None = None
    key_path: str | None = None
    key_password: str | None = None
    auth_server: bool = False

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> TlsClientSettings:
        tls = tls_properties(props)
        return cls(_flag(tls, TLS_ENABLE, False), _path(tls, TLS_CLIENT_TRUSTCERTPATH), _path(tls, TLS_CLIENT_CERTPATH),
                   _path(tls, TLS_CLIENT_KEYPATH), tls.get(TLS_CLIENT_KEYPASSWORD) or None,
                   _flag(tls, TLS_CLIENT_AUTHSERVER, False))

    def context(self) -> ssl.SSLContext | None:
        if not self.enable:
            return None
        return client_context(self.trust_cert_path, self.cert_path, self.key_path, verify=self.auth_server,
                              key_password=self.key_password)


def client_context(ca_file: str | None, cert_file: str | None = None, key_file: str | None = None, *,
                   verify: bool = True, key_password: str | None = None) -> ssl.SSLContext:
    """A client SSLContext: verify the server against `ca_file` (the system CAs when None) and its
    name, unless `verify` is off; present `cert_file`/`key_file` when given (client authentication)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if verify:
        if ca_file is not None:
            _load_ca(ctx, ca_file)
        else:
            ctx.load_default_certs()
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert_file is not None:
        _load_chain(ctx, cert_file, key_file, key_password)
    return ctx


def _load_chain(ctx: ssl.SSLContext, cert: str | None, key: str | None, password: str | None) -> None:
    try:
        ctx.load_cert_chain(str(Path(cert or "").expanduser()), str(Path(key).expanduser()) if key else None,
                            password)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load certificate {cert} / key {key}: {exc}") from None


def _load_ca(ctx: ssl.SSLContext, ca_file: str | None) -> None:
    try:
        ctx.load_verify_locations(cafile=str(Path(ca_file or "").expanduser()))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load CA certificates {ca_file}: {exc}") from None
