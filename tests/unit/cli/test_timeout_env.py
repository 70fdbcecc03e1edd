"""MQ_TIMEOUT: the answer timeout of admin commands given no --timeout (the mqadmin dialect has none)."""

from __future__ import annotations

import pytest

from mqtools.cli.admin.common import DEFAULT_TIMEOUT, default_timeout
from mqtools.common.errors import UsageError


def test_unset_or_empty_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MQ_TIMEOUT", raising=False)
    assert default_timeout() == DEFAULT_TIMEOUT
    monkeypatch.setenv("MQ_TIMEOUT", " ")
    assert default_timeout() == DEFAULT_TIMEOUT


def test_seconds_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MQ_TIMEOUT", "1.5")
    assert default_timeout() == 1.5


@pytest.mark.parametrize("bad", ["abc", "0", "-3", "nan"])
def test_anything_else_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("MQ_TIMEOUT", bad)
    with pytest.raises(UsageError) as exc:
        default_timeout()
    assert exc.value.exit_code == 2
    line = exc.value.summary()
    assert "MQ_TIMEOUT" in line and "\n" not in line
