"""Topic and group name rules (RocketMQ's Validators / TopicValidator), the one place for them.

Servers check every name that reaches a file path or a table where the request enters, so a
name such as `../..` or one with a NUL byte is refused with a remark before it gets near the
store; clients check the same rules before sending.
"""

from __future__ import annotations

import re

from mqtools.common.topics import AUTO_CREATE_TOPIC_KEY

TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 255
#: Queue counts a topic may be created with: loops over a topic's queues run on the event loop,
#: so a request must not be able to ask for millions (BenchmarkTest, the largest system topic, has 1024).
QUEUE_NUMS_MAX = 1024
#: Queue counts a name server serves in a route: a broker's own topics may have 0 (a queue set drained for
#: writes or reads) and more than this broker would create (Apache's has no bound), but a client expands every
#: queue of a route into an object (two million: 21 s and 546 MB), so beyond this a topic is not served.
ROUTE_QUEUE_NUMS_MAX = 65536
#: fullmatch, not match with `$`: `$` also matches before a trailing newline.
_NAME = re.compile(r"[%|a-zA-Z0-9_-]+")


class ValidationError(ValueError):
    """A name or message that RocketMQ would refuse; the text is the remark to send back."""


def check_topic(topic: str | None) -> str:
    """Return the topic if it is a legal topic name, else raise ValidationError."""
    if not topic or not topic.strip():
        raise ValidationError("The specified topic is blank.")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise ValidationError(f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}.")
    if not _NAME.fullmatch(topic):
        raise ValidationError(
            f"The specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        )
    return topic


def check_topic_for_send(topic: str | None) -> str:
    """Sending to the auto-create template topic itself is refused, as RocketMQ does."""
    check_topic(topic)
    if topic == AUTO_CREATE_TOPIC_KEY:
        raise ValidationError(f"The topic[{topic}] is conflict with AUTO_CREATE_TOPIC_KEY_TOPIC.")
    return topic  # type: ignore[return-value]


def check_group(group: str | None) -> str:
    if not group or not group.strip():
        raise ValidationError("the specified group is blank")
    if len(group) > GROUP_MAX_LENGTH:
        raise ValidationError(f"the specified group is longer than group max length {GROUP_MAX_LENGTH}.")
    if not _NAME.fullmatch(group):
        raise ValidationError(
            f"the specified group[{group}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        )
    return group


def is_legal_group(group: str | None) -> bool:
    """check_group as a test, for tables that refuse a bad name by not creating the entry."""
    try:
        check_group(group)
    except ValidationError:
        return False
    return True


def route_queue_nums_ok(read: object, write: object) -> bool:
    """Queue counts a route can carry: ints 0 to ROUTE_QUEUE_NUMS_MAX (what a name server serves)."""
    top = ROUTE_QUEUE_NUMS_MAX
    return type(read) is int and type(write) is int and 0 <= read <= top and 0 <= write <= top


def check_queue_nums(read_queue_nums: int, write_queue_nums: int) -> None:
    """Queue counts of a topic being created: positive and at most QUEUE_NUMS_MAX."""
    for what, value in (("readQueueNums", read_queue_nums), ("writeQueueNums", write_queue_nums)):
        if not 0 < value <= QUEUE_NUMS_MAX:
            raise ValidationError(f"{what} {value} is out of range [1, {QUEUE_NUMS_MAX}]")
