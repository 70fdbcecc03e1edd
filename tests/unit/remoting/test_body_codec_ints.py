"""Int fields of bodies take JSON numbers and decimal strings within Java's long range, nothing else: a value
that passed as an "int" otherwise broke every later answer that encodes it (or a comparison mid-request)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from mqtools.remoting.bodies import Body, DataVersion, QueueData, RegisterBrokerBody, TopicConfig
from mqtools.remoting.body_codec import from_obj
from mqtools.remoting.errors import BodyError

LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)


@dataclass(slots=True)
class WithOptional(Body):
    value: int | None = None


@pytest.mark.parametrize(("raw", "value"), [
    (7, 7), ("7", 7), ("-7", -7), ("+7", 7), (LONG_MAX, LONG_MAX), (LONG_MIN, LONG_MIN),
    (str(LONG_MAX), LONG_MAX), (str(LONG_MIN), LONG_MIN),
])
def test_ints_and_decimal_strings_in_the_long_range_decode(raw: Any, value: int) -> None:
    assert from_obj(DataVersion, {"stateVersion": raw}).state_version == value


@pytest.mark.parametrize("raw", [
    "99999999999999999999999", LONG_MAX + 1, LONG_MIN - 1, str(LONG_MAX + 1), 10**30,
    {"a": 1}, [1], True, 1.5, 1e23, "", " 7", "7 ", "1_000", "0x10", "\u0661", "-", "1" * 5000,
], ids=lambda raw: repr(raw)[:24])
def test_anything_else_is_a_body_error(raw: Any) -> None:
    with pytest.raises(BodyError):
        from_obj(DataVersion, {"stateVersion": raw})


def test_a_json_body_with_a_huge_queue_number_is_refused_whole() -> None:
    body = b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"U":{"topicName":"U",' \
           b'"readQueueNums":"99999999999999999999999"}}}}'
    with pytest.raises(BodyError, match="long"):
        RegisterBrokerBody.from_request(body)
    with pytest.raises(BodyError):
        QueueData.from_json(b'{"brokerName":"b","perm":18446744073709551615}')  # past a long, within orjson's u64


def test_optional_int_fields_still_take_null() -> None:
    assert WithOptional.from_json(b'{"value":null}').value is None
    assert WithOptional.from_json(b'{"value":"12"}').value == 12


def test_nested_int_fields_are_checked_too() -> None:
    assert from_obj(TopicConfig, {"topicName": "T", "readQueueNums": "8"}).read_queue_nums == 8
    with pytest.raises(BodyError):
        from_obj(TopicConfig, {"topicName": "T", "perm": {"x": 1}})
