"""Topic and group name rules (RocketMQ's Validators / TopicValidator)."""

from __future__ import annotations

import re

from mqtools.common.topics import AUTO_CREATE_TOPIC_KEY

TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 255
_NAME = re.compile(r"^[%|a-zA-Z0-9_-]+$")


class ValidationError(ValueError):
    """A name or message that RocketMQ would refuse; the text is the remark to send back."""


def check_topic(topic: str | None) -> str:
    """Return the topic if it is a legal topic name, else raise ValidationError."""
    if not topic or not topic.strip():
        raise ValidationError("The specified topic is blank.")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise ValidationError(f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}.")
    if not _NAME.match(topic):
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
    if not _NAME.match(group):
        raise ValidationError(
            f"the specified group[{group}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        )
    return group
