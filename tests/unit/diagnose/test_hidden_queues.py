"""A group's queues of topics its members subscribe to that the consume stats leave out are read for the judge
from the queues' bounds and the offsets committed on each set's master; where those offsets could not be read (a
hung master, a set with no master) the set is named and its queues left out, not counted as a backlog of the
whole queue (a queue with no committed offset read as lag from 0)."""

from __future__ import annotations

import pytest

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.models.groups import (
    ClientConnection,
    ConsumerProgress,
    ConsumerRunningInfo,
    GroupConnections,
)
from mqtools.client.errors import MQClientError, RequestTimeoutError, TopicNotExistError
from mqtools.diagnose.collect import read_group
from mqtools.diagnose.group import GroupSample
from mqtools.remoting.bodies import MessageQueue, QueueData, TopicRouteData

H_A, H_B = MessageQueue("H", "broker-a", 0), MessageQueue("H", "broker-b", 0)


async def sample(monkeypatch: pytest.MonkeyPatch, committed: dict[MessageQueue, int | None] | MQClientError,
                 bounds: MQClientError | None = None, route: MQClientError | None = None) -> GroupSample:
    """Group G, its one member subscribing to H, which the consume stats leave out; H has 100 messages on each
    of broker-a and broker-b, and `committed` is what reading G's offsets of H gives."""
    admin = MQAdmin("127.0.0.1:9876")

    async def consumer_progress(group: str, topic: str | None = None, **_: object) -> ConsumerProgress:
        return ConsumerProgress(group)

    async def consumer_connections(group: str) -> GroupConnections:
        return GroupConnections(group, [ClientConnection("c1", "10.0.0.9:1", "JAVA", 407)], {"H": "*"},
                                "CONSUME_PASSIVELY", "CLUSTERING", None)

    async def consumer_running_info(group: str, client_id: str, **_: object) -> ConsumerRunningInfo:
        return ConsumerRunningInfo(client_id, {}, {"H": "*"}, [], "{}")

    async def queue_bounds(topic: str, **_: object) -> dict[MessageQueue, tuple[int, int]]:
        if topic != "H":
            raise TopicNotExistError(17, topic)  # the DLQ: nothing dead yet
        if bounds is not None:
            raise bounds
        return {H_A: (0, 100), H_B: (0, 100)}

    async def topic_route(topic: str) -> TopicRouteData:
        if route is not None:
            raise route
        return TopicRouteData(queue_datas=[QueueData("broker-b", 1, 1, 6), QueueData("broker-a", 1, 1, 6)])

    async def committed_offsets(group: str, topic: str) -> dict[MessageQueue, int | None]:
        if isinstance(committed, MQClientError):
            raise committed
        return committed

    monkeypatch.setattr(admin.groups, "consumer_progress", consumer_progress)
    monkeypatch.setattr(admin.groups, "consumer_connections", consumer_connections)
    monkeypatch.setattr(admin.groups, "consumer_running_info", consumer_running_info)
    monkeypatch.setattr(admin.queue_offsets, "queue_bounds", queue_bounds)
    monkeypatch.setattr(admin.offsets, "committed_offsets", committed_offsets)
    monkeypatch.setattr(admin.topics, "topic_route", topic_route)
    return (await read_group(admin, "G")).sample()


def offsets(s: GroupSample) -> dict[str, int | None]:
    return {mq.broker_name: q.consumer_offset for mq, q in s.queues.items()}


async def test_every_master_answering(monkeypatch: pytest.MonkeyPatch) -> None:
    s = await sample(monkeypatch, {H_A: 90, H_B: None})  # broker-b: never committed, all of it waits
    assert offsets(s) == {"broker-a": 90, "broker-b": None} and s.unreachable == ()


async def test_a_hung_master_leaves_the_topic_out_and_names_its_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    s = await sample(monkeypatch, RequestTimeoutError("a0:10911 timed out"))
    assert offsets(s) == {}
    assert [u.broker_name for u in s.unreachable] == ["broker-a", "broker-b"]
    assert "a0:10911 timed out" in s.unreachable[0].reason


async def test_a_set_with_no_master_is_named_not_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    s = await sample(monkeypatch, {H_A: 90})  # broker-b has no master: committed offsets not read there
    assert offsets(s) == {"broker-a": 90}
    assert [(u.broker_name, u.reason) for u in s.unreachable] == [
        ("broker-b", "no master registered: the group's offsets of H are its master's")]


async def test_queues_no_node_of_a_set_answered_for_name_the_topics_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Until stop 106 a subscribed topic whose queues could not be read was left out with no word."""
    s = await sample(monkeypatch, {H_A: 90, H_B: 90}, bounds=RequestTimeoutError("b1:10911 timed out"))
    assert offsets(s) == {}
    assert [(u.broker_name, u.reason) for u in s.unreachable] == [
        ("broker-a", "the queues of H: b1:10911 timed out"), ("broker-b", "the queues of H: b1:10911 timed out")]
    s = await sample(monkeypatch, {H_A: 90}, bounds=RequestTimeoutError("b1:10911 timed out"),
                     route=RequestTimeoutError("name server timed out"))
    assert [(u.broker_name, u.reason) for u in s.unreachable] == [
        (None, "the queues of H: b1:10911 timed out (its route: name server timed out)")]
