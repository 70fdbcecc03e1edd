"""The write actions `mq top --allow-writes` offers, as plain admin calls (each confirmed by the UI)."""

from __future__ import annotations

from mqtools.client.admin import LATEST, MQAdmin
from mqtools.common.topics import is_dlq_topic, is_retry_topic


async def reset_to_latest(admin: MQAdmin, group: str) -> int:
    """Move the group to the end of every queue of every topic it has progress on (its retry topic
    aside); returns how many queues were reset."""
    progress = await admin.consumer_progress(group)
    topics = sorted({q.queue.topic for q in progress.queues
                     if not is_retry_topic(q.queue.topic) and not is_dlq_topic(q.queue.topic)})
    moved = 0
    for topic in topics:
        moved += len(await admin.reset_offset_by_time(group, topic, LATEST))
    return moved
