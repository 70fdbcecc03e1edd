"""TlsCertificateManager: the certificate a handshake gets is the one the files hold once a change has settled;
a set that does not load leaves the previous one served; the expiry and the gRPC pair follow."""

from __future__ import annotations

import datetime
import logging
import shutil
import ssl
from pathlib import Path

import pytest

from mqtools.cluster.certs import LocalCertificates, make_local_certificates
from mqtools.common.configkeys import ConfigError
from mqtools.common.tls import TlsMode, TlsServerSettings
from mqtools.common.tls_certificates import TlsCertificateManager, certificate_not_after

NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)


def served(context: ssl.SSLContext | None) -> bytes:
    """The certificate (DER) a client is shown by a server using `context`: a handshake in memory."""
    assert context is not None
    client_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client_ctx.check_hostname, client_ctx.verify_mode = False, ssl.CERT_NONE
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_ctx.wrap_bio(c_in, c_out)
    server = context.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):
        for end in (client, server):
            try:
                end.do_handshake()
            except ssl.SSLWantReadError:
                pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        try:
            client.do_handshake()
            cert = client.getpeercert(binary_form=True)
            assert cert is not None
            return cert
        except ssl.SSLWantReadError:
            continue
    raise AssertionError("no handshake")


def der(path: Path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(path.read_text())


@pytest.fixture
def files(tmp_path: Path) -> tuple[LocalCertificates, LocalCertificates, LocalCertificates]:
    """The files a server is configured with, and two other sets to copy over them."""
    first = make_local_certificates(tmp_path / "served", NOW)
    return first, make_local_certificates(tmp_path / "renewed", NOW + datetime.timedelta(days=300)), \
        make_local_certificates(tmp_path / "other", NOW)


def manager(certs: LocalCertificates) -> TlsCertificateManager:
    return TlsCertificateManager(TlsServerSettings(TlsMode.ENFORCING, str(certs.cert), str(certs.key)))


def settle(m: TlsCertificateManager) -> bool:
    """Two polls: the first sees the change, the second sees it stayed."""
    return m.reload_if_changed() or m.reload_if_changed()


def test_a_renewed_pair_is_served_once_it_has_settled(files) -> None:
    served_files, renewed, _ = files
    m = manager(served_files)
    first, old = m.context, der(served_files.cert)
    assert served(first) == old
    assert m.generation == 0 and m.pem_pair == (served_files.key.read_bytes(), served_files.cert.read_bytes())
    assert m.not_after == pytest.approx((NOW + datetime.timedelta(days=365)).timestamp(), abs=1)
    shutil.copyfile(renewed.cert, served_files.cert)
    shutil.copyfile(renewed.key, served_files.key)
    assert not m.reload_if_changed()  # just changed: maybe still being copied
    assert m.reload_if_changed()
    assert m.generation == 1 and m.context is not first
    assert served(m.context) == der(renewed.cert)
    assert served(first) == old  # a context already handed out keeps its certificate
    assert m.pem_pair == (renewed.key.read_bytes(), renewed.cert.read_bytes())
    assert m.not_after == pytest.approx((NOW + datetime.timedelta(days=665)).timestamp(), abs=1)
    assert not m.reload_if_changed() and not m.reload_if_changed()


def test_a_certificate_without_its_key_keeps_the_previous_pair_until_the_key_arrives(files, caplog) -> None:
    served_files, renewed, _ = files
    m = manager(served_files)
    old = der(served_files.cert)
    shutil.copyfile(renewed.cert, served_files.cert)
    with caplog.at_level(logging.WARNING, "mq.tls"):
        assert not settle(m)
        assert not settle(m)  # one line for the bad set, not one per poll
    assert len([r for r in caplog.records if "did not load" in r.getMessage()]) == 1
    assert served(m.context) == old and m.generation == 0
    shutil.copyfile(renewed.key, served_files.key)
    assert settle(m)
    assert served(m.context) == der(renewed.cert)


def test_a_deleted_file_keeps_what_is_served(files) -> None:
    served_files, _, other = files
    m = manager(served_files)
    old = der(served_files.cert)
    served_files.cert.unlink()
    assert not settle(m)
    assert served(m.context) == old and m.generation == 0
    shutil.copyfile(other.cert, served_files.cert)
    shutil.copyfile(other.key, served_files.key)
    assert settle(m)
    assert served(m.context) == der(other.cert)


def test_a_changed_trusted_ca_loads_again(files) -> None:
    served_files, _, other = files
    ca = served_files.ca.parent / "clients-ca.pem"
    shutil.copyfile(served_files.ca, ca)
    settings = TlsServerSettings.from_properties({"tls.server.mode": "enforcing",
                                                  "tls.server.certPath": str(served_files.cert),
                                                  "tls.server.keyPath": str(served_files.key),
                                                  "tls.server.need.client.auth": "require",
                                                  "tls.server.trustCertPath": str(ca)})
    m = TlsCertificateManager(settings)
    shutil.copyfile(other.ca, ca)
    assert settle(m) and m.generation == 1


def test_files_that_do_not_load_at_start_are_a_config_error(files) -> None:
    served_files, _, other = files
    with pytest.raises(ConfigError, match="cannot load certificate"):
        TlsCertificateManager(TlsServerSettings(TlsMode.ENFORCING, str(served_files.cert), str(other.key)))


def test_disabled_has_no_context_and_never_reloads(tmp_path: Path) -> None:
    m = TlsCertificateManager(TlsServerSettings())
    assert m.context is None and m.not_after is None and not m.enabled
    assert not settle(m)


def test_not_after_of_what_is_not_a_certificate_is_unknown() -> None:
    assert certificate_not_after(b"not a certificate") is None
