"""RocketMQ `.properties` keys <-> config dataclass fields: one mapper for every server config.

A config dataclass (the broker's BrokerConfig, the name server's NamesrvConfig, the store's
MessageStoreConfig, HA's HAConfig) holds its settings as snake_case fields typed int, bool,
str or a StrEnum; a RocketMQ `.properties` file names them in camelCase (`listenPort`, with
per-class exceptions such as `brokerIP1` and old spellings such as `mapedFileSizeCommitLog`).
`PropertyMap` derives the key table from the fields once, parses strings into typed values
with one-line errors, leaves unknown keys to the caller, and writes values back the way
RocketMQ shows them.
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from mqtools.common.errors import ToolkitError

C = TypeVar("C")
_SCALARS = (int, bool, str)


class ConfigError(ToolkitError, ValueError):
    """A config file or value that cannot be used; the message is one line for the user (a server's start
    refused: exit 1 through the CLI's frame)."""


def camel(name: str, overrides: Mapping[str, str] | None = None) -> str:
    """`listen_port` -> `listenPort`; `overrides` names the fields whose key is spelled otherwise."""
    if overrides and name in overrides:
        return overrides[name]
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def parse_value(key: str, raw: str, kind: type) -> Any:
    """`raw` as `kind` (bool: true/false, enums: a member's value, any case); ConfigError naming `key`."""
    if kind is bool:
        if raw.lower() not in ("true", "false"):
            raise ConfigError(f"{key} must be true or false, not {raw!r}")
        return raw.lower() == "true"
    if kind is int:
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{key} must be an integer, not {raw!r}") from None
    if issubclass(kind, enum.Enum):
        try:
            return kind(raw.upper())
        except ValueError:
            choices = ", ".join(str(m.value) for m in kind)
            raise ConfigError(f"{key} must be one of {choices}, not {raw!r}") from None
    return raw


def format_value(value: object) -> str:
    """A value as a properties file shows it: booleans as true/false, the rest (enums too) as str()."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class PropertyMap(Generic[C]):
    """The RocketMQ key table of one config dataclass: parse properties into it, render it back."""

    def __init__(self, cls: type[C], *, overrides: Mapping[str, str] | None = None,
                 aliases: Mapping[str, str] | None = None, skip: tuple[str, ...] = ("extra",)) -> None:
        """`overrides`: field -> key where camelCase is not RocketMQ's spelling; `aliases`: old key ->
        current key, still read but never written; `skip`: fields that are not properties."""
        self.cls = cls
        hints = typing.get_type_hints(cls)
        #: RocketMQ key -> (field name, type); the order of the dataclass fields.
        self.fields: dict[str, tuple[str, type]] = {}
        #: Field name -> RocketMQ key.
        self.keys: dict[str, str] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name in skip:
                continue
            kind = hints[f.name]
            if kind not in _SCALARS and not (isinstance(kind, type) and issubclass(kind, enum.Enum)):
                raise TypeError(f"{cls.__name__}.{f.name}: {kind} is not a property type")
            key = camel(f.name, overrides)
            self.fields[key] = (f.name, kind)
            self.keys[f.name] = key
        self.aliases = dict(aliases or {})

    def known(self, key: str) -> bool:
        return key in self.fields or key in self.aliases

    def parse(self, props: Mapping[str, str]) -> dict[str, Any]:
        """Field name -> typed value for the keys of `props` this map knows (keys and values stripped);
        ConfigError on the first bad value; unknown keys are ignored."""
        out: dict[str, Any] = {}
        for key, raw in props.items():
            key = key.strip()
            spec = self.fields.get(self.aliases.get(key, key))
            if spec is not None:
                out[spec[0]] = parse_value(key, str(raw).strip(), spec[1])
        return out

    def unknown(self, props: Mapping[str, str]) -> dict[str, str]:
        """The entries of `props` this map does not know, as given."""
        return {key: raw for key, raw in props.items() if not self.known(key.strip())}

    def build(self, props: Mapping[str, str]) -> C:
        """A config from defaults plus the known keys of `props`."""
        return self.cls(**self.parse(props))

    def to_properties(self, config: C, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """`extra`, then every field of `config` under its RocketMQ key, as strings."""
        out = dict(extra or {})
        for key, (name, _kind) in self.fields.items():
            out[key] = format_value(getattr(config, name))
        return out
