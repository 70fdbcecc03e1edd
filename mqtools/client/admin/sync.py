"""SyncMQAdmin: MQAdmin for scripts and Spark executors, every operation a plain blocking method.

An event loop runs in a daemon thread (the client's LoopThread); each operation runs its MQAdmin twin there
and waits. The twins are derived from the async API, not written out: `admin.topics.topic_route(...)` blocks
where `await admin.topics.topic_route(...)` would, with the same signature (functools.wraps), so the blocking
API can never drift from the async one. Areas are reached as on MQAdmin (`admin.topics`, `admin.groups`, ...).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Self

from mqtools.client.admin.base import AdminService
from mqtools.client.admin.client import MQAdmin
from mqtools.client.sync import LoopThread
from mqtools.common.security import ClientSecurity


def _blocking(loop: LoopThread, fn: Callable[..., Any]) -> Callable[..., Any]:
    """The blocking twin of coroutine method `fn`: same name, signature and docstring."""

    @functools.wraps(fn)
    def twin(*args: Any, **kwargs: Any) -> Any:
        return loop.run(fn(*args, **kwargs))

    return twin


class SyncService:
    """The blocking twin of one area service of MQAdmin: each coroutine method runs on the admin's loop."""

    def __init__(self, loop: LoopThread, service: AdminService) -> None:
        self._loop = loop
        self._service = service

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._service, name)
        if name.startswith("_") or not inspect.iscoroutinefunction(attr):
            raise AttributeError(f"{type(self._service).__name__}.{name} has no blocking twin")
        twin = _blocking(self._loop, attr)
        setattr(self, name, twin)
        return twin

    def __dir__(self) -> list[str]:
        return [n for n in dir(self._service) if not n.startswith("_")
                and inspect.iscoroutinefunction(getattr(self._service, n))]


class SyncMQAdmin:
    """Blocking MQAdmin: `with SyncMQAdmin("127.0.0.1:9876") as admin: admin.topics.topic_list()`."""

    def __init__(self, namesrv: str | list[str], *, timeout: float = 5.0,
                 security: ClientSecurity | None = None) -> None:
        self._loop = LoopThread("mq-admin")

        async def make() -> MQAdmin:
            return MQAdmin(namesrv, timeout=timeout, security=security)

        try:
            self._admin = self._loop.run(make())
        except BaseException:
            self._loop.close()
            raise

    @property
    def namesrv_addrs(self) -> list[str]:
        return self._admin.namesrv_addrs

    def close(self) -> None:
        try:
            self._loop.run(self._admin.close())
        finally:
            self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        """An area as its SyncService, an operation of MQAdmin as its blocking twin (made once, then kept)."""
        if name.startswith("_"):
            raise AttributeError(name)
        attr = getattr(self._admin, name)
        if isinstance(attr, AdminService):
            twin: Any = SyncService(self._loop, attr)
        elif inspect.iscoroutinefunction(attr):
            twin = _blocking(self._loop, attr)
        else:
            raise AttributeError(f"MQAdmin.{name} has no blocking twin")
        setattr(self, name, twin)
        return twin
