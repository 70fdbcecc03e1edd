"""Shared for ACL 1.0 tests: a PlainPermissionManager read from a plain_acl.yml holding the test's YAML."""

from __future__ import annotations

from pathlib import Path

from mqtools.server.broker.acl.manager import PlainPermissionManager


def plain_acl_manager(directory: Path, yml: str) -> PlainPermissionManager:
    """`yml` written to `directory`/plain_acl.yml and loaded, the manager's clock stopped."""
    path = directory / "plain_acl.yml"
    path.write_text(yml)
    manager = PlainPermissionManager(path, clock=lambda: 1_700_000_000.0)
    manager.load()
    return manager
