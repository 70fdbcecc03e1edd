"""A transport that only records whether its protocol reads it: what a back-pressure test asks of a socket."""

from __future__ import annotations

import asyncio


class ReadStateTransport(asyncio.Transport):
    """Open, read until `pause_reading`, read again at `resume_reading`; `reading` says which."""

    def __init__(self, extra: dict[str, object] | None = None) -> None:
        super().__init__(extra)
        self.reading = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_closing(self) -> bool:
        return False
