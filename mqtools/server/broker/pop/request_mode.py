"""The message request mode of each topic and group: config/messageRequestMode.json (Apache's MessageRequestModeManager).

QUERY_ASSIGNMENT reads it to decide whether a client balanced by the broker pulls its queues or pops them;
SET_MESSAGE_REQUEST_MODE writes it; GET_ALL_MESSAGE_REQUEST_MODE answers with the whole file. The file has
Apache's shape (``{"messageRequestModeMap": {topic: {group: {...}}}}``), so a store moves between mq and
Apache with its modes. What is not in the table falls back to the broker's defaults (BrokerConfig
defaultMessageRequestMode PULL, defaultPopShareQueueNum -1), and a retry topic is always PULL.
"""

from __future__ import annotations

import logging
from pathlib import Path

from mqtools.common.topics import is_retry_topic
from mqtools.remoting.assignment import (
    MODE_POP,
    MODE_PULL,
    MODES,
    MessageRequestModeTable,
    SetMessageRequestModeRequestBody,
)
from mqtools.server.store.config_manager import ConfigManager

log = logging.getLogger(__name__)

FILE_NAME = "messageRequestMode.json"


def parse_mode(raw: str | None, default: str = MODE_PULL) -> str:
    """A mode setting as Apache's BrokerConfig reads it (MessageRequestMode.valueOf); anything else keeps `default`."""
    if raw is None:
        return default
    if raw.strip() not in MODES:
        log.warning("ignoring message request mode %r: not PULL or POP", raw)
        return default
    return raw.strip()


class MessageRequestModeManager(ConfigManager):
    def __init__(self, config_dir: Path, *, default_mode: str = MODE_PULL, default_share: int = -1) -> None:
        super().__init__(Path(config_dir) / FILE_NAME)
        self.default_mode = default_mode
        self.default_share = default_share
        self.table: dict[str, dict[str, SetMessageRequestModeRequestBody]] = {}

    @classmethod
    def from_config(cls, config_dir: Path, extra: dict[str, str]) -> MessageRequestModeManager:
        """The table with the defaults broker.properties sets (defaultMessageRequestMode, defaultPopShareQueueNum)."""
        raw_share = extra.get("defaultPopShareQueueNum")
        try:
            share = int(raw_share) if raw_share is not None else -1
        except ValueError:
            log.warning("ignoring defaultPopShareQueueNum=%r: not a number", raw_share)
            share = -1
        return cls(config_dir, default_mode=parse_mode(extra.get("defaultMessageRequestMode")), default_share=share)

    def replace(self, data: bytes) -> None:
        """Take a master's whole table (SlaveSynchronize.syncMessageRequestMode) and write it."""
        self.decode(data)
        self.dirty = True

    def get(self, topic: str, group: str) -> SetMessageRequestModeRequestBody | None:
        return self.table.get(topic, {}).get(group)

    def set(self, body: SetMessageRequestModeRequestBody) -> None:
        """Record a mode and write the file (the answer waits for the write: processors/durable.py)."""
        self.table.setdefault(body.topic, {})[body.consumer_group] = body
        log.info("message request mode of %s on %s: %s (popShareQueueNum %d)",
                 body.consumer_group, body.topic, body.mode, body.pop_share_queue_num)
        self.dirty = True
        self.persist_soon()

    def effective(self, topic: str, group: str) -> SetMessageRequestModeRequestBody:
        """The recorded mode, else the defaults QueryAssignmentProcessor applies."""
        found = self.get(topic, group)
        if found is not None:
            return found
        mode = MODE_PULL if is_retry_topic(topic) else self.default_mode
        share = self.default_share if mode == MODE_POP else 0
        return SetMessageRequestModeRequestBody(topic, group, mode, share)

    def encode(self) -> bytes:
        return MessageRequestModeTable(self.table).to_json()

    def decode(self, data: bytes) -> None:
        table = MessageRequestModeTable.from_json(data)
        self.table = {t: {g: b for g, b in groups.items() if b is not None}
                      for t, groups in table.message_request_mode_map.items() if groups}
