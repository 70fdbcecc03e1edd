"""Where tools take ACL credentials from: the environment, else the context's 0600 file; never printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqtools.client import credentials
from mqtools.client.contexts import ContextError, ContextStore, client_security
from mqtools.common.security import SessionCredentials


def test_environment_wins_and_half_a_pair_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "c.yml"
    credentials.write_file(path, SessionCredentials("filekey1", "filesecret"))
    env = {credentials.ACCESS_KEY_ENV: "envkey1", credentials.SECRET_KEY_ENV: "envsecret"}
    assert credentials.resolve(str(path), env) == SessionCredentials("envkey1", "envsecret")
    assert credentials.resolve(str(path), {}) == SessionCredentials("filekey1", "filesecret")
    assert credentials.resolve(None, {}) is None
    with pytest.raises(credentials.CredentialsError):
        credentials.resolve(None, {credentials.ACCESS_KEY_ENV: "envkey1"})


def test_file_is_private_and_an_open_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.yml"
    credentials.write_file(path, SessionCredentials("filekey1", "filesecret", "tok"))
    assert path.stat().st_mode & 0o777 == 0o600
    assert credentials.read_file(path).security_token == "tok"
    path.chmod(0o644)
    with pytest.raises(credentials.CredentialsError) as info:
        credentials.read_file(path)
    assert "filesecret" not in str(info.value)


def test_context_names_the_file_not_the_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(credentials.ACCESS_KEY_ENV, raising=False)
    monkeypatch.delenv(credentials.SECRET_KEY_ENV, raising=False)
    path = tmp_path / "c.yml"
    credentials.write_file(path, SessionCredentials("filekey1", "filesecret"))
    store = ContextStore.load(tmp_path)
    context = store.add("acl", "127.0.0.1:9876", credentials=str(path))
    store.save()
    assert "filesecret" not in (tmp_path / "contexts.json").read_text()
    security = client_security(ContextStore.load(tmp_path).get("acl"))
    assert security is not None and security.credentials == SessionCredentials("filekey1", "filesecret")
    assert "filesecret" not in repr(security)
    path.chmod(0o640)
    with pytest.raises(ContextError):
        client_security(context)
