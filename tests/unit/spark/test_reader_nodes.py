"""RangeReader's choice of node in a set: away from one that does not answer, once, and shared by the task."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest

from mqtools.client.errors import MQClientError, RequestTimeoutError, UnreachableError
from mqtools.client.route import TopicRoute
from mqtools.common.exitcodes import EXIT_REFUSED, EXIT_UNREACHABLE
from mqtools.remoting.bodies import BrokerData, MessageQueue, QueueData, TopicRouteData
from mqtools.spark.offsets import QueueRange
from mqtools.spark.reader import RangeReader

ROUTE = TopicRoute.build("T", TopicRouteData(
    queue_datas=[QueueData("broker-a", 2, 2)],
    broker_datas=[BrokerData("C", "broker-a", {0: "a:10911", 1: "a-s:10911", 2: "a-s2:10911"})]))
HUNG = RequestTimeoutError("request code 11 to a:10911 timed out after 3.000s")


def reader(nodes: dict[str, int]) -> RangeReader:
    return RangeReader("127.0.0.1:9", QueueRange("T", "broker-a", 0, 0, 10), nodes=nodes)


def consumer() -> Any:
    return SimpleNamespace(instance=SimpleNamespace(routes={"T": ROUTE}))


def test_a_node_that_does_not_answer_hands_the_set_to_the_next_by_broker_id() -> None:
    nodes: dict[str, int] = {}
    r = reader(nodes)
    assert r.node == 0
    r._fail_over(consumer(), 0, HUNG)
    assert r.node == 1
    assert reader(nodes).node == 1  # the task's next range of the set starts there
    r._fail_over(consumer(), 1, HUNG)
    r._fail_over(consumer(), 2, HUNG)
    assert r.node == 0  # round again


def test_a_stale_failure_does_not_move_the_set_again() -> None:
    """Pipelined pulls to the master all time out together: the first moves the set, the others are old news."""
    r = reader({})
    r._fail_over(consumer(), 0, HUNG)
    r._fail_over(consumer(), 0, HUNG)
    assert r.node == 1


def test_a_set_the_route_does_not_know_stays_where_it_is() -> None:
    r = reader({})
    r._fail_over(SimpleNamespace(instance=SimpleNamespace(routes={})), 0, HUNG)
    assert r.node == 0


@pytest.mark.parametrize(("error", "kind", "code"), [
    (HUNG, UnreachableError, EXIT_UNREACHABLE),
    (MQClientError("The broker[broker-a] not exist"), MQClientError, EXIT_REFUSED),
])
async def test_a_read_that_gives_up_names_the_topic_queue_and_offset(error: MQClientError, kind: type, code: int
                                                                     ) -> None:
    """The pull's own error named a request code and an address (or a broker) only: the task's failure now says
    which queue and offset could not be read, keeping the class's exit code (3 for a node that does not answer)."""
    async def pull(*_: Any, **__: Any) -> Any:
        raise error

    async def fetch_queues(_topic: str) -> None:
        return None

    gone = SimpleNamespace(instance=SimpleNamespace(routes={"T": ROUTE}), pull=pull, fetch_queues=fetch_queues)
    r = RangeReader("127.0.0.1:9", QueueRange("T", "broker-a", 1, 3, 10), nodes={}, pull_timeout_ms=1)
    with pytest.raises(kind, match=r"^T broker-a:1: offset 3 could not be read within pullTimeoutMs \(0\.001 s\): "
                                   + re.escape(str(error))) as caught:
        await r._pull(gone, MessageQueue("T", "broker-a", 1), 3)  # type: ignore[arg-type]
    assert caught.value.exit_code == code
