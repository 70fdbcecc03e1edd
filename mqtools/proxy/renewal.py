"""Receipt handles the proxy keeps alive for push consumers (Apache's ReceiptHandleProcessor, auto renew).

A push consumer receives with `auto_renew`: the proxy pops with its default invisible time (60 s) and, until the
client acks, nacks or forwards the message, pushes its invisible time out again shortly before it ends
(renewAheadTimeMillis), for at most renewMaxTimeMillis. Each renewal gives a new handle; an ack that names an
older one is sent with the newest. When a client goes away (it ends, or is forgotten) or the proxy stops, its
messages are made visible again within CLEAR_INVISIBLE_MS (clearGroup, clearAllHandle), as nobody can ack them any
more: left alone they would stay invisible for the rest of their time.

Renewals run each on its own, as Apache hands each to its renewal workers: awaited one after another, the 3 s
timeouts of a hung broker's handles delayed every other broker's past their invisible time. One renewal of a handle
is in flight at a time (Apache locks the handle while it renews), which bounds them by the handles held.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mqtools.client.errors import MQBrokerError, MQClientError
from mqtools.proxy.errors import Code, ProxyError
from mqtools.proxy.receipt import ReceiptHandle

RENEW_AHEAD_MS = 10_000
RENEW_MAX_MS = 3 * 3600 * 1000
DEFAULT_INVISIBLE_MS = 60_000
#: ProxyConfig.maxRenewRetryTimes: failed renewals in a row after which a handle is no longer renewed
MAX_RENEW_RETRY_TIMES = 3
#: ProxyConfig.invisibleTimeMillisWhenClear: the messages of a client gone (or of every client, the proxy stopping)
#: are made visible again this soon, as nobody can ack them any more.
CLEAR_INVISIBLE_MS = 1_000
#: How long an ack waits for a renewal of its handle in flight (Apache's handle lock timeout).
TAKE_WAIT_S = 3.0

Renew = Callable[[ReceiptHandle, str, str, int], Awaitable[str]]


@dataclass(slots=True)
class Held:
    client_id: str
    group: str
    topic: str
    message_id: str
    handle: ReceiptHandle
    first_ms: int
    #: renewals failed in a row (MessageReceiptHandle.renewRetryTimes)
    retries: int = 0


def _retryable(exc: Exception) -> bool:
    """DefaultReceiptHandleManager's rule: a renewal that got no answer (timeout, unreachable broker) is tried again;
    the broker's refusal (AckStatus NO_EXIST there) and a handle whose broker cannot be found end it."""
    if isinstance(exc, MQBrokerError):
        return False
    return not (isinstance(exc, ProxyError) and exc.code == Code.INVALID_RECEIPT_HANDLE)


class Renewals:
    """Handles held for auto-renewing clients, by (client, group, message id)."""

    def __init__(self, *, clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
                 invisible_ms: int = DEFAULT_INVISIBLE_MS, max_held: int = 100_000,
                 max_retries: int = MAX_RENEW_RETRY_TIMES) -> None:
        self._clock_ms = clock_ms
        self.invisible_ms = invisible_ms
        self.max_held = max_held
        self.max_retries = max_retries
        self._held: dict[tuple[str, str, str], Held] = {}
        self._renewing: dict[tuple[str, str, str], asyncio.Task[bool]] = {}

    def __len__(self) -> int:
        return len(self._held)

    def add(self, client_id: str, group: str, topic: str, message_id: str, handle: ReceiptHandle) -> None:
        if len(self._held) >= self.max_held:
            return  # bounded: past this the message simply reappears after its invisible time
        self._held[(client_id, group, message_id)] = Held(client_id, group, topic, message_id, handle,
                                                          self._clock_ms())

    async def take(self, client_id: str, group: str, message_id: str, handle: ReceiptHandle) -> ReceiptHandle:
        """The newest handle of the message (the one given when nothing is held), no longer renewed. A renewal of
        it in flight is waited for, at most TAKE_WAIT_S (Apache waits for the handle's lock as long): an ack with
        the handle it replaces would leave the renewed one to bring the message back."""
        key = (client_id, group, message_id)
        renewing = self._renewing.get(key)
        if renewing is not None:
            await asyncio.wait({renewing}, timeout=TAKE_WAIT_S)
        held = self._held.pop(key, None)
        return handle if held is None else held.handle

    async def clear(self, client_id: str | None, change: Renew) -> None:
        """Stop renewing the handles held for `client_id` (for every client with None) and change each message's
        invisible time to CLEAR_INVISIBLE_MS with its newest handle, all at once. Best effort: a message whose change
        fails keeps its time."""
        keys = [key for key in self._held if client_id is None or key[0] == client_id]
        await asyncio.gather(*(self._clear(key, change) for key in keys))

    async def _clear(self, key: tuple[str, str, str], change: Renew) -> None:
        held = self._held.get(key)
        if held is None:
            return
        handle = await self.take(*key, held.handle)
        with contextlib.suppress(MQClientError, ProxyError):
            await change(handle, held.group, held.topic, CLEAR_INVISIBLE_MS)

    def due(self) -> list[Held]:
        """Held handles whose invisible time ends within RENEW_AHEAD_MS and that are not being renewed already; those
        held past RENEW_MAX_MS, expired, or failed max_retries times in a row are dropped."""
        now = self._clock_ms()
        out = []
        for key, held in list(self._held.items()):
            if now - held.first_ms > RENEW_MAX_MS or held.handle.expired(now) or held.retries >= self.max_retries:
                del self._held[key]
            elif held.handle.next_visible_time - now <= RENEW_AHEAD_MS and key not in self._renewing:
                out.append(held)
        return out

    def renew_due(self, renew: Renew) -> list[asyncio.Task[bool]]:
        """Start renewing every due handle with `renew(handle, group, topic, invisible_ms) -> new handle text`, each
        in a task of its own, and return without waiting; the tasks, each True when its handle was renewed."""
        tasks = []
        for held in self.due():
            key = (held.client_id, held.group, held.message_id)
            task = asyncio.ensure_future(self._renew(held, renew))
            self._renewing[key] = task
            task.add_done_callback(lambda done, key=key: self._renewed(key, done))
            tasks.append(task)
        return tasks

    def _renewed(self, key: tuple[str, str, str], task: asyncio.Task[bool]) -> None:
        if self._renewing.get(key) is task:
            del self._renewing[key]

    async def _renew(self, held: Held, renew: Renew) -> bool:
        key = (held.client_id, held.group, held.message_id)
        try:
            text = await renew(held.handle, held.group, held.topic, self.invisible_ms)
        except Exception as exc:  # noqa: BLE001 - a failed renewal is counted or ends the handle's renewals
            if self._held.get(key) is held:
                if _retryable(exc):
                    held.retries += 1
                else:
                    del self._held[key]
            return False
        if self._held.get(key) is not held:  # acked (or nacked) meanwhile
            return False
        held.handle = ReceiptHandle.decode(text)
        held.retries = 0
        return True
