"""TLS settings as RocketMQ names them: mode parsing, property parsing, SSLContexts, the first-byte decision."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from mqtools.cluster.certs import make_local_certificates
from mqtools.common.configkeys import ConfigError
from mqtools.common.tls import (
    ClientAuth,
    FirstByte,
    TlsClientSettings,
    TlsMode,
    TlsServerSettings,
    classify_first_byte,
    client_context,
    masked,
)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory):
    return make_local_certificates(tmp_path_factory.mktemp("certs"))


@pytest.mark.parametrize(("raw", "mode"), [("disabled", TlsMode.DISABLED), ("Permissive", TlsMode.PERMISSIVE),
                                           (" enforcing ", TlsMode.ENFORCING)])
def test_mode_parses_rocketmq_names(raw: str, mode: TlsMode) -> None:
    assert TlsMode.parse(raw) is mode


def test_unknown_mode_is_refused_not_permissive() -> None:
    with pytest.raises(ConfigError, match="tls.server.mode='enforcng'"):
        TlsMode.parse("enforcng")


@pytest.mark.parametrize(("first", "mode", "expected"), [
    (0x16, TlsMode.PERMISSIVE, FirstByte.TLS),
    (0x16, TlsMode.ENFORCING, FirstByte.TLS),
    (0x16, TlsMode.DISABLED, FirstByte.REFUSE_TLS),
    (0x00, TlsMode.PERMISSIVE, FirstByte.PLAIN),  # a remoting frame starts with its big-endian length
    (0x00, TlsMode.ENFORCING, FirstByte.REFUSE_PLAIN),
    (0x00, TlsMode.DISABLED, FirstByte.PLAIN),
    (0x17, TlsMode.PERMISSIVE, FirstByte.PLAIN),
])
def test_first_byte_decides_like_rocketmq(first: int, mode: TlsMode, expected: FirstByte) -> None:
    assert classify_first_byte(first, mode) is expected


def test_no_tls_keys_means_disabled() -> None:
    settings = TlsServerSettings.from_properties({"brokerName": "b"})
    assert settings.mode is TlsMode.DISABLED and settings.context() is None


def test_certificate_without_mode_is_permissive(certs) -> None:
    settings = TlsServerSettings.from_properties({"tls.server.certPath": str(certs.cert),
                                                  "tls.server.keyPath": str(certs.key)})
    assert settings.mode is TlsMode.PERMISSIVE
    assert isinstance(settings.context(), ssl.SSLContext)


def test_enforcing_without_certificate_is_refused() -> None:
    with pytest.raises(ConfigError, match="needs tls.server.certPath and tls.server.keyPath"):
        TlsServerSettings.from_properties({"tls.server.mode": "enforcing"})


def test_client_auth_needs_trust_path(certs) -> None:
    props = {"tls.server.mode": "enforcing", "tls.server.certPath": str(certs.cert),
             "tls.server.keyPath": str(certs.key), "tls.server.need.client.auth": "require"}
    with pytest.raises(ConfigError, match="tls.server.trustCertPath"):
        TlsServerSettings.from_properties(props)
    settings = TlsServerSettings.from_properties({**props, "tls.server.trustCertPath": str(certs.ca)})
    assert settings.need_client_auth is ClientAuth.REQUIRE
    assert settings.context().verify_mode is ssl.CERT_REQUIRED


def test_tls_config_file_wins_over_the_properties(certs, tmp_path: Path) -> None:
    extra = tmp_path / "tls.properties"
    extra.write_text(f"tls.server.mode=enforcing\ntls.server.certPath={certs.cert}\n"
                     f"tls.server.keyPath={certs.key}\ntls.enable=true\ntls.client.authServer=true\n")
    props = {"tls.server.mode": "permissive", "tls.config.file": str(extra)}
    assert TlsServerSettings.from_properties(props).mode is TlsMode.ENFORCING
    client = TlsClientSettings.from_properties(props)
    assert client.enable and client.auth_server


def test_missing_tls_config_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read tls.config.file"):
        TlsServerSettings.from_properties({"tls.config.file": str(tmp_path / "nope.properties")})


def test_missing_certificate_file_names_it(certs, tmp_path: Path) -> None:
    settings = TlsServerSettings.from_properties({"tls.server.mode": "enforcing",
                                                  "tls.server.certPath": str(tmp_path / "gone.pem"),
                                                  "tls.server.keyPath": str(certs.key)})
    with pytest.raises(ConfigError, match="gone.pem"):
        settings.context()


def test_bad_flag_is_refused() -> None:
    with pytest.raises(ConfigError, match="tls.enable='yes'"):
        TlsClientSettings.from_properties({"tls.enable": "yes"})


def test_client_context_verifies_by_default(certs) -> None:
    ctx = client_context(str(certs.ca))
    assert ctx.verify_mode is ssl.CERT_REQUIRED and ctx.check_hostname
    loose = client_context(None, verify=False)
    assert loose.verify_mode is ssl.CERT_NONE and not loose.check_hostname


def test_client_settings_off_build_no_context() -> None:
    assert TlsClientSettings.from_properties({}).context() is None


def test_key_passwords_are_never_shown() -> None:
    shown = masked({"tls.server.keyPassword": "hunter2", "tls.client.keyPassword": "", "listenPort": "10911"})
    assert shown == {"tls.server.keyPassword": "***", "tls.client.keyPassword": "", "listenPort": "10911"}
