"""What every view of mq shares, whoever renders it (the CLI's tables and JSON, mq top and its export).

A value that is not known is None in a row and reads `NA`; a `Column` is a header, its alignment and,
where rows become JSON generically (mq top), the key it has there. Every JSON document carries `kind`
and `schemaVersion`; the JSON Schemas ship beside this module (`schemas/<kind>.json`) and are the one
place a schema version is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

NA = "n/a"


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    right: bool = False
    """Numbers are right-aligned."""
    key: str | None = None
    """The row's key in JSON documents, where rows are turned into JSON generically."""


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


def document(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """A JSON document: its kind and schema version, then its body."""
    return {"kind": kind, "schemaVersion": schema_version(kind), **body}
