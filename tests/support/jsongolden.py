"""The shape of every `-o json` document, as tests/integration/cli/test_json_golden.py holds it.

A shape is the document with every value replaced by its JSON type, keys in the order printed, and each
list reduced to the distinct shapes of its items: what a refactor of the CLI must keep, while offsets,
times and ports may differ from run to run. The test rewrites the goldens (MQ_JSON_GOLDEN=write) on the
cluster it starts: on purpose only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).parent.parent / "integration" / "cli" / "json_golden.json"

ADDR = re.compile(r"^[0-9.]+:[0-9]+$")
TOPIC = "GoldenTopic"
GROUP = "GoldenGroup"

#: name -> the `mq` arguments (with {ns}, {addr}, {cluster}, {msg}, {uniq} filled in), -o json added.
COMMANDS: dict[str, list[str]] = {
    "cluster list": ["admin", "cluster", "list", "-n", "{ns}"],
    "cluster rt": ["admin", "cluster", "rt", "-n", "{ns}", "--amount", "2"],
    "broker status": ["admin", "broker", "status", "{addr}", "-n", "{ns}"],
    "broker config get": ["admin", "broker", "config", "get", "{addr}", "-n", "{ns}"],
    "broker consume-stats": ["admin", "broker", "consume-stats", "{addr}", "-n", "{ns}"],
    "broker stats": ["admin", "broker", "stats", "-t", TOPIC, "-n", "{ns}"],
    "topic list": ["admin", "topic", "list", "-n", "{ns}"],
    "topic route": ["admin", "topic", "route", TOPIC, "-n", "{ns}"],
    "topic status": ["admin", "topic", "status", TOPIC, "-n", "{ns}"],
    "topic clusters": ["admin", "topic", "clusters", TOPIC, "-n", "{ns}"],
    "topic update": ["admin", "topic", "update", TOPIC, "-c", "{cluster}", "-r", "4", "-w", "4", "-n", "{ns}"],
    "group list": ["admin", "group", "list", "-n", "{ns}"],
    "group create": ["admin", "group", "create", "GoldenGroup2", "-c", "{cluster}", "-n", "{ns}"],
    "group update": ["admin", "group", "update", "GoldenGroup2", "-c", "{cluster}", "--retry-max-times", "3",
                     "-n", "{ns}"],
    "group progress": ["admin", "group", "progress", GROUP, "-n", "{ns}"],
    "group status": ["admin", "group", "status", GROUP, "-n", "{ns}"],
    "group connections": ["admin", "group", "connections", GROUP, "-n", "{ns}"],
    "group consume-mode": ["admin", "group", "consume-mode", GROUP, "-t", TOPIC, "--set", "POP", "-c", "{cluster}",
                           "-n", "{ns}"],
    "producer connections": ["admin", "producer", "connections", "GoldenProducers", TOPIC, "-n", "{ns}"],
    "msg get": ["admin", "msg", "get", "{msg}", "-n", "{ns}"],
    "msg unique": ["admin", "msg", "unique", TOPIC, "{uniq}", "-n", "{ns}"],
    "msg key": ["admin", "msg", "key", TOPIC, "golden-key", "-n", "{ns}"],
    "msg at": ["admin", "msg", "at", TOPIC, "broker-a", "0", "0", "-n", "{ns}"],
    "msg print": ["admin", "msg", "print", TOPIC, "-n", "{ns}"],
    "msg consume": ["admin", "msg", "consume", TOPIC, "-n", "{ns}"],
    "offset reset": ["admin", "offset", "reset", GROUP, TOPIC, "--earliest", "--yes", "-n", "{ns}"],
    "offset skip": ["admin", "offset", "skip", GROUP, TOPIC, "--dry-run", "-n", "{ns}"],
    "offset clone": ["admin", "offset", "clone", GROUP, "GoldenGroup2", TOPIC, "--dry-run", "-n", "{ns}"],
    "dlq list": ["admin", "dlq", "list", GROUP, "-n", "{ns}"],
    "ha status": ["admin", "ha", "status", "-c", "{cluster}", "-n", "{ns}"],
    "timer status": ["admin", "timer", "status", "-n", "{ns}"],
    "namesrv config get": ["admin", "namesrv", "config", "get", "-n", "{ns}"],
    "kv get": ["admin", "kv", "get", "GOLDEN", "k1", "-n", "{ns}"],
    "kv list": ["admin", "kv", "list", "GOLDEN", "-n", "{ns}"],
    "drill list": ["admin", "drill", "list"],
    "top --once": ["top", "--once", "-n", "{ns}"],
}


def shape(value: Any) -> Any:
    """Types in place of values, `<addr>` in place of keys that are host:port (ports differ by run); a
    list becomes the sorted distinct shapes of its items."""
    if isinstance(value, dict):
        return {"<addr>" if ADDR.match(k) else k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        seen = {json.dumps(shape(v), sort_keys=False): shape(v) for v in value}
        return [seen[k] for k in sorted(seen)]
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "str"


def load() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


def write(shapes: dict[str, Any]) -> None:
    GOLDEN.write_text(json.dumps(shapes, indent=1) + "\n", encoding="utf-8")
