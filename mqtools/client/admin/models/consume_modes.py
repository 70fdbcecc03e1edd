"""How each broker set serves a consumer group on a topic: PULL (the client rebalances queues itself) or POP
(RocketMQ 5: the broker hands messages to any member), from the broker's message request modes.

A mode an operator set (SET_MESSAGE_REQUEST_MODE, mqadmin setConsumeMode) is `set`; a pair with none is
served as PULL by default; a broker that does not know the request modes (RocketMQ 4) serves only PULL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mqtools.common.presentation import (
    Column,
    ReadSource,
    Unreachable,
    View,
    from_slaves_note,
    renders,
    slave_marked,
)
from mqtools.remoting.assignment import MODES

__all__ = ["MODES", "ConsumeMode", "ConsumeModes", "consume_modes_view"]

#: Where a mode comes from.
SET = "set"
DEFAULT = "default"
NO_POP = "no POP (RocketMQ 4)"


@dataclass(frozen=True, slots=True)
class ConsumeMode:
    broker_name: str
    addr: str
    source: str
    """master, or slave when the set's master is gone or does not answer."""
    topic: str | None
    """None: this broker holds no mode for the group on any topic (it serves PULL)."""
    mode: str
    pop_share_queue_num: int | None
    """POP only: a member also reads the queues of the next N members; None where nothing was set."""
    origin: str


@dataclass(frozen=True, slots=True)
class ConsumeModes:
    group: str
    topic: str | None
    modes: list[ConsumeMode]
    unreachable: list[Unreachable] = field(default_factory=list)


def consume_mode_json(m: ConsumeMode) -> dict[str, Any]:
    return {"brokerName": m.broker_name, "addr": m.addr, "source": m.source, "topic": m.topic, "mode": m.mode,
            "popShareQueueNum": m.pop_share_queue_num, "origin": m.origin}


@renders("ConsumeModes")
def consume_modes_view(c: ConsumeModes) -> View:
    rows = [[slave_marked(m.broker_name, m.source), m.addr, m.topic, m.mode, m.pop_share_queue_num, m.origin]
            for m in c.modes]
    data = {"group": c.group, "topic": c.topic, "brokers": [consume_mode_json(m) for m in c.modes]}
    footer = from_slaves_note(sorted({m.broker_name for m in c.modes if m.source == ReadSource.SLAVE}))
    return View("ConsumeModes", [Column("BROKER"), Column("ADDR"), Column("TOPIC"), Column("MODE"),
                                 Column("SHARE QUEUES", True), Column("ORIGIN")],
                rows, data, title=f"consume mode of {c.group}", footer=footer, unreachable=c.unreachable)
