"""Committed consumer offsets: consumerOffset.json, keyed "topic@group" -> {queueId: offset}.

The stored value is the next offset to consume, as in RocketMQ. Offsets change in memory on
every UPDATE_CONSUMER_OFFSET and reach the disk on a timer (the broker's flushConsumerOffsetInterval,
5 s by default) and at shutdown, so a commit storm never turns into a write storm: a broker that is
killed loses at most the commits of the last interval. Loading and writing follow the store's ConfigManager.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from mqtools.remoting.bodies import ConsumerOffsetSerializeWrapper
from mqtools.server.store.config_manager import ConfigManager

log = logging.getLogger(__name__)

TOPIC_GROUP_SEPARATOR = "@"
FILE_NAME = "consumerOffset.json"
#: Default seconds between persists (RocketMQ's flushConsumerOffsetInterval, 5000 ms): the most a kill loses.
FLUSH_INTERVAL_S = 5.0


def offset_key(topic: str, group: str) -> str:
    return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"


def split_key(key: str) -> tuple[str, str]:
    """"topic@group" -> (topic, group); a key without '@' yields an empty group."""
    topic, _, group = key.partition(TOPIC_GROUP_SEPARATOR)
    return topic, group


class ConsumerOffsetManager(ConfigManager):
    def __init__(
        self,
        config_dir: Path,
        clock: Callable[[], float] = time.time,
        *,
        flush_interval: float = FLUSH_INTERVAL_S,
    ) -> None:
        super().__init__(Path(config_dir) / FILE_NAME)
        self.clock = clock
        self.flush_interval = flush_interval
        self.offset_table: dict[str, dict[int, int]] = {}

    # ------------------------------------------------------------------ queries and updates

    def commit_offset(self, client_host: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Record a consumer's progress (client_host is kept for logs only, as in RocketMQ)."""
        table = self.offset_table.setdefault(offset_key(topic, group), {})
        prev = table.get(queue_id)
        table[queue_id] = offset
        self.dirty = True
        if prev is not None and offset < prev:
            log.info("offset of %s@%s[%d] moved back %d -> %d by %s", topic, group, queue_id, prev, offset,
                     client_host)

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group never committed on that queue."""
        return self.offset_table.get(offset_key(topic, group), {}).get(queue_id, -1)

    def query_offsets(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.offset_table.get(offset_key(topic, group), {}))

    def topics_of_group(self, group: str) -> set[str]:
        return {t for t, g in map(split_key, self.offset_table) if g == group}

    def groups_of_topic(self, topic: str) -> set[str]:
        return {g for t, g in map(split_key, self.offset_table) if t == topic}

    def take_newer(self, table: dict[str, dict[int, int]]) -> list[tuple[str, int, int | None, int]]:
        """Per queue, keep the larger of our committed offset and `table`'s (another broker's, e.g. the
        slave's after the master was down); returns (key, queue id, old or None, new) for each move."""
        moved = []
        for key, offsets in table.items():
            own = self.offset_table.setdefault(key, {})
            for queue_id, offset in offsets.items():
                old = own.get(queue_id)
                if old is None or offset > old:
                    own[queue_id] = offset
                    moved.append((key, queue_id, old, offset))
            if not own:
                del self.offset_table[key]
        if moved:
            self.dirty = True
        return moved

    def remove_group(self, group: str) -> None:
        for key in [k for k in self.offset_table if split_key(k)[1] == group]:
            del self.offset_table[key]
            self.dirty = True

    def remove_topic(self, topic: str) -> None:
        for key in [k for k in self.offset_table if split_key(k)[0] == topic]:
            del self.offset_table[key]
            self.dirty = True

    # ------------------------------------------------------------------ persistence

    def encode(self) -> bytes:
        return ConsumerOffsetSerializeWrapper(offset_table=self.offset_table).to_json()

    def decode(self, data: bytes) -> None:
        wrapper = ConsumerOffsetSerializeWrapper.from_json(data)
        self.offset_table = {k: dict(v) for k, v in wrapper.offset_table.items() if v is not None}

    async def start(self) -> None:
        self.start_persisting(self.flush_interval, "consumer-offset-flush")

    async def shutdown(self) -> None:
        await self.stop_persisting()
