"""JSON metadata files under ``config/`` (topics.json, consumerOffset.json, subscriptionGroup.json,
delayOffset.json) in RocketMQ's shapes.

fastjson writes integer map keys unquoted (``{0:12}``), which ``json.loads`` rejects; ``loads``
quotes them first (string literals are left untouched). ``dumps`` writes standard JSON, which
fastjson reads as well. Persisting is atomic: write ``<name>.tmp`` and fsync, keep the previous
version as ``<name>.bak``, rename; loading falls back to the ``.bak`` when the file is missing,
empty or unparseable.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from mqtools.common import atomic_file

log = logging.getLogger(__name__)

_TOKENS = re.compile(r'("(?:[^"\\]|\\.)*")|([{,]\s*)(-?\d+)(\s*:)')


def _quote_numeric_keys(text: str) -> str:
    def fix(m: re.Match) -> str:
        if m.group(1) is not None:
            return m.group(1)
        return f'{m.group(2)}"{m.group(3)}"{m.group(4)}'

    return _TOKENS.sub(fix, text)


def loads(text: str | bytes) -> Any:
    """Parse fastjson output (unquoted integer keys allowed)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return json.loads(_quote_numeric_keys(text))


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent="\t", ensure_ascii=False)


def persist(path: Path, obj: Any) -> None:
    atomic_file.write_atomic(Path(path), dumps(obj).encode("utf-8"))


def load(path: Path) -> Any | None:
    """The parsed file, else its .bak, else None."""
    path = Path(path)
    for candidate in (path, path.with_name(path.name + ".bak")):
        try:
            text = candidate.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        if not text.strip():
            continue
        try:
            return loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            log.warning("cannot parse %s (%s); trying the backup", candidate, exc)
    return None


def load_consumer_offsets(path: Path) -> dict[str, dict[int, int]]:
    data = load(path) or {}
    return {k: {int(q): int(o) for q, o in v.items()} for k, v in data.get("offsetTable", {}).items()}


def persist_consumer_offsets(path: Path, table: dict[str, dict[int, int]]) -> None:
    persist(path, {"offsetTable": {k: {str(q): o for q, o in v.items()} for k, v in table.items()}})


def load_delay_offsets(path: Path) -> dict[int, int]:
    data = load(path) or {}
    return {int(k): int(v) for k, v in data.get("offsetTable", {}).items()}


def persist_delay_offsets(path: Path, table: dict[int, int]) -> None:
    persist(path, {"offsetTable": {str(k): v for k, v in sorted(table.items())}})
