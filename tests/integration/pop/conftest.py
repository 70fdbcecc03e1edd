"""A broker in this process whose revive rounds the test runs itself."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.inprocbroker import inproc_broker

from mqtools.server.broker.app import BrokerController


@pytest.fixture
async def revive_broker(tmp_path: Path) -> AsyncIterator[BrokerController]:
    async with inproc_broker(tmp_path, broker_name="b1") as (broker, _):
        await broker.pop.s.revive.shutdown()  # no rounds of its own
        yield broker
