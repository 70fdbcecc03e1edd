"""RocketMQ property keys for config dataclasses: snake_case fields, camelCase keys, typed values.

A config dataclass (the broker's BrokerConfig, the name server's NamesrvConfig) holds its
settings as int, bool or str fields named in snake_case; a RocketMQ `.properties` file names
them in camelCase (`listenPort`, with per-class exceptions such as `brokerIP1`). These helpers
derive the key table from the fields, parse strings into typed values with one-line errors,
and write values back the way RocketMQ shows them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

_KINDS: dict[str, type] = {"int": int, "bool": bool, "str": str}


class ConfigError(ValueError):
    """A config file or value that cannot be used; the message is one line for the user."""


def camel(name: str, overrides: Mapping[str, str] | None = None) -> str:
    """`listen_port` -> `listenPort`; `overrides` names the fields whose key is spelled otherwise."""
    if overrides and name in overrides:
        return overrides[name]
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def property_keys(cls: type, overrides: Mapping[str, str] | None = None,
                  skip: tuple[str, ...] = ("extra",)) -> dict[str, tuple[str, type]]:
    """RocketMQ key -> (field name, int/bool/str) for each field of the dataclass `cls` but `skip`."""
    out: dict[str, tuple[str, type]] = {}
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        kind = _KINDS[f.type if isinstance(f.type, str) else f.type.__name__]
        out[camel(f.name, overrides)] = (f.name, kind)
    return out


def parse_value(key: str, raw: str, kind: type) -> Any:
    """`raw` as `kind` (bool: true/false, any case); ConfigError naming `key` when it is not one."""
    if kind is bool:
        if raw.lower() not in ("true", "false"):
            raise ConfigError(f"{key} must be true or false, not {raw!r}")
        return raw.lower() == "true"
    if kind is int:
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{key} must be an integer, not {raw!r}") from None
    return raw


def parse_known(props: Mapping[str, str], keys: Mapping[str, tuple[str, type]]) -> dict[str, Any]:
    """Field name -> typed value for the keys of `props` that `keys` knows (values stripped first)."""
    staged: dict[str, Any] = {}
    for key, raw in props.items():
        spec = keys.get(key)
        if spec is not None:
            staged[spec[0]] = parse_value(key, raw.strip(), spec[1])
    return staged


def format_value(value: object) -> str:
    """A value as a properties file shows it: booleans as true/false, the rest as str()."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def to_properties(config: object, keys: Mapping[str, tuple[str, type]],
                  extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """`extra`, then every field of `config` in `keys` under its RocketMQ key, as strings."""
    out = dict(extra or {})
    for key, (name, _kind) in keys.items():
        out[key] = format_value(getattr(config, name))
    return out
