"""The broker's ACL: plain_acl.yml on disk, reloaded when it changes, and the per-request decision.

Where the file is: the broker property `aclFilePath`, else `$ROCKETMQ_HOME/conf/plain_acl.yml`
as RocketMQ reads it. The file is polled every `aclWatchIntervalMills` (mqtools.common.file_watch: a
change is loaded once two polls in a row see it the same, so a file caught half-written by an editor is not
taken for the rules; a deleted file is not a change, as Apache's watch ignores deletions), off the event loop. An
invalid edit keeps the previous rules. An admin request's write starts from the file as it is on disk (read
again under the write lock, as Apache's updateAccessConfig does), so a hand edit the watch has not loaded yet is
kept, never overwritten; a file that does not parse refuses the request.

The decision follows PlainPermissionManager.validate: a globally white address passes; otherwise
the request needs an AccessKey the file knows; an account's own white address passes; otherwise
the signature must match the account's secret, then the admin flag and the resource permissions
are checked.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Callable, Collection
from pathlib import Path

from mqtools.common.atomic_file import write_atomic
from mqtools.common.file_watch import FileWatch
from mqtools.common.log_limiter import LimitedLog
from mqtools.common.periodic import every
from mqtools.remoting import acl
from mqtools.remoting.bodies import DataVersion, PlainAccessConfig
from mqtools.remoting.command import RemotingCommand
from mqtools.server.broker.acl import addresses
from mqtools.server.broker.acl.plain_acl import AclConfigError, PlainAcl, PlainAclFile, check_account

log = logging.getLogger(__name__)
_failures = LimitedLog(log)

ROCKETMQ_HOME_ENV = "ROCKETMQ_HOME"
#: the account attributes an update leaves as they are when it does not set them (admin is always set)
MERGED = ("secret_key", "white_remote_address", "default_topic_perm", "default_group_perm", "topic_perms",
          "group_perms")


def default_acl_path(configured: str, environ: dict[str, str] | None = None) -> Path:
    if configured:
        return Path(configured)
    home = (environ if environ is not None else os.environ).get(ROCKETMQ_HOME_ENV)
    if not home:
        raise ValueError("aclEnable=true needs aclFilePath or $ROCKETMQ_HOME (for conf/plain_acl.yml)")
    return Path(home) / "conf" / "plain_acl.yml"


class PlainPermissionManager:
    def __init__(self, path: Path, clock: Callable[[], float]) -> None:
        self.path = path
        self.clock = clock
        self.file = PlainAclFile()
        self.rules: PlainAcl = self.file.compile()
        self._watch = FileWatch([path])
        self._task: asyncio.Task | None = None
        self._writing = asyncio.Lock()  # admin requests rewrite the file one at a time (RocketMQ: synchronized)

    # ------------------------------------------------------------------ file

    def load(self) -> None:
        """Read the file now; ValueError (no secret in it) when it is invalid. A missing file is empty."""
        self._watch.adopt()
        self._read()

    def _read(self) -> None:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            text = ""
        parsed = PlainAclFile.parse(text)
        self.file, self.rules = parsed, parsed.compile()
        log.info("ACL rules loaded from %s: %d accounts, %d global white addresses", self.path,
                 len(parsed.accounts), len(parsed.global_white_remote_addresses))

    def reload_if_changed(self) -> bool:
        if not self._watch.poll():
            return False
        try:
            self._read()
        except (OSError, ValueError) as exc:
            log.warning("ACL file %s not reloaded, keeping the previous rules: %s", self.path, exc)
            return False
        finally:
            self._watch.loaded()  # one line per bad edit, not one per poll
        return True

    async def start(self, interval_s: float) -> None:
        self._task = asyncio.create_task(every(interval_s, self._watch_step, "ACL file watch", _failures))

    async def _watch_step(self) -> None:
        """reload_if_changed off the event loop (a stat can hang on a network file system), never beside an admin
        request's write of the file, whose rules a reload of the file read before it would replace."""
        async with self._writing:
            await asyncio.to_thread(self.reload_if_changed)

    async def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _write(self, change: Callable[[PlainAclFile], PlainAclFile | None]) -> bool:
        """Apply `change` to the file as it is on disk now, and write the result (False: `change` made none).
        Reading the file again under the lock keeps a hand edit the watch has not loaded yet, as Apache's
        updateAccessConfig re-reads it; a file that does not parse is refused, never overwritten."""
        async with self._writing:
            current = await asyncio.to_thread(self._on_disk)
            new = change(current)
            if new is None:
                return False
            await self._write_file(new, current.data_version)
            return True

    def _on_disk(self) -> PlainAclFile:
        """The file's content now; the rules in force when it is gone (a deleted file is not a change)."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return self.file
        try:
            return PlainAclFile.parse(text)
        except ValueError as exc:
            raise AclConfigError(f"{self.path} is not a valid ACL file ({exc}); fix it before changing accounts") \
                from None

    async def _write_file(self, new: PlainAclFile, version: DataVersion) -> None:
        new.compile()
        new.data_version = version.next(int(self.clock() * 1000))
        data = new.render().encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(write_atomic, self.path, data)
        self.file, self.rules = new, new.compile()
        self._watch.adopt()

    # ------------------------------------------------------------------ admin requests

    async def update_account(self, config: PlainAccessConfig, given: Collection[str] = ()) -> None:
        """Create an account, or update it: an attribute `config` leaves unset keeps its value, as Apache keeps what
        a request leaves null, unless named in `given` (a list or white address the request sent empty: cleared).
        ValueError on a bad account; the file is rewritten atomically."""
        def change(old: PlainAclFile) -> PlainAclFile:
            account = config
            existing = old.account(config.access_key)
            if existing is not None:
                kept = [name for name in MERGED if not getattr(config, name) and name not in given]
                account = dataclasses.replace(config, **{name: getattr(existing, name) for name in kept})
            check_account(account)
            return PlainAclFile(list(old.global_white_remote_addresses),
                                [a for a in old.accounts if a.access_key != config.access_key] + [account])
        await self._write(change)

    async def delete_account(self, access_key: str) -> bool:
        """False when the file has no such account."""
        return await self._write(lambda old: None if old.account(access_key) is None else PlainAclFile(
            list(old.global_white_remote_addresses), [a for a in old.accounts if a.access_key != access_key]))

    async def update_global_white(self, patterns: list[str]) -> None:
        for pattern in patterns:
            addresses.matcher(pattern)
        await self._write(lambda old: PlainAclFile(list(patterns), list(old.accounts)))

    @property
    def version(self) -> DataVersion:
        return self.file.data_version

    # ------------------------------------------------------------------ decision

    def refusal(self, request: RemotingCommand, peer: str) -> str | None:
        """Why `request` from `peer` is refused, or None when it may proceed."""
        rules = self.rules
        if rules.global_white and rules.globally_white(addresses.host_of(peer)):
            return None
        access_key = request.ext_fields.get(acl.ACCESS_KEY)
        if access_key is None:
            return f"no AccessKey in the request and {addresses.host_of(peer)} is not a white address"
        account = rules.accounts.get(access_key)
        if account is None:
            return f"no ACL account for accessKey={access_key}"
        if account.white is not None and account.white(addresses.host_of(peer)):
            return None
        if not acl.verify(request, account.secret_key):
            return f"signature check failed for accessKey={access_key}"
        return account.missing(request)
