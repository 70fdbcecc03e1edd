"""Tag subscription expressions (RocketMQ's FilterAPI.buildSubscriptionData and the client-side tag check).

The broker filters a pull by the tags' hash codes only; two tags may share a code, so the
client checks the tag itself again (`matches`) before a message reaches a listener.
"""

from __future__ import annotations

import time

from mqtools.common.hashing import tags_code
from mqtools.common.message import MessageExt
from mqtools.remoting.bodies import SubscriptionData

SUB_ALL = "*"


def subscription_version() -> int:
    """A new subVersion: a broker keeps a group's newest subscription per topic by it, and refuses a pull whose
    version is newer than the one it holds (SUBSCRIPTION_NOT_LATEST)."""
    return time.time_ns() // 1000


def parse_subscription(topic: str, expression: str | None) -> SubscriptionData:
    """`TagA || TagB` -> the tags and their hash codes; `*` or empty subscribes to all."""
    expr = (expression or SUB_ALL).strip()
    version = subscription_version()
    if expr in ("", SUB_ALL):
        return SubscriptionData(topic=topic, sub_string=SUB_ALL, sub_version=version)
    tags = {t.strip() for t in expr.split("||") if t.strip()}
    return SubscriptionData(topic=topic, sub_string=expr, tags_set=tags, code_set={tags_code(t) for t in tags},
                            sub_version=version)


def matches(sub: SubscriptionData, msg: MessageExt) -> bool:
    """Exact client-side tag match (the broker only filtered by hash code)."""
    return not sub.tags_set or msg.tags in sub.tags_set
