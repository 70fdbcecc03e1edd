"""A broker in the test's own process, on an ephemeral loopback port, with a client to call it: for tests that
drive its services (revive rounds, polling) step by step. Stopped when the test leaves, however."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mqtools.remoting.client import RemotingClient
from mqtools.server.broker.app import BrokerController
from mqtools.server.broker.config import BrokerConfig


@asynccontextmanager
async def inproc_broker(root: Path, extra: dict[str, str] | None = None,
                        **fields: object) -> AsyncIterator[tuple[BrokerController, RemotingClient]]:
    """`extra`: broker.properties settings by Apache's names."""
    cfg = BrokerConfig(listen_port=0, bind_address="127.0.0.1", store_path_root_dir=str(root / "store"),
                       **fields)  # type: ignore[arg-type]
    cfg.extra.update(extra or {})
    cfg.validate()
    controller = BrokerController(cfg)
    await controller.start()
    client = RemotingClient()
    try:
        yield controller, client
    finally:
        await client.close()
        await controller.shutdown()
