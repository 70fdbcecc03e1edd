"""Which queues a consumer reads when the broker balances the load (Apache's QueryAssignmentProcessor rules).

Pure functions over sorted queue and client id lists, so every broker asked computes the same split:
the two strategies Apache's broker knows (AVG: contiguous near-equal slices; AVG_BY_CIRCLE: round robin)
and the POP rule on top of them (allocate4Pop): with popShareQueueNum <= 0 or at least the number of
other consumers, every consumer reads every broker's queues as "queue -1" (any queue, the broker picks);
otherwise a consumer reads its own slice plus the slices of the popShareQueueNum consumers after it, and
when there are more consumers than queues each gets one queue in turn so none is left idle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from mqtools.common.perm import is_readable
from mqtools.remoting.assignment import STRATEGY_AVG, STRATEGY_AVG_BY_CIRCLE
from mqtools.remoting.bodies import MessageQueue, TopicRouteData

Strategy = Callable[[str, list[MessageQueue], list[str]], list[MessageQueue]]


def sort_key(mq: MessageQueue) -> tuple[str, str, int]:
    """MessageQueue.compareTo: topic, then broker name, then queue id."""
    return (mq.topic, mq.broker_name, mq.queue_id)


def allocate_averagely(me: str, mqs: list[MessageQueue], cids: list[str]) -> list[MessageQueue]:
    """AllocateMessageQueueAveragely: the earlier consumers take one queue more when the split is uneven."""
    if me not in cids or not mqs:
        return []
    index, n, count = cids.index(me), len(mqs), len(cids)
    mod = n % count
    if n <= count:
        size = 1
    elif mod > 0 and index < mod:
        size = n // count + 1
    else:
        size = n // count
    start = index * size if mod > 0 and index < mod else index * size + mod
    return [mqs[(start + i) % n] for i in range(max(min(size, n - start), 0))]


def allocate_by_circle(me: str, mqs: list[MessageQueue], cids: list[str]) -> list[MessageQueue]:
    """AllocateMessageQueueAveragelyByCircle: queue i goes to consumer i mod count."""
    if me not in cids:
        return []
    index = cids.index(me)
    return [mqs[i] for i in range(index, len(mqs)) if i % len(cids) == index]


STRATEGIES: dict[str, Strategy] = {
    STRATEGY_AVG: allocate_averagely,
    STRATEGY_AVG_BY_CIRCLE: allocate_by_circle,
}


def allocate_for_pop(
    strategy: Strategy, me: str, mqs: list[MessageQueue], cids: list[str], share: int
) -> list[MessageQueue]:
    """allocate4Pop over sorted `mqs` and `cids` (see the module docstring)."""
    if share <= 0 or share >= len(cids) - 1:
        return [MessageQueue(mq.topic, mq.broker_name, -1) for mq in mqs]
    if len(cids) > len(mqs):
        return [mqs[cids.index(me) % len(mqs)]] if me in cids and mqs else []
    result = strategy(me, mqs, cids)
    if me in cids:
        index = cids.index(me)
        for _ in range(share):
            index = (index + 1) % len(cids)
            result.extend(strategy(cids[index], mqs, cids))
    return result


def allocate(
    strategy: Strategy, me: str, queues: Iterable[MessageQueue], client_ids: Iterable[str],
    *, pop: bool, share: int,
) -> list[MessageQueue]:
    """The queues of `me`: inputs sorted as Apache sorts them, then the PULL or the POP rule."""
    mqs = sorted(set(queues), key=sort_key)
    cids = sorted(set(client_ids))
    chosen = allocate_for_pop(strategy, me, mqs, cids, share) if pop else strategy(me, mqs, cids)
    return list(dict.fromkeys(chosen))  # Apache answers a set: "queue -1" once per broker, shared slices once


def subscribe_queues(topic: str, route: TopicRouteData) -> set[MessageQueue]:
    """MQClientInstance.topicRouteData2TopicSubscribeInfo: every readable queue of every broker of the route."""
    out: set[MessageQueue] = set()
    for qd in route.queue_datas:
        if is_readable(qd.perm):
            out.update(MessageQueue(topic, qd.broker_name, q) for q in range(qd.read_queue_nums))
    return out
