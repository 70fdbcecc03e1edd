"""The start/shutdown pair every producer and consumer has (RocketMQ's MQProducer/MQConsumer lifecycle), and
`async with` over it, written once rather than in each client."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Self


class Lifecycle(ABC):
    """A client that is started before use and shut down after: `async with` does both."""

    @abstractmethod
    async def start(self) -> Self:
        """Connect and announce what the client is; returns the client, for `c = await C(...).start()`."""

    @abstractmethod
    async def shutdown(self) -> None:
        """Finish what is in flight, leave and close."""

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()
