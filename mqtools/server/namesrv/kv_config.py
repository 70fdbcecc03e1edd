"""The name server's namespaced key/value configuration (RocketMQ's KVConfigManager), persisted to
kvConfig.json.

The file has RocketMQ's layout, `{"configTable": {namespace: {key: value}}}`, so a
kvConfig.json written by a Java name server loads here and the other way round.
Changes apply in memory at once; `snapshot()` gives the bytes the app writes (atomically,
off the event loop).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from mqtools.remoting import fastjson
from mqtools.remoting.bodies import KVTable


class KVConfigError(Exception):
    """kvConfig.json exists but cannot be read as a KV config table."""


class KVConfigManager:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.table: dict[str, dict[str, str]] = {}
        #: Bumped on every change, so cached answers that embed KV values can be invalidated.
        self.epoch = 0

    def load(self) -> None:
        """Read the file if it exists; a missing file is an empty table, a corrupt one an error."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise KVConfigError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        if not data.strip():
            return
        try:
            raw = fastjson.loads(data)
        except ValueError as exc:
            raise KVConfigError(f"{self.path} is not valid JSON: {exc}") from None
        table = raw.get("configTable") if isinstance(raw, dict) else None
        if table is None:
            return
        if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
            raise KVConfigError(f"{self.path}: configTable is not a map of maps")
        self.table = {str(ns): {str(k): str(v) for k, v in kv.items()} for ns, kv in table.items()}
        self.epoch += 1

    def put(self, namespace: str, key: str, value: str) -> None:
        self.table.setdefault(namespace, {})[key] = value
        self.epoch += 1

    def get(self, namespace: str, key: str) -> str | None:
        kv = self.table.get(namespace)
        return None if kv is None else kv.get(key)

    def delete(self, namespace: str, key: str) -> None:
        kv = self.table.get(namespace)
        if kv is not None and kv.pop(key, None) is not None:
            self.epoch += 1

    def list_namespace(self, namespace: str) -> bytes | None:
        """KVTable JSON of a namespace, or None when the namespace was never created."""
        kv = self.table.get(namespace)
        return None if kv is None else KVTable(table=dict(kv)).to_json()

    def snapshot(self) -> bytes:
        return orjson.dumps({"configTable": self.table}, option=orjson.OPT_INDENT_2)
