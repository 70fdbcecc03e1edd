"""Master side of AutoSwitch HA (RocketMQ 5's AutoSwitchHAConnection): one slave of a controller-mode master.

The classic connection's link, writer task and socket handling (master.py) with the controller-mode protocol: the
slave first says who it is (its controller broker id); the master answers with its max offset and epoch
entries, from which the slave works out where their logs diverge; then the slave reports offsets and
the master streams frames labelled with their epoch, never one spanning two epochs. The connection also
keeps when the slave last caught up, which decides whether it belongs in the SyncStateSet.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from mqtools.server.ha.autoswitch_protocol import (
    EpochTransferCursor,
    HAConnectionState,
    SlaveHandshake,
    SlaveReport,
    SlaveStreamReader,
    encode_master_handshake,
    first_transfer_offset,
)
from mqtools.server.ha.epoch_file import EpochEntry
from mqtools.server.ha.master import CommitLogSource, ConnectionHost, HAConnection, SlaveLink
from mqtools.server.ha.protocol import HAProtocolError


class EpochSource(CommitLogSource, Protocol):
    @property
    def min_phy_offset(self) -> int: ...


class AutoSwitchHost(ConnectionHost, Protocol):
    """What a connection asks of the AutoSwitchHAService."""

    def epochs(self) -> list[EpochEntry]: ...

    @property
    def confirm_offset(self) -> int: ...


class AutoSwitchHAConnection(HAConnection):
    """One slave: handshake, then reports in and epoch-labelled frames out."""

    def __init__(self, host: AutoSwitchHost, store: EpochSource, link: SlaveLink, *, file_size: int,
                 batch_size: int, heartbeat_interval: float, housekeeping_interval: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(host, store, link, file_size=file_size, batch_size=batch_size,
                         heartbeat_interval=heartbeat_interval, housekeeping_interval=housekeeping_interval,
                         clock=clock)
        self._as_host = host
        self._as_store = store
        self._file_size = file_size
        self._frames = SlaveStreamReader()
        self.cursor = EpochTransferCursor(batch_size, heartbeat_interval)  # type: ignore[assignment]
        #: The slave's controller broker id, from its handshake (None before).
        self.slave_broker_id: int | None = None
        self.sync_from_last_file = False
        self.async_learner = False
        #: When the slave last had everything this master had (monotonic; None: never).
        self.caught_up_at: float | None = None
        self._sent_max = -1
        self._sent_at = 0.0
        #: Follows the slave's last frame, as RocketMQ's currentState does: a handshake puts the connection
        #: back in HANDSHAKE, which holds the transfer until the slave reports again.
        self.state = HAConnectionState.HANDSHAKE
        self._answer_due = False

    def _feed(self, data: bytes) -> list[int]:
        offsets = []
        for item in self._frames.feed(data):
            if isinstance(item, SlaveHandshake):
                self.slave_broker_id = item.broker_id
                self.sync_from_last_file = item.sync_from_last_file
                self.async_learner = item.async_learner
                # isSlaveSendHandshake: handshakes before the writer answers get one answer between them
                self.state = HAConnectionState.HANDSHAKE
                self._answer_due = True
                self.wake()
            elif isinstance(item, SlaveReport):
                if self.slave_broker_id is None:
                    raise HAProtocolError("offset report before the handshake")
                if self.state is not HAConnectionState.TRANSFER:
                    self.state = HAConnectionState.TRANSFER
                    self.wake()
                offsets.append(item.offset)
        return offsets

    def _transfer_held(self) -> bool:
        return self._answer_due or self.state is not HAConnectionState.TRANSFER

    def _answer(self) -> bytes | None:
        """The handshake answer, built when sent (RocketMQ's buildHandshakeBuffer), once per pending flag."""
        if not self._answer_due:
            return None
        self._answer_due = False
        return encode_master_handshake(self._store.max_phy_offset, self._as_host.epochs())

    def _on_report(self, offset: int) -> None:
        if offset >= self._store.max_phy_offset:
            self.caught_up_at = self._clock()
        elif offset >= self._sent_max >= 0:
            self.caught_up_at = self._sent_at
        super()._on_report(offset)

    def _begin_transfer(self) -> None:
        start = first_transfer_offset(self.slave_request_offset, self._as_store.min_phy_offset,
                                      self._store.max_phy_offset, self._file_size, self.sync_from_last_file)
        self.cursor.start(start, self._clock())

    def _next_frame(self) -> list[bytes | memoryview] | None:
        cursor = self.cursor
        assert isinstance(cursor, EpochTransferCursor)
        now = self._clock()
        data = self._store.get_commit_log_data(cursor.next_from)
        parts = cursor.frame(data, self._as_host.epochs(), self._as_host.confirm_offset, now)
        if parts is not None and len(parts) > 1:
            self._sent_max, self._sent_at = self._store.max_phy_offset, now
        elif parts is None and self.slave_ack_offset >= self._store.max_phy_offset:
            self.caught_up_at = now
        return parts
