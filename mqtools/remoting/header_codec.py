"""How a header dataclass reads and writes extFields: its fields' wire names and kinds, and the from_ext and
to_ext written out as Python source once per class (headers.Header calls them)."""

from __future__ import annotations

import dataclasses
import functools
import typing
from typing import Any

from mqtools.common.javanum import LONG_RANGE
from mqtools.remoting.errors import HeaderError


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@functools.cache
def fields_of(cls: type) -> tuple[tuple[str, str, type, bool], ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        base = _base_type(hints[f.name])
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append((f.name, f.metadata.get("wire", camel(f.name)), base, required))
    return tuple(out)


def _base_type(hint: Any) -> type:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if args else hint


# Header numbers are Java ints and longs; anything outside a long is refused at decoding, and
# processors check the int fields that must fit 32 bits (the stored message layout, for one).
#: How much of a bad value an error message quotes (values can be megabytes long).
_QUOTE = 64
_LONG_MIN, _LONG_MAX = LONG_RANGE.start, LONG_RANGE.stop - 1


def _null(wire_name: str) -> HeaderError:
    return HeaderError(f"the custom field <{wire_name}> is null")


def _not_a_number(value: str, wire_name: str) -> HeaderError:
    return HeaderError(f"the custom field <{wire_name}> is not a number: {value[:_QUOTE]!r}")


def _out_of_range(value: str, wire_name: str) -> HeaderError:
    return HeaderError(f"the custom field <{wire_name}> is out of range: {value[:_QUOTE]!r}")


def _render(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# A header class's from_ext and to_ext are written out as Python source once per class, a statement per field,
# as dataclasses writes __init__: a pull's header read by the loop over its fields cost 7.8 us, written out 2.


def _decoder_source(cls: type) -> tuple[str, dict[str, Any]]:
    env: dict[str, Any] = {"cls": cls, "_null": _null, "_LO": _LONG_MIN,
                           "_HI": _LONG_MAX, "_not_a_number": _not_a_number, "_out_of_range": _out_of_range}
    lines = ["def from_ext(ext):", "    get = ext.get", "    kw = {}"]
    for i, (name, wire_name, kind, required) in enumerate(fields_of(cls)):
        if kind not in (str, bool, int):
            raise TypeError(kind)
        env[f"w{i}"] = wire_name
        lines.append(f"    v = get(w{i})")
        if required:
            lines.append(f"    if v is None: raise _null(w{i})")
            pad = "    "
        else:
            lines.append("    if v is not None:")
            pad = "        "
        if kind is bool:
            lines.append(f"{pad}v = v.strip().lower() == 'true'")
        elif kind is int:
            lines += [f"{pad}try: n = int(v)",
                      f"{pad}except ValueError: raise _not_a_number(v, w{i}) from None",
                      f"{pad}if n < _LO or n > _HI: raise _out_of_range(v, w{i})",
                      f"{pad}v = n"]
        lines.append(f"{pad}kw[{name!r}] = v")
    lines.append("    return cls(**kw)")
    return "\n".join(lines), env


def _encoder_source(cls: type) -> tuple[str, dict[str, Any]]:
    env: dict[str, Any] = {"_render": _render}
    lines = ["def to_ext(self):", "    ext = {}"]
    for name, wire_name, kind, _required in fields_of(cls):
        lines += [f"    v = self.{name}", "    if v is not None:"]
        if kind is bool:
            lines.append(f"        ext[{wire_name!r}] = _render(v)")
        else:  # a str or an int field holding what its annotation says; anything else as _render has it
            exact = "str" if kind is str else "int"
            value = "v" if kind is str else "str(v)"
            lines.append(f"        ext[{wire_name!r}] = {value} if type(v) is {exact} else _render(v)")
    lines.append("    return ext")
    return "\n".join(lines), env


def _compile(source: str, env: dict[str, Any], name: str) -> Any:
    exec(compile(source, f"<header {name}>", "exec"), env)  # noqa: S102 - our own source, from the class's fields
    return env[name]


@functools.cache
def decoder(cls: type) -> Any:
    return _compile(*_decoder_source(cls), "from_ext")


@functools.cache
def encoder(cls: type) -> Any:
    return _compile(*_encoder_source(cls), "to_ext")
