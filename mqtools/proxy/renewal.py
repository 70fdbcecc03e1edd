"""Receipt handles the proxy keeps alive for push consumers (Apache's ReceiptHandleProcessor, auto renew).

A push consumer receives with `auto_renew`: the proxy pops with its default invisible time (60 s) and, until the
client acks, nacks or forwards the message, pushes its invisible time out again shortly before it ends
(renewAheadTimeMillis), for at most renewMaxTimeMillis. Each renewal gives a new handle; an ack that names an
older one is sent with the newest. A client that goes away leaves its handles to expire (the broker revives the
messages), as nobody can ack them any more.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mqtools.proxy.receipt import ReceiptHandle

RENEW_AHEAD_MS = 10_000
RENEW_MAX_MS = 3 * 3600 * 1000
DEFAULT_INVISIBLE_MS = 60_000

Renew = Callable[[ReceiptHandle, str, str, int], Awaitable[str]]


@dataclass(slots=True)
class Held:
    client_id: str
    group: str
    topic: str
    message_id: str
    handle: ReceiptHandle
    first_ms: int


class Renewals:
    """Handles held for auto-renewing clients, by (client, group, message id)."""

    def __init__(self, *, clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
                 invisible_ms: int = DEFAULT_INVISIBLE_MS, max_held: int = 100_000) -> None:
        self._clock_ms = clock_ms
        self.invisible_ms = invisible_ms
        self.max_held = max_held
        self._held: dict[tuple[str, str, str], Held] = {}

    def __len__(self) -> int:
        return len(self._held)

    def add(self, client_id: str, group: str, topic: str, message_id: str, handle: ReceiptHandle) -> None:
        if len(self._held) >= self.max_held:
            return  # bounded: past this the message simply reappears after its invisible time
        self._held[(client_id, group, message_id)] = Held(client_id, group, topic, message_id, handle,
                                                          self._clock_ms())

    def take(self, client_id: str, group: str, message_id: str, handle: ReceiptHandle) -> ReceiptHandle:
        """The newest handle of the message (the one given when nothing is held), no longer renewed."""
        held = self._held.pop((client_id, group, message_id), None)
        return handle if held is None else held.handle

    def forget_client(self, client_id: str) -> None:
        for key in [k for k in self._held if k[0] == client_id]:
            del self._held[key]

    def due(self) -> list[Held]:
        """Held handles whose invisible time ends within RENEW_AHEAD_MS; those held past RENEW_MAX_MS are dropped."""
        now = self._clock_ms()
        out = []
        for key, held in list(self._held.items()):
            if now - held.first_ms > RENEW_MAX_MS or held.handle.expired(now):
                del self._held[key]
            elif held.handle.next_visible_time - now <= RENEW_AHEAD_MS:
                out.append(held)
        return out

    async def renew_due(self, renew: Renew) -> int:
        """Renew every due handle with `renew(handle, group, topic, invisible_ms) -> new handle text`; how many
        were renewed. A failed renewal drops the handle (the broker will revive the message)."""
        count = 0
        for held in self.due():
            key = (held.client_id, held.group, held.message_id)
            try:
                text = await renew(held.handle, held.group, held.topic, self.invisible_ms)
            except Exception:  # noqa: BLE001 - one failed renewal must not stop the others
                self._held.pop(key, None)
                continue
            if key in self._held:  # not acked meanwhile
                self._held[key].handle = ReceiptHandle.decode(text)
                count += 1
        return count
