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
import types
import typing
from collections.abc import Callable
from typing import Any

from mqtools.remoting import fastjson
from mqtools.remoting.header_codec import camel


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
        return _decoder(next(a for a in typing.get_args(hint) if a is not type(None)))
    if origin is dict:
        key_t, val_t = typing.get_args(hint)
        value = _decoder(val_t)
        if dataclasses.is_dataclass(key_t) or key_t is int:
            return lambda raw: None if raw is None else {_key_from(key_t, k): value(v) for k, v in raw.items()}
        return lambda raw: None if raw is None else {k: value(v) for k, v in raw.items()}
    if origin in (list, set, frozenset):
        (item_t,) = typing.get_args(hint)
        item = _decoder(item_t)
        return lambda raw: None if raw is None else origin(item(v) for v in raw)
    if dataclasses.is_dataclass(hint):
        return _dataclass_decoder(hint)
    if hint is int:
        return lambda raw: int(raw) if isinstance(raw, str) else raw
    if hint is str:
        return lambda raw: raw if raw is None or isinstance(raw, str) else str(raw)
    return _identity


#: Field types whose decoder returns a value of that exact type unchanged (object: any value, unchanged).
_PASS_THROUGH: dict[Any, type] = {int: int, str: str, bool: object, float: object, Any: object}


def _identity(raw: Any) -> Any:
    return raw


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
