"""Queue allocation among the consumers of a group (RocketMQ's AllocateMessageQueueAveragely)."""

from __future__ import annotations

from mqtools.remoting.bodies import MessageQueue


def queue_sort_key(mq: MessageQueue) -> tuple[str, str, int]:
    return (mq.topic, mq.broker_name, mq.queue_id)


def allocate_average(consumer_ids: list[str], me: str, queues: list[MessageQueue]) -> list[MessageQueue]:
    """Contiguous, near-equal slices of the sorted queues, in sorted consumer order.

    Every consumer of the group computes the same split from the same sorted inputs, so no
    coordination is needed beyond the broker's consumer list.
    """
    cids = sorted(set(consumer_ids))
    mqs = sorted(queues, key=queue_sort_key)
    if me not in cids or not mqs:
        return []
    index = cids.index(me)
    count = len(cids)
    mod = len(mqs) % count
    if len(mqs) <= count:
        size = 1
    elif mod > 0 and index < mod:
        size = len(mqs) // count + 1
    else:
        size = len(mqs) // count
    start = index * size if mod > 0 and index < mod else index * size + mod
    span = min(size, len(mqs) - start)
    return [mqs[(start + i) % len(mqs)] for i in range(max(span, 0))]
