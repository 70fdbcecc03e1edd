"""Local ACL 2.0 metadata: the users and the ACLs of a broker, on disk and in memory.

Apache's LocalAuthentication/AuthorizationMetadataProvider keep them in two RocksDB stores,
`<authConfigPath>/users` and `<authConfigPath>/acls` (authConfigPath is the store's `config`
directory), keyed by user name and by subject key, each value the fastjson text of the User or
Acl. mq keeps the same keys and the same values in two JSON files beside its other config files,
`config/users.json` and `config/acls.json` (`{key: value}`), rewritten atomically on each change; a
change is put in force only once its file is written (a full disk refuses it whole). Reads are served
from memory, so a lookup on the request path never touches the disk. The names differ from Apache's
directories so an Apache store directory is never mistaken for ours.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mqtools.common.atomic_file import write_atomic
from mqtools.common.auth.model import Acl, User

log = logging.getLogger(__name__)

USERS_FILE = "users.json"
ACLS_FILE = "acls.json"


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    raw = json.loads(path.read_text(encoding="utf-8") or "{}")
    if not isinstance(raw, dict):
        raise ValueError(f"{path} is not a JSON object")  # noqa: TRY004 - a bad file, reported as one
    return raw


def _dump(items: dict[str, Any]) -> bytes:
    return json.dumps(items, indent=2, sort_keys=True, ensure_ascii=False).encode()


T = TypeVar("T", User, Acl)


def _write(path: Path, table: dict[str, User] | dict[str, Acl]) -> None:
    """Render and write a table off the loop (its values are never changed in place, only replaced)."""
    write_atomic(path, _dump({k: v.to_stored() for k, v in table.items()}))


class MetadataWriteError(Exception):
    """A change the disk refused (full, read-only, an I/O error): nothing was changed; the text says so."""


class AuthMetadataStore:
    """Users by name and ACLs by subject key; `load()` once, then every change is written through."""

    def __init__(self, config_dir: Path) -> None:
        self.users_path = config_dir / USERS_FILE
        self.acls_path = config_dir / ACLS_FILE
        self.users: dict[str, User] = {}
        self.acls: dict[str, Acl] = {}
        self._writing = asyncio.Lock()

    def load(self) -> None:
        """Read both files (ValueError or OSError when one is unreadable); a missing file is empty."""
        self.users = {k: User.from_stored(v) for k, v in _load(self.users_path).items()}
        self.acls = {k: Acl.from_stored(k, v) for k, v in _load(self.acls_path).items()}
        log.info("ACL 2.0 metadata loaded: %d users, %d ACLs", len(self.users), len(self.acls))

    def user(self, username: str) -> User | None:
        return self.users.get(username)

    def acl(self, subject_key: str) -> Acl | None:
        return self.acls.get(subject_key)

    def write_now(self) -> None:
        """Write both files on the calling thread (start-up, before the loop serves)."""
        _write(self.users_path, self.users)
        _write(self.acls_path, self.acls)

    async def change_user(self, username: str, change: Callable[[User | None], User | None]) -> None:
        """`change` gets a copy of the user (None: there is none) and returns the new one (None: delete it)."""
        async with self._writing:
            old = self.users.get(username)
            new = change(dataclasses.replace(old) if old is not None else None)
            self.users = await self._commit(self.users_path, self.users, username, new)

    async def change_acl(self, subject_key: str, change: Callable[[Acl | None], Acl | None]) -> None:
        """`change` gets a copy of the subject's ACL (None: there is none) and returns the new one (None: delete
        it)."""
        async with self._writing:
            old = self.acls.get(subject_key)
            new = change(old.copy() if old is not None else None)
            self.acls = await self._commit(self.acls_path, self.acls, subject_key, new)

    @staticmethod
    async def _commit(path: Path, table: dict[str, T], key: str, value: T | None) -> dict[str, T]:
        """A copy of `table` with `key` set to `value` (None: removed), written to `path`; the caller puts it in
        force only after the write, so a failed one (a full disk) changes nothing: answered as failed, the change
        is not half made (retried, it is made; after a restart, the file agrees)."""
        if value is None and key not in table:
            return table
        new = dict(table)
        if value is None:
            new.pop(key, None)
        else:
            new[key] = value
        try:
            await asyncio.to_thread(_write, path, new)
        except OSError as exc:
            raise MetadataWriteError(f"The change was not saved and is not in force: {exc.strerror or exc}") \
                from exc
        return new
