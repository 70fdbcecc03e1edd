"""The mqadmin dialect: classic mqadmin commands by name, case-insensitively, with mqadmin's options."""

from __future__ import annotations

from typing import Any

COMMANDS: dict[str, Any] = {}
"""lower-case mqadmin name -> its command."""


def find(name: str) -> Any:
    return COMMANDS.get(name.lower())
