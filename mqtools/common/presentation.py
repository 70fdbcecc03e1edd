"""What every view of mq shares, whoever renders it (the CLI's tables and JSON, mq top and its export).

A value that is not known is None in a row and reads `NA`; a `Column` is a header, its alignment and,
where rows become JSON generically (mq top), the key it has there. Every JSON document carries `kind`
and `schemaVersion`; the JSON Schemas ship beside this module (`schemas/<kind>.json`) and are the one
place a schema version is written.

Documents are owned by the models: a renderer, registered for its kind with `@renders(kind)` beside the
model it renders (mqtools.client.admin.models, mqtools.live, the drills), turns a model into a `View`:
columns, rows and footer for people, the JSON body for scripts. `mq admin`, `mq top`, the exporter and
`mq mcp` call the same renderer, so a field is added in one place; `renderer(kind)` finds it.

A read that could not reach every part of the cluster says so, here and only here: a View carries the
`Unreachable` parts its model named, every document gets `partial` and `unreachable`, and tables end with
a note naming them (mqtools.cli.output), so no view prints a total that silently leaves a broker out.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, TypeVar

NA = "n/a"


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    right: bool = False
    """Numbers are right-aligned."""
    key: str | None = None
    """The row's key in JSON documents, where rows are turned into JSON generically."""


@dataclass(frozen=True, slots=True)
class Unreachable:
    """A part of the cluster a read could not reach, and why (`no master registered`, `timed out`,
    `connection refused`, `not registered`, ...)."""

    broker_name: str | None
    addr: str | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "addr": self.addr, "reason": self.reason}

    def __str__(self) -> str:
        where = " ".join(p for p in (self.broker_name, self.addr) if p)
        return f"{where or 'name servers'}: {self.reason}"


def sets_missed(reads: Iterable[Iterable[Unreachable]]) -> list[Unreachable]:
    """What several reads (one a group, a topic, ...) could not reach, each broker set (or, unnamed, address)
    once with the first reason given for it, in name order: the gaps of a document that joins them."""
    first: dict[str, Unreachable] = {}
    for missed in reads:
        for u in missed:
            first.setdefault(u.broker_name or u.addr or "", u)
    return [first[k] for k in sorted(first)]


@dataclass(slots=True)
class View:
    """What a read shows: a table for people and the JSON document for scripts."""

    kind: str
    columns: list[Column]
    rows: list[list[Any]]
    data: dict[str, Any]
    """The JSON body (without kind/schemaVersion); values None where unknown."""
    title: str | None = None
    footer: list[str] = field(default_factory=list)
    unreachable: list[Unreachable] = field(default_factory=list)
    """What the read could not reach: the view is partial when this is not empty."""

    @property
    def partial(self) -> bool:
        return bool(self.unreachable)

    def document(self) -> dict[str, Any]:
        """The JSON document: kind and schema version, whether it is partial and what was missed, the body."""
        return document(self.kind, self.data, self.unreachable)

    def notes(self) -> list[str]:
        """The line a table ends with when the view is partial."""
        return partial_note(self.unreachable)


def partial_note(missed: list[Unreachable], consequence: str = "") -> list[str]:
    """The line that says a read is partial and what it could not reach, with what that leaves out, if given:
    every table and live view words it the same way."""
    if not missed:
        return []
    return ["partial: could not read " + "; ".join(str(u) for u in missed) + (f" ({consequence})" if consequence else "")]


def cell(value: Any) -> str:
    """How one value reads in a table or CSV: None is NA, booleans yes/no, floats with two decimals."""
    if value is None:
        return NA
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def when(ms: int | None) -> str | None:
    """Local time with milliseconds; None for RocketMQ's 0 ('never')."""
    if not ms:
        return None
    from datetime import datetime

    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


class ReadSource(enum.StrEnum):
    """Which node of a broker set a figure was read from: its master, or a slave while no master answered
    (documents carry it as "source")."""

    MASTER = "master"
    SLAVE = "slave"


def slave_marked(broker_name: str, source: str) -> str:
    """A table's broker cell: a figure read from a slave carries `*` (the footer says what it means)."""
    return f"{broker_name}*" if source == ReadSource.SLAVE else broker_name


def from_slaves_note(names: list[str]) -> list[str]:
    return [f"* read from a slave (no master answering): {', '.join(names)}"] if names else []


R = TypeVar("R", bound=Callable[..., View])
_RENDERERS: dict[str, Callable[..., View]] = {}


def renders(kind: str) -> Callable[[R], R]:
    """Register `fn(model, ...) -> View` as the renderer of document `kind` (one per kind)."""

    def register(fn: R) -> R:
        if kind in _RENDERERS and _RENDERERS[kind] is not fn:
            raise ValueError(f"two renderers for document kind {kind}")
        _RENDERERS[kind] = fn
        return fn

    return register


def renderer(kind: str) -> Callable[..., View]:
    """The registered renderer of `kind`; KeyError when none is (its module not imported, or none exists)."""
    return _RENDERERS[kind]


def rendered_kinds() -> list[str]:
    return sorted(_RENDERERS)


def load_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of a document kind; KeyError for an unknown kind."""
    try:
        text = resources.files("mqtools.common").joinpath("schemas", f"{kind}.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KeyError(kind) from None
    return json.loads(text)


def schema_version(kind: str) -> int:
    return int(load_schema(kind)["properties"]["schemaVersion"]["const"])


def schema_kinds() -> list[str]:
    folder = resources.files("mqtools.common").joinpath("schemas")
    return sorted(e.name.removesuffix(".json") for e in folder.iterdir() if e.name.endswith(".json"))


def document(kind: str, body: dict[str, Any], unreachable: list[Unreachable] | tuple[()] = ()) -> dict[str, Any]:
    """A JSON document: its kind and schema version, whether it is partial and what could not be read,
    then its body."""
    return {"kind": kind, "schemaVersion": schema_version(kind), "partial": bool(unreachable),
            "unreachable": [u.to_json() for u in unreachable], **body}
