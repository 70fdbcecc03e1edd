"""JSON as RocketMQ's Java side writes it (fastjson), read and written from Python.

fastjson writes maps with numeric keys unquoted (`{0:"addr"}`) and maps keyed by objects
with the object itself as the key (`{{"topic":"T","queueId":0}:12}`). `loads` accepts
both (object keys come back as `ObjectKey`); standard JSON takes the orjson fast path.
`dumps` writes standard JSON, except that `ObjectKey` keys are written fastjson's way,
which is what Java peers expect for bodies such as ConsumeStats.
"""

from __future__ import annotations

from typing import Any

import orjson


class ObjectKey(dict):
    """A JSON object used as a map key (hashable, compared by content)."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted((k, str(v)) for k, v in self.items())))


def loads(data: bytes | bytearray | memoryview | str, *, lenient_max: int | None = None) -> Any:
    """Standard JSON at orjson's speed; anything else through the fastjson-tolerant parser, which is
    pure Python (about a second per megabyte): `lenient_max` caps the size it is tried on."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        if lenient_max is not None and len(data) > lenient_max:
            raise ValueError(f"not standard JSON, and {len(data)} bytes is over the {lenient_max} byte limit "
                             "of the fastjson fallback") from None
        text = bytes(data).decode() if not isinstance(data, str) else data
        return _LenientParser(text).parse()


def dumps(obj: Any) -> bytes:
    if not _has_object_keys(obj):
        return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)
    return _write(obj).encode()


def _has_object_keys(obj: Any) -> bool:
    if isinstance(obj, dict):
        return any(isinstance(k, ObjectKey) or _has_object_keys(v) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return any(_has_object_keys(v) for v in obj)
    return False


def _write(obj: Any) -> str:
    if isinstance(obj, dict):
        parts = []
        for key, value in obj.items():
            head = _write(dict(key)) if isinstance(key, ObjectKey) else orjson.dumps(str(key)).decode()
            parts.append(f"{head}:{_write(value)}")
        return "{" + ",".join(parts) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(_write(v) for v in obj) + "]"
    return orjson.dumps(obj).decode()


class _LenientParser:
    """Recursive-descent JSON parser that also takes unquoted numeric keys and object keys."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    def parse(self) -> Any:
        value = self._value()
        self._ws()
        if self.i != len(self.s):
            raise ValueError(f"trailing data at {self.i}")
        return value

    def _ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def _peek(self) -> str:
        self._ws()
        if self.i >= len(self.s):
            raise ValueError("unexpected end of JSON")
        return self.s[self.i]

    def _expect(self, ch: str) -> None:
        if self._peek() != ch:
            raise ValueError(f"expected {ch!r} at {self.i}")
        self.i += 1

    def _value(self) -> Any:
        ch = self._peek()
        if ch == "{":
            return self._object()
        if ch == "[":
            return self._array()
        return self._scalar()

    def _scalar(self) -> Any:
        if self.s[self.i] == '"':
            end = self._string_end(self.i)
            value = orjson.loads(self.s[self.i : end])
            self.i = end
            return value
        start = self.i
        while self.i < len(self.s) and self.s[self.i] not in ",:}] \t\r\n":
            self.i += 1
        return orjson.loads(self.s[start : self.i])

    def _string_end(self, start: int) -> int:
        i = start + 1
        while i < len(self.s):
            if self.s[i] == "\\":
                i += 2
                continue
            if self.s[i] == '"':
                return i + 1
            i += 1
        raise ValueError("unterminated string")

    def _object(self) -> dict:
        self._expect("{")
        out: dict = {}
        if self._peek() == "}":
            self.i += 1
            return out
        while True:
            key = self._value()
            if isinstance(key, dict):
                key = ObjectKey(key)
            elif not isinstance(key, str):
                key = str(key)
            self._expect(":")
            out[key] = self._value()
            if self._peek() == ",":
                self.i += 1
                continue
            self._expect("}")
            return out

    def _array(self) -> list:
        self._expect("[")
        out: list = []
        if self._peek() == "]":
            self.i += 1
            return out
        while True:
            out.append(self._value())
            if self._peek() == ",":
                self.i += 1
                continue
            self._expect("]")
            return out
