"""The rocketmq data source's ACL options: what spark-load hands the readers comes back as the same
credentials on an executor, and half a pair is an error."""

from __future__ import annotations

import pytest

from mqtools.client.credentials import ACCESS_KEY_ENV, SECRET_KEY_ENV, CredentialsError
from mqtools.common.security import ClientSecurity, SessionCredentials
from mqtools.spark.security import security_from_options, security_reader_options


def test_reader_options_carry_the_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ACCESS_KEY_ENV, raising=False)
    monkeypatch.delenv(SECRET_KEY_ENV, raising=False)
    security = ClientSecurity(SessionCredentials("sparkkey1", "spark-secret-1"))
    options = {k.lower(): v for k, v in security_reader_options(security).items()}  # Spark lower-cases keys
    assert security_from_options(options) == security
    assert security_from_options({}) is None
    with pytest.raises(CredentialsError):
        security_from_options({"accesskey": "sparkkey1"})


def test_driver_environment_is_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ACCESS_KEY_ENV, "envkey01")
    monkeypatch.setenv(SECRET_KEY_ENV, "env-secret-1")
    found = security_from_options({})
    assert found is not None and found.credentials == SessionCredentials("envkey01", "env-secret-1")
