"""Every header class's written-out from_ext and to_ext (headers.py) read and write extFields exactly as the loop
over the class's fields they replaced: the same values, defaults, refusals and messages. The loop is kept here
as the oracle."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtools.common.javanum import LONG_RANGE
from mqtools.remoting import assignment, controller, headers, pop, pop_stats, transaction
from mqtools.remoting.errors import HeaderError
from mqtools.remoting.header_codec import fields_of
from mqtools.remoting.headers import Header

MODULES = (headers, controller, pop, pop_stats, transaction, assignment)
CLASSES = sorted({obj for m in MODULES for obj in vars(m).values()
                  if isinstance(obj, type) and issubclass(obj, Header) and obj is not Header
                  and dataclasses.is_dataclass(obj)}, key=lambda c: c.__name__)


def oracle_parse(value: str, kind: type, wire_name: str) -> Any:
    if kind is str:
        return value
    if kind is bool:
        return value.strip().lower() == "true"
    try:
        number = int(value)
    except ValueError:
        raise HeaderError(f"the custom field <{wire_name}> is not a number: {value[:64]!r}") from None
    if number not in LONG_RANGE:
        raise HeaderError(f"the custom field <{wire_name}> is out of range: {value[:64]!r}")
    return number


def oracle_from_ext(cls: type, ext: dict[str, str]) -> Any:
    kwargs = {}
    for name, wire_name, kind, required in fields_of(cls):
        raw = ext.get(wire_name)
        if raw is None:
            if required:
                raise HeaderError(f"the custom field <{wire_name}> is null")
            continue
        kwargs[name] = oracle_parse(raw, kind, wire_name)
    return cls(**kwargs)


def oracle_to_ext(header: Any) -> dict[str, str]:
    ext = {}
    for name, wire_name, _kind, _required in fields_of(type(header)):
        value = getattr(header, name)
        if value is not None:
            ext[wire_name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return ext


def outcome(fn, *args) -> Any:
    try:
        return "ok", fn(*args)
    except HeaderError as exc:
        return "refused", str(exc)


VALUES = st.sampled_from(["", "0", "-1", "7", " 12 ", "+5", "1_000", "x", "true", "TRUE ", "false", "9" * 25,
                          str(2**63 - 1), str(2**63), str(-(2**63)), str(-(2**63) - 1), "topic-a", "１２"])


def test_every_header_class_is_covered() -> None:
    assert len(CLASSES) > 60


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_as_the_loop_over_the_fields(cls: type, data: st.DataObject) -> None:
    wires = [wire for _name, wire, _kind, _required in fields_of(cls)]
    ext = data.draw(st.dictionaries(st.sampled_from(wires) if wires else st.just("x"), VALUES))
    if data.draw(st.booleans()):  # every field there, most of the time a valid header
        ext = {wire: data.draw(VALUES) for wire in wires} | ext
    got, expected = outcome(cls.from_ext, ext), outcome(oracle_from_ext, cls, ext)
    assert got == expected
    if got[0] == "ok":
        header = got[1]
        assert header.to_ext() == oracle_to_ext(header)
        assert cls.from_ext(header.to_ext()) == header
        for name, _wire, kind, _required in fields_of(cls):  # a value of another type than annotated
            odd = dataclasses.replace(header, **{name: True if kind is not bool else 3})
            assert odd.to_ext() == oracle_to_ext(odd)
