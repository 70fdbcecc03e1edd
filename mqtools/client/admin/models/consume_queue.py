"""A queue's consume-queue units as its brokers hold them (`mq admin topic cq`, mqadmin's queryCq): where each
message of the queue lies in the commitlog, its stored size and tag code, from an index on.

Each master serving the topic answers for its own queue of that id (or the one broker asked); a broker that does
not answer is named and left out (the document is partial), one that does not hold the queue or the index says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqtools.common.presentation import NA, Column, Unreachable, View, renders

__all__ = ["BrokerQueueUnits", "ConsumeQueueUnits", "QueueUnit", "consume_queue_units_view"]


@dataclass(frozen=True, slots=True)
class QueueUnit:
    """One unit: the message at `index` of the queue lies at `physic_offset` in the commitlog."""

    index: int
    physic_offset: int
    physic_size: int
    tags_code: int


@dataclass(frozen=True, slots=True)
class BrokerQueueUnits:
    """One broker's answer. `units` is None when it does not hold the queue or the index (`remark` says which);
    `subscription` the group's subscription expression when a group was asked about and is online there."""

    broker_name: str | None
    """None when -b named a broker the name servers do not list."""
    addr: str
    min_index: int | None
    max_index: int | None
    units: list[QueueUnit] | None
    remark: str | None = None
    subscription: str | None = None
    filter_data: str | None = None
    subscription_json: dict[str, Any] | None = None
    """The group's SubscriptionData as the broker gave it, fields in name order (mqadmin prints it whole)."""

    def to_json(self) -> dict[str, Any]:
        return {"brokerName": self.broker_name, "addr": self.addr, "minIndex": self.min_index,
                "maxIndex": self.max_index, "remark": self.remark, "subscription": self.subscription,
                "filterData": self.filter_data,
                "units": None if self.units is None else [
                    {"index": u.index, "physicOffset": u.physic_offset, "physicSize": u.physic_size,
                     "tagsCode": u.tags_code} for u in self.units]}


@dataclass(frozen=True, slots=True)
class ConsumeQueueUnits:
    topic: str
    queue_id: int
    index: int
    count: int
    group: str | None
    brokers: list[BrokerQueueUnits]
    unreachable: list[Unreachable] = field(default_factory=list)


@renders("ConsumeQueueUnits")
def consume_queue_units_view(found: ConsumeQueueUnits) -> View:
    """One row per unit, each broker's bounds and remarks as the footer."""
    rows = [[b.broker_name or NA, u.index, u.physic_offset, u.physic_size, u.tags_code]
            for b in found.brokers for u in (b.units or [])]
    footer = []
    for b in found.brokers:
        bounds = f"queue {found.queue_id} on {b.broker_name or NA} ({b.addr}): indexes " + \
            (f"{b.min_index}..{b.max_index}" if b.min_index is not None else NA)
        footer.append(bounds + (f"; {b.remark}" if b.remark else ""))
        if found.group is not None:
            footer.append(f"{found.group} on {b.broker_name or NA}: " + (
                f"subscribed {b.subscription}" if b.subscription is not None else (b.filter_data or "not online")))
    data = {"topic": found.topic, "queueId": found.queue_id, "index": found.index, "count": found.count,
            "group": found.group, "brokers": [b.to_json() for b in found.brokers]}
    columns = [Column("BROKER"), Column("INDEX", True), Column("PHYSIC OFFSET", True),
               Column("SIZE", True), Column("TAGS CODE", True)]
    return View("ConsumeQueueUnits", columns, rows, data, footer=footer, unreachable=found.unreachable)
