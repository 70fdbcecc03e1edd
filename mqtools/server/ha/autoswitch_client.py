"""Slave side of AutoSwitch HA (RocketMQ 5's AutoSwitchHAClient): replicate a controller-mode master.

The classic client's byte pump, reconnects and TLS (slave.py) driving controller mode's session
(slave_session.AutoSwitchSlaveSession): the handshake with this slave's broker id, the cut back to where
its log agrees with the master's epochs, then frames labelled with epochs and the master's confirm offset.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable

from mqtools.server.ha.epoch_file import EpochFileCache
from mqtools.server.ha.slave import HAClient
from mqtools.server.ha.slave_session import HANDSHAKE_TIMEOUT_S, AutoSwitchSlaveSession, TruncatableSink

__all__ = ["HANDSHAKE_TIMEOUT_S", "AutoSwitchHAClient", "TruncatableSink"]


class AutoSwitchHAClient(HAClient):
    """Replicates one master's commitlog and epochs into the local store."""

    session: AutoSwitchSlaveSession

    def __init__(self, store: TruncatableSink, epochs: EpochFileCache, broker_id: int, *,
                 report_interval: float = 5.0, housekeeping_interval: float = 20.0,
                 reconnect_interval: float = 1.0, sync_from_last_file: bool = False,
                 clock: Callable[[], float] = time.monotonic, wall_clock: Callable[[], float] = time.time,
                 tls: ssl.SSLContext | None = None) -> None:
        session = AutoSwitchSlaveSession(store, epochs, broker_id, sync_from_last_file=sync_from_last_file,
                                         report_interval=report_interval,
                                         housekeeping_interval=housekeeping_interval)
        super().__init__(store, None, reconnect_interval=reconnect_interval, clock=clock, wall_clock=wall_clock,
                         tls=tls, session=session)

    @property
    def broker_id(self) -> int:
        """This slave's controller broker id, which its handshake gives the master."""
        return self.session.broker_id

    @property
    def truncated_bytes(self) -> int:
        """Bytes this slave cut from its own log at handshakes (a divergent tail), in all."""
        return self.session.truncated_bytes

    @property
    def master_confirm_offset(self) -> int:
        """The master's confirm offset, as its last frame gave it (-1: none yet)."""
        return self.session.master_confirm_offset
