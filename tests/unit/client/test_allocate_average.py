"""allocate_average against RocketMQ's AllocateMessageQueueAveragely rules.

The rules: queues and consumer ids sorted; with n queues and c consumers each consumer gets
n // c queues, the first n % c consumers one more; every share is a contiguous run of the
sorted queues, in consumer order; with more consumers than queues the surplus get nothing.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mqtools.client.rebalance import allocate_average, queue_sort_key
from mqtools.remoting.bodies import MessageQueue


def queues(count: int, broker: str = "broker-a", topic: str = "T") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(count)]


def ids(shares: list[list[MessageQueue]]) -> list[list[int]]:
    return [[mq.queue_id for mq in share] for share in shares]


def split(cids: list[str], mqs: list[MessageQueue]) -> list[list[MessageQueue]]:
    return [allocate_average(cids, me, mqs) for me in sorted(set(cids))]


def test_eight_queues_three_consumers_get_three_three_two_in_order() -> None:
    assert ids(split(["c0", "c1", "c2"], queues(8))) == [[0, 1, 2], [3, 4, 5], [6, 7]]


def test_ten_queues_four_consumers_get_three_three_two_two() -> None:
    assert ids(split(["c0", "c1", "c2", "c3"], queues(10))) == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]


def test_an_even_split_gives_equal_runs() -> None:
    assert ids(split(["c0", "c1"], queues(4))) == [[0, 1], [2, 3]]


def test_more_consumers_than_queues_leaves_the_last_ones_idle() -> None:
    assert ids(split(["c0", "c1", "c2", "c3", "c4"], queues(3))) == [[0], [1], [2], [], []]


def test_one_consumer_takes_everything() -> None:
    assert ids(split(["only"], queues(5))) == [[0, 1, 2, 3, 4]]


def test_a_consumer_not_in_the_list_gets_nothing() -> None:
    assert allocate_average(["c0", "c1"], "stranger", queues(8)) == []


def test_no_queues_means_nothing_to_allocate() -> None:
    assert allocate_average(["c0"], "c0", []) == []


def test_inputs_are_sorted_and_deduplicated_first() -> None:
    """Members see the consumer list and the route in any order; all must agree on the split."""
    shuffled = [MessageQueue("T", "broker-b", 1), MessageQueue("T", "broker-a", 1),
                MessageQueue("T", "broker-b", 0), MessageQueue("T", "broker-a", 0)]
    cids = ["c1", "c0", "c1"]
    assert allocate_average(cids, "c0", shuffled) == queues(2, "broker-a")
    assert allocate_average(cids, "c1", shuffled) == queues(2, "broker-b")


def test_queues_sort_by_topic_then_broker_then_numeric_id() -> None:
    mqs = [MessageQueue("T", "b", 10), MessageQueue("T", "b", 2), MessageQueue("S", "z", 0),
           MessageQueue("T", "a", 5)]
    assert sorted(mqs, key=queue_sort_key) == [MessageQueue("S", "z", 0), MessageQueue("T", "a", 5),
                                               MessageQueue("T", "b", 2), MessageQueue("T", "b", 10)]


@given(n_queues=st.integers(0, 64), n_brokers=st.integers(1, 3),
       cids=st.lists(st.text("abcdef@#.0123456789", min_size=1, max_size=8), min_size=1, max_size=12))
def test_every_queue_goes_to_exactly_one_member_in_contiguous_near_equal_runs(
        n_queues: int, n_brokers: int, cids: list[str]) -> None:
    mqs = [mq for b in range(n_brokers) for mq in queues(n_queues, f"broker-{b}")]
    members = sorted(set(cids))
    shares = split(cids, mqs)
    ordered = sorted(mqs, key=queue_sort_key)

    assert [mq for share in shares for mq in share] == ordered
    base, extra = divmod(len(mqs), len(members))
    assert [len(share) for share in shares] == [base + 1 if i < extra else base for i in range(len(members))]
