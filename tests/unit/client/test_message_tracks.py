"""MQAdmin.tracking.message_tracks, `msg get`'s tracks and MCP's message_by_id: a push group's offset is compared
on the broker set that stored the message, found by its store host even where that is no longer the set's
master (it left the route, or a slave was elected); a set that cannot be found, or whose offsets of the group
could not be read, leaves the track UNKNOWN and named, never NOT_CONSUME_YET (every message of a set whose master
had gone read as not consumed, though the group's offset, read from the slave, was past it)."""

from __future__ import annotations

import pytest

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.models.groups import ConsumerProgress, GroupConnections, QueueProgress
from mqtools.client.admin.models.topics import TopicConsumers
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.codec import encode_stored
from mqtools.common.message import MessageExt
from mqtools.common.presentation import Unreachable
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand

OLD_MASTER, SLAVE, B_MASTER = ("10.0.0.1", 10911), ("10.0.0.2", 10911), ("10.0.0.3", 10911)
MSG = MessageExt("T", b"x", properties={"TAGS": "a"}, queue_id=0, queue_offset=3, store_host=OLD_MASTER,
                 commit_log_offset=4096, born_host=("10.0.0.9", 5000))
A_QUEUE = MessageQueue("T", "broker-a", 0)


def addr(host: tuple[str, int]) -> str:
    return f"{host[0]}:{host[1]}"


def admin_with(monkeypatch: pytest.MonkeyPatch, sets: dict[str, dict[int, str]], progress: ConsumerProgress,
               holding: dict[str, MessageExt] | None = None) -> MQAdmin:
    """Group G pushes from T; `sets` is T's route, `progress` G's offsets, `holding` what each replica has at the
    message's commit log offset."""
    admin = MQAdmin("127.0.0.1:9876")

    async def topic_consumed_by(topic: str) -> TopicConsumers:
        return TopicConsumers(["G"], [])

    async def consumer_connections(group: str) -> GroupConnections:
        return GroupConnections(group, [], {"T": "*"}, "CONSUME_PASSIVELY", "CLUSTERING", None)

    async def topic_sets(topic: str, cluster: str | None = None) -> dict[str, dict[int, str]]:
        return sets

    async def route_masters(topic: str) -> dict[str, str]:
        return {name: ids[MASTER_ID] for name, ids in sets.items() if MASTER_ID in ids}

    async def consumer_progress(group: str, topic: str | None = None, **_: object) -> ConsumerProgress:
        return progress

    async def call(at: str, code: int, ext: dict[str, str] | None = None, **_: object) -> RemotingCommand:
        assert code == RequestCode.VIEW_MESSAGE_BY_ID and ext is not None and ext["offset"] == "4096"
        found = (holding or {}).get(at)
        return RemotingCommand(0, {}, encode_stored(found)) if found else RemotingCommand(1, {}, None, "no message")

    monkeypatch.setattr(admin.topics, "topic_consumed_by", topic_consumed_by)
    monkeypatch.setattr(admin.groups, "consumer_connections", consumer_connections)
    monkeypatch.setattr(admin.topics, "topic_sets", topic_sets)
    monkeypatch.setattr(admin, "route_masters", route_masters)
    monkeypatch.setattr(admin.groups, "consumer_progress", consumer_progress)
    monkeypatch.setattr(admin, "call", call)
    return admin


def read_from_slave(consumer_offset: int) -> ConsumerProgress:
    return ConsumerProgress("G", [QueueProgress(A_QUEUE, 20, consumer_offset, None, source="slave")])


async def test_the_storing_master_registered_compares_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    sets = {"broker-a": {0: addr(OLD_MASTER), 1: addr(SLAVE)}}
    progress = ConsumerProgress("G", [QueueProgress(A_QUEUE, 20, 3, None)])
    tracks = await admin_with(monkeypatch, sets, progress).tracking.message_tracks(MSG)
    assert [t.track_type for t in tracks.tracks] == ["NOT_CONSUME_YET"] and tracks.unreachable == []


async def test_a_master_that_left_the_route_is_found_by_its_slave_holding_the_message(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sets = {"broker-a": {1: addr(SLAVE)}, "broker-b": {0: addr(B_MASTER)}}
    other = MessageExt("T", b"y", queue_id=0, queue_offset=3, store_host=B_MASTER, commit_log_offset=4096)
    admin = admin_with(monkeypatch, sets, read_from_slave(10), {addr(SLAVE): MSG, addr(B_MASTER): other})
    tracks = await admin.tracking.message_tracks(MSG)
    assert [t.track_type for t in tracks.tracks] == ["CONSUMED"] and tracks.unreachable == []


async def test_an_elected_slave_compares_the_set_of_the_old_master(monkeypatch: pytest.MonkeyPatch) -> None:
    sets = {"broker-a": {0: addr(SLAVE), 1: addr(OLD_MASTER)}}  # controller mode: the old master is back, a slave
    tracks = await admin_with(monkeypatch, sets, read_from_slave(10)).tracking.message_tracks(MSG)
    assert [t.track_type for t in tracks.tracks] == ["CONSUMED"]


async def test_a_set_that_cannot_be_found_leaves_the_track_unknown_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    sets = {"broker-b": {0: addr(B_MASTER)}}  # broker-a has left the route: none of its replicas to ask
    tracks = await admin_with(monkeypatch, sets, read_from_slave(10)).tracking.message_tracks(MSG)
    assert [t.track_type for t in tracks.tracks] == ["UNKNOWN"]
    assert [(u.broker_name, u.addr) for u in tracks.unreachable] == [(None, addr(OLD_MASTER))]


async def test_offsets_of_the_storing_set_not_read_leave_the_track_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    sets = {"broker-a": {1: addr(SLAVE)}}
    lost = Unreachable("broker-a", addr(SLAVE), "no master answering; the slave does not know the group yet")
    progress = ConsumerProgress("G", [], unreachable=[lost])
    tracks = await admin_with(monkeypatch, sets, progress, {addr(SLAVE): MSG}).tracking.message_tracks(MSG)
    assert [(t.track_type, t.exception_desc) for t in tracks.tracks] == [("UNKNOWN", str(lost))]
    assert tracks.unreachable == [lost]
