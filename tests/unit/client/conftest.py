"""Fixtures the client's unit tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from mqtools.client.admin import MQAdmin


@pytest.fixture
async def admin() -> AsyncIterator[MQAdmin]:
    """An admin session whose name server nobody serves: a test answers its calls itself."""
    admin = MQAdmin("127.0.0.1:9876")
    try:
        yield admin
    finally:
        await admin.close()
