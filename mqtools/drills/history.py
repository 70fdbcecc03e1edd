"""A drill's history: every operation as one JSON line, plus what happened to the cluster.

Operations have the shape OpenChaos and Jepsen checkers read: who (client), what (op `send` or
`receive`), when (invoke and completion, seconds from the load's start on one monotonic clock),
how it ended (`ok`, `fail` for a definite failure, `unknown` when the message may have been stored),
with the RocketMQ response code, the message id and where it was stored (broker, queue, queue offset,
commitlog offset). Events (the fault, the heal, route changes, the slave's offset at the fault,
committed offsets when a master returns) and the drill's settings (the first `meta` line) travel in
the same file, so `mq admin drill check FILE` needs nothing else to reach the same verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import orjson

from mqtools.common.errors import ToolkitError
from mqtools.common.exitcodes import EXIT_USAGE

OK = "ok"
FAIL = "fail"
UNKNOWN = "unknown"
RESULTS = (OK, FAIL, UNKNOWN)
SEND = "send"
RECEIVE = "receive"
#: The status of a transactional send its own producer rolled back on purpose: `fail` (it must never be
#: consumed) but no error of the run.
ROLLED_BACK = "ROLLBACK_MESSAGE"

# JSON names of Op fields that differ from the Python ones.
_OP_JSON = {"msg_id": "msgId", "commitlog_offset": "commitlogOffset", "store_host": "storeHost"}
_OP_PY = {v: k for k, v in _OP_JSON.items()}


class HistoryError(ToolkitError, ValueError):
    """A history file that cannot be read (the message names the line) or written."""

    exit_code = EXIT_USAGE


@dataclass(slots=True)
class Op:
    """One client operation: a send with its outcome, or one delivery of a message to a consumer."""

    client: str
    op: str
    id: str
    """The drill's unique message id (also the message's KEYS), or the broker's id for a foreign message."""
    invoke: float
    complete: float
    result: str
    key: str | None = None
    seq: int | None = None
    """Sequence number within the sharding key (within the whole run without keys)."""
    planned: float | None = None
    """When the constant-rate schedule wanted the send to start; latency is measured from here."""
    code: int | None = None
    """RocketMQ response code of a refusal, or of a stored-but-not-OK status."""
    error: str | None = None
    status: str | None = None
    attempts: int | None = None
    msg_id: str | None = None
    broker: str | None = None
    queue: int | None = None
    offset: int | None = None
    commitlog_offset: int | None = None
    size: int | None = None
    store_host: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "op"}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out[_OP_JSON.get(f.name, f.name)] = value
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Op:
        return cls(**{_OP_PY.get(k, k): v for k, v in raw.items() if k != "type"})


@dataclass(slots=True)
class Event:
    """Something that happened to the cluster or the drill, e.g. `fault`, `heal`, `route-dropped`."""

    time: float
    name: str
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "event", "time": self.time, "name": self.name, "detail": self.detail}
        if self.data:
            out["data"] = self.data
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Event:
        return cls(float(raw["time"]), str(raw["name"]), str(raw.get("detail", "")), dict(raw.get("data") or {}))


@dataclass(slots=True)
class History:
    """Everything a drill recorded, in memory; `write`/`read` keep it as JSON lines."""

    meta: dict[str, Any] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    def event(self, time: float, name: str, detail: str = "", **data: Any) -> Event:
        ev = Event(round(time, 4), name, detail, data)
        self.events.append(ev)
        return ev

    def first_event(self, name: str) -> Event | None:
        return next((e for e in self.events if e.name == name), None)

    def sends(self) -> list[Op]:
        return [o for o in self.ops if o.op == SEND]

    def receives(self) -> list[Op]:
        return [o for o in self.ops if o.op == RECEIVE]

    def lines(self) -> list[bytes]:
        """meta first, then operations and events in time order (what a reader of the file expects)."""
        items: list[tuple[float, int, dict[str, Any]]] = [(o.complete, 1, o.to_json()) for o in self.ops]
        items += [(e.time, 0, e.to_json()) for e in self.events]
        items.sort(key=lambda t: (t[0], t[1]))
        return [orjson.dumps({"type": "meta", **self.meta}), *(orjson.dumps(doc) for _, _, doc in items)]

    def write(self, path: Path) -> None:
        """HistoryError when the file cannot be written."""
        try:
            path.write_bytes(b"\n".join(self.lines()) + b"\n")
        except OSError as exc:
            raise HistoryError(f"cannot write {path}: {exc.strerror or exc}") from None

    @classmethod
    def read(cls, path: Path) -> History:
        try:
            text = path.read_bytes()
        except OSError as exc:
            raise HistoryError(f"cannot read {path}: {exc.strerror or exc}") from None
        return cls.parse(text.splitlines(), str(path))

    @classmethod
    def parse(cls, lines: list[bytes], where: str = "history") -> History:
        history = cls()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                raw = orjson.loads(line)
                kind = raw.get("type") if isinstance(raw, dict) else None
                if kind == "meta":
                    history.meta = {k: v for k, v in raw.items() if k != "type"}
                elif kind == "op":
                    history.ops.append(Op.from_json(raw))
                elif kind == "event":
                    history.events.append(Event.from_json(raw))
                else:
                    raise ValueError("no type meta, op or event")
            except (orjson.JSONDecodeError, ValueError, TypeError, KeyError) as exc:
                raise HistoryError(f"{where} line {number}: not a drill history record ({exc})") from None
        if not history.meta.get("scenario"):
            raise HistoryError(f"{where}: no meta line with the drill's scenario (is it a drill history?)")
        history.events.sort(key=lambda e: e.time)
        return history


def is_error(op: Op) -> bool:
    """A send that went wrong: not acknowledged, and not a transaction its producer rolled back on purpose."""
    return op.result != OK and op.status != ROLLED_BACK
