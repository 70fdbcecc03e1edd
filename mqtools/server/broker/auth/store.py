"""Local ACL 2.0 metadata: the users and the ACLs of a broker, on disk and in memory.

Apache's LocalAuthentication/AuthorizationMetadataProvider keep them in two RocksDB stores,
`<authConfigPath>/users` and `<authConfigPath>/acls` (authConfigPath is the store's `config`
directory), keyed by user name and by subject key, each value the fastjson text of the User or
Acl. mq keeps the same keys and the same values in two JSON files beside its other config files,
`config/users.json` and `config/acls.json` (`{key: value}`), rewritten atomically on each change;
reads are served from memory, so a lookup on the request path never touches the disk. The names
differ from Apache's directories so an Apache store directory is never mistaken for ours.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

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

    def _users_bytes(self) -> bytes:
        return _dump({k: u.to_stored() for k, u in self.users.items()})

    def _acls_bytes(self) -> bytes:
        return _dump({k: a.to_stored() for k, a in self.acls.items()})

    def write_now(self) -> None:
        """Write both files on the calling thread (start-up, before the loop serves)."""
        self.users_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.users_path, self._users_bytes())
        write_atomic(self.acls_path, self._acls_bytes())

    async def put_user(self, user: User) -> None:
        self.users[user.username] = user
        await self._flush(self.users_path, self._users_bytes())

    async def delete_user(self, username: str) -> None:
        self.users.pop(username, None)
        await self._flush(self.users_path, self._users_bytes())

    async def put_acl(self, acl: Acl) -> None:
        self.acls[acl.subject] = acl
        await self._flush(self.acls_path, self._acls_bytes())

    async def delete_acl(self, subject_key: str) -> None:
        self.acls.pop(subject_key, None)
        await self._flush(self.acls_path, self._acls_bytes())

    async def _flush(self, path: Path, data: bytes) -> None:
        async with self._writing:
            path.parent.mkdir(parents=True, exist_ok=True)
            await asyncio.to_thread(write_atomic, path, data)
