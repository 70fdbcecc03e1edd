"""How Java prints values, for output that must read as Apache's Java tools print it (mqadmin): String.format
with null, fixed-width columns, the toString of maps and lists, HashMap iteration order, fastjson's pretty
JSON, RocketMQ's time strings and Boolean.parseBoolean."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from mqtools.common.hashing import java_hash


def java_format(pattern: str, *values: Any) -> str:
    """Java's String.format for the patterns mqadmin uses: None prints as Java's null."""
    return pattern % tuple("null" if v is None else v for v in values)


def front(text: str | None, width: int) -> str:
    """mqadmin's UtilAll.frontStringAtLeast: a long name cut to the column width."""
    value = "null" if text is None else text
    return value[:width]


def java_null(value: object) -> str:
    """A Java value in string concatenation: null when absent."""
    return "null" if value is None else str(value)


def java_bool(text: str | None) -> bool:
    """Boolean.parseBoolean: "true" in any case is true, anything else false."""
    return text is not None and text.strip().lower() == "true"


def java_list(items: tuple[str, ...] | list[str] | None) -> str:
    """Java's List.toString, or null."""
    return "null" if items is None else "[" + ", ".join(items) + "]"


def java_map(values: dict[Any, Any]) -> str:
    """AbstractMap.toString of a map that keeps its order (TreeMap, LinkedHashMap): {k=v, k=v}."""
    return "{" + ", ".join(f"{k}={v}" for k, v in values.items()) + "}"


def java_hash_order(keys: list[str], buckets: int) -> list[str]:
    """How a HashMap<String, ...> of `buckets` buckets (a power of two) iterates: by (h ^ h >>> 16) & (buckets
    - 1), then in insertion order within a bucket (no treeified bins at these sizes)."""
    def bucket(key: str) -> int:
        h = java_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (buckets - 1)

    position = {k: i for i, k in enumerate(keys)}
    return sorted(keys, key=lambda k: (bucket(k), position[k]))


def java_hash_map(props: dict[str, str], buckets: int = 128) -> str:
    """HashMap.toString of the map RocketMQ decodes properties into (capacity 128)."""
    return "{" + ", ".join(f"{k}={props[k]}" for k in java_hash_order(list(props), buckets)) + "}"


def java_time(ms: int, millis: bool = True) -> str:
    """UtilAll.timeMillisToHumanString2 (`yyyy-MM-dd HH:mm:ss,SSS`) or yyyy-MM-dd HH:mm:ss, local time."""
    text = datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S,%f")
    return text[:-3] if millis else text[:19]


def fastjson_pretty(value: Any, level: int = 0) -> str:
    """RemotingSerializable.toJson(true) as mqadmin 5.x prints it: tab indents, one entry a line, number keys
    unquoted, empty containers as {} and []. (4.9's older fastjson kept a map with number keys on one line,
    `{0:"addr",1:"addr"` then the closing brace on its own line.)"""
    pad, inner = "\t" * level, "\t" * (level + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        parts = [f"\n{inner}{json.dumps(k, ensure_ascii=False) if isinstance(k, str) else k}:"
                 f"{fastjson_pretty(v, level + 1)}" for k, v in value.items()]
        return "{" + ",".join(parts) + f"\n{pad}}}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[" + ",".join(f"\n{inner}{fastjson_pretty(v, level + 1)}" for v in value) + f"\n{pad}]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)
