"""The admin API: MQAdmin (async), SyncMQAdmin (blocking) and the typed models they return.

The names are loaded on first use, so a view that imports only the models (and their renderers) does
not pay for the whole API at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mqtools.client.admin.client import LATEST, MQAdmin
    from mqtools.client.admin.sync import SyncMQAdmin

__all__ = ["LATEST", "MQAdmin", "SyncMQAdmin"]


def __getattr__(name: str) -> Any:
    if name in ("LATEST", "MQAdmin"):
        from mqtools.client.admin import client

        return getattr(client, name)
    if name == "SyncMQAdmin":
        from mqtools.client.admin.sync import SyncMQAdmin

        return SyncMQAdmin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
