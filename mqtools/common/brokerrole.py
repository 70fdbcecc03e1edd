"""A broker's role in its group, the broker id a master has and where its VIP channel is (RocketMQ's
BrokerRole, MixAll.MASTER_ID, MixAll.brokerVIPChannel)."""

from __future__ import annotations

import enum

MASTER_ID = 0
"""brokerId of a group's master; any other id is a slave."""

VIP_CHANNEL_OFFSET = 2
"""A broker also serves its requests on listenPort - 2, the VIP channel (BrokerController's fast remoting
server), which some of Apache's own calls use (a slave syncing topic configs from its master)."""


class BrokerRole(enum.StrEnum):
    """The `brokerRole` property: how a master replicates, or that the broker is a slave."""

    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"

    @property
    def is_master(self) -> bool:
        return self is not BrokerRole.SLAVE

    @classmethod
    def parse(cls, value: str) -> BrokerRole:
        """The role named by a property value (case-insensitive); ValueError names the choices."""
        try:
            return cls(value.strip().upper())
        except ValueError:
            raise ValueError(f"brokerRole must be one of {', '.join(r.value for r in cls)}, not {value!r}") from None
