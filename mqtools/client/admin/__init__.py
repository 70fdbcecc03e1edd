"""The admin API: MQAdmin (async), SyncMQAdmin (blocking) and the typed models they return."""

from mqtools.client.admin.client import LATEST, MQAdmin
from mqtools.client.admin.sync import SyncMQAdmin

__all__ = ["LATEST", "MQAdmin", "SyncMQAdmin"]
