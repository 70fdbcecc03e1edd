"""A broker in this process whose revive rounds the test runs itself."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mqtools.server.broker.app import BrokerController
from mqtools.server.broker.config import BrokerConfig


@pytest.fixture
async def revive_broker(tmp_path: Path) -> AsyncIterator[BrokerController]:
    cfg = BrokerConfig(listen_port=0, bind_address="127.0.0.1", store_path_root_dir=str(tmp_path / "store"),
                       broker_name="b1")
    cfg.validate()
    broker = BrokerController(cfg)
    await broker.start()
    try:
        await broker.pop.s.revive.shutdown()  # no rounds of its own
        yield broker
    finally:
        await broker.shutdown()
