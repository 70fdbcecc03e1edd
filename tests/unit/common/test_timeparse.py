"""Operator-typed times to epoch ms, with one 'now' for the whole test."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mqtools.common.exitcodes import EXIT_USAGE
from mqtools.common.timeparse import TimeSpecError, parse_time_ms

NOW = 1_763_900_000_000


def local_ms(*parts: int) -> int:
    return int(datetime(*parts).timestamp() * 1000)


@pytest.mark.parametrize(("text", "expected"), [
    ("now", NOW),
    ("NOW", NOW),
    ("1700000000123", 1_700_000_000_123),
    ("-15m", NOW - 15 * 60_000),
    ("-2h", NOW - 7_200_000),
    ("-500ms", NOW - 500),
    ("-1d", NOW - 86_400_000),
    ("2026-11-23T10:00:00Z", int(datetime(2026, 11, 23, 10, tzinfo=UTC).timestamp() * 1000)),
    ("2026-11-23T10:00:00+02:00", int(datetime(2026, 11, 23, 8, tzinfo=UTC).timestamp() * 1000)),
    ("2026-11-23 10:00", local_ms(2026, 11, 23, 10, 0)),
    ("2026-11-23#10:00:01:250", local_ms(2026, 11, 23, 10, 0, 1) + 250),
])
def test_accepted_forms(text: str, expected: int) -> None:
    assert parse_time_ms(text, NOW) == expected


@pytest.mark.parametrize("text", ["yesterday", "-15x", "2026-13-01", "2026-11-23#10:00", "", "+5m"])
def test_rejected_forms_name_what_is_accepted(text: str) -> None:
    with pytest.raises(ValueError, match="yyyy-MM-dd#HH:mm:ss:SSS") as raised:
        parse_time_ms(text, NOW)
    assert isinstance(raised.value, TimeSpecError) and raised.value.exit_code == EXIT_USAGE  # the frame's usage exit
