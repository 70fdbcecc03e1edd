"""The JSON codec of body dataclasses: a Python value to the structure RocketMQ peers exchange and back.

Field names are snake_case in Python and camelCase on the wire (a `wire` metadata entry overrides); None
fields are left out; map keys that are numbers or objects are written as JSON strings. The encoder of a
value type and the decoder of a type hint are each built once, not per value: a broker's registration of
10,000 topics spent most of its time inspecting types.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import re
import types
import typing
from collections.abc import Callable
from typing import Any

from mqtools.remoting import fastjson
from mqtools.remoting.errors import BodyError
from mqtools.remoting.header_codec import camel

#: Java's long range: the Python hints do not tell int from long, so every int field takes a long, and no wider
#: (a wider value decoded, then failed every answer that encoded it).
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
#: A decimal string as Long.parseLong reads it (fastjson may write a long as a string); ASCII digits only.
_DECIMAL = re.compile(r"[+-]?[0-9]{1,19}", re.ASCII)


@functools.cache
def _spec(cls: type) -> tuple[tuple[str, str, Any], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((f.name, f.metadata.get("wire", camel(f.name)), hints[f.name]) for f in dataclasses.fields(cls))


def to_obj(value: Any) -> Any:
    """Python value -> JSON-ready structure (dataclasses become camelCase dicts)."""
    kind = type(value)
    encode = _ENCODERS.get(kind)
    if encode is None:
        encode = _ENCODERS[kind] = _encoder(kind)
    return encode(value)


#: Values that are their own JSON (subclasses, such as an IntEnum, take to_obj's way, to the same result).
_PLAIN = frozenset({str, int, float, bool})
#: Encoder per value type, decided once per type (a broker's 10,000 topics asked it 90,000 times per registration).
_ENCODERS: dict[type, Callable[[Any], Any]] = {}


def _encoder(kind: type) -> Callable[[Any], Any]:
    if dataclasses.is_dataclass(kind):
        spec = _spec(kind)
        wire_names = tuple(wire_name for _name, wire_name, _hint in spec)
        values = _field_values(tuple(name for name, _wire, _hint in spec))

        def encode(value: Any) -> Any:
            out = {}
            for wire_name, item in zip(wire_names, values(value), strict=True):
                if item is not None:
                    out[wire_name] = item if type(item) in _PLAIN else to_obj(item)
            return out

        return encode
    if issubclass(kind, dict):
        return lambda value: {_key_obj(k): to_obj(v) for k, v in value.items()}
    if issubclass(kind, (set, frozenset)):
        return lambda value: sorted((to_obj(v) for v in value), key=str)
    if issubclass(kind, (list, tuple)):
        return lambda value: [to_obj(v) for v in value]
    return _identity


def _field_values(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """A getter of these attributes as a tuple, whatever their number (attrgetter's own shape varies)."""
    if len(names) > 1:
        return operator.attrgetter(*names)
    if names:
        get = operator.attrgetter(names[0])
        return lambda value: (get(value),)
    return lambda value: ()


def _key_obj(key: Any) -> Any:
    if dataclasses.is_dataclass(key):
        return fastjson.ObjectKey(to_obj(key))
    return key if isinstance(key, str) else str(key)


def from_obj(hint: Any, raw: Any) -> Any:
    """JSON structure -> Python value of the given type hint."""
    return _decoder(hint)(raw)


@functools.cache
def _decoder(hint: Any) -> Callable[[Any], Any]:
    """The decoder of one type hint, built once: the hint is inspected here, not per value, because a
    registration's 10,000 topics spent most of their decode asking typing what a TopicConfig is."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = _decoder(next(a for a in typing.get_args(hint) if a is not type(None)))
        return lambda raw: None if raw is None else inner(raw)
    if origin is dict:
        key_t, val_t = typing.get_args(hint)
        value = _decoder(val_t)
        if dataclasses.is_dataclass(key_t) or key_t is int:
            return lambda raw: None if raw is None else {_key_from(key_t, k): value(v) for k, v in raw.items()}
        return lambda raw: None if raw is None else {k: value(v) for k, v in raw.items()}
    if origin in (list, set, frozenset):
        (item_t,) = typing.get_args(hint)
        item = _decoder(item_t)
        return lambda raw: None if raw is None else origin(item(v) for v in _array(raw))
    if dataclasses.is_dataclass(hint):
        return _dataclass_decoder(hint)
    if hint is int:
        return _long
    if hint is str:
        return lambda raw: raw if raw is None or isinstance(raw, str) else str(raw)
    return _identity


#: Field types whose decoder returns a value of that exact type unchanged (object: any value, unchanged); not
#: int, whose range is checked.
_PASS_THROUGH: dict[Any, type] = {str: str, bool: object, float: object, Any: object}


def _identity(raw: Any) -> Any:
    return raw


def _array(raw: Any) -> list[Any]:
    """A list or set field's value: a JSON array; any other iterable was taken item by item (a string's characters,
    a map's keys), so {"syncStateSet":"12"} read as {1, 2}."""
    if type(raw) is not list:
        raise BodyError(f"not a JSON array: {_shown(raw)}")
    return raw


def _long(raw: Any) -> int | None:
    """An int field's value: a JSON integer or a decimal string within a long, or null as Java's boxed types
    write it (kept as before: Apache's answers carry nulls where the field is an Integer); a bool, float, list or
    map is a BodyError, so the request gets an error answer instead of storing what no encoder or comparison
    takes."""
    if raw is None:
        return None
    if type(raw) is int:
        if LONG_MIN <= raw <= LONG_MAX:
            return raw
    elif type(raw) is str and _DECIMAL.fullmatch(raw):
        value = int(raw)
        if LONG_MIN <= value <= LONG_MAX:
            return value
    raise BodyError(f"not a Java long: {_shown(raw)}")


def _shown(raw: Any) -> str:
    """A peer's value, short, as an error remark shows it; a huge int by its size (str() refuses over 4,300 digits)."""
    if type(raw) is int:
        return f"a {raw.bit_length()}-bit integer"
    return f"{type(raw).__name__} {repr(raw)[:40]}"


def _dataclass_decoder(cls: type) -> Callable[[Any], Any]:
    """Its fields' decoders are looked up at the first call, so a dataclass that holds itself terminates."""
    fields: tuple[tuple[str, str, Callable[[Any], Any], type | None], ...] | None = None

    def decode(raw: Any) -> Any:
        nonlocal fields
        if raw is None:
            return None
        if fields is None:
            fields = tuple((name, wire_name, _decoder(sub), _PASS_THROUGH.get(sub)) for name, wire_name, sub in _spec(cls))
        kwargs = {}
        for name, wire_name, sub, plain in fields:
            if wire_name in raw:
                value = raw[wire_name]
                # a value already of its field's plain type is what its decoder would return: skip the call
                kwargs[name] = value if plain is object or type(value) is plain else sub(value)
        return cls(**kwargs)

    return decode


def _key_from(key_t: Any, key: Any) -> Any:
    if dataclasses.is_dataclass(key_t):
        return from_obj(key_t, fastjson.loads(key) if isinstance(key, str) else key)
    if key_t is int:
        return int(key)
    return key
