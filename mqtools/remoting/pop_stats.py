"""mq's private GET_POP_IN_FLIGHT (40003): a group's POP messages in flight on one broker, per queue.

Apache's ConsumeStats cannot show them: a POP moves the group's consume offset past what it took when it
takes it, so a popped message that is never acknowledged is no lag there. Apache keeps the counts for its
metrics only (PopInflightMessageCounter); mq's broker answers them here. A broker that is not reviving (a
slave) answers ``tracked: false``, and Apache answers REQUEST_CODE_NOT_SUPPORTED: the toolkit shows n/a.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mqtools.remoting.bodies import Body
from mqtools.remoting.headers import Header


@dataclass(slots=True)
class PopInFlightRequestHeader(Header):
    consumer_group: str
    topic: str | None = None


@dataclass(slots=True)
class PopQueueInFlight(Body):
    topic: str
    queue_id: int
    in_flight: int = 0
    """Popped, not acknowledged, still invisible."""
    revive_due: int = 0
    """Popped, not acknowledged, invisible time over: the revive service puts them back next."""
    orderly: bool = False


@dataclass(slots=True)
class PopInFlightBody(Body):
    tracked: bool = False
    """The broker revives POP checkpoints (a master): the figures are real."""
    popped: bool = False
    """The group popped on this broker since it started, or has POP messages in flight here."""
    revived: int = 0
    """Messages of the group put back after their invisible time since the broker started."""
    queues: list[PopQueueInFlight] = field(default_factory=list)
