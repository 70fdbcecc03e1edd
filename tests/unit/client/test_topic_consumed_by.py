"""MQAdmin.topics.topic_consumed_by, which `msg get`'s tracks and statsAll start from: each broker set read from
its master, else a slave; a set nobody answers for is named (its groups are missing), and only when no set answers
is it an error (a hung master used to fail `msg get` of a message its slave had served)."""

from __future__ import annotations

import pytest

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.models.topics import TopicConsumers
from mqtools.client.errors import RequestTimeoutError, UnreachableError
from mqtools.remoting.bodies import GroupList
from mqtools.remoting.command import RemotingCommand

SETS = {"broker-a": {0: "a0:10911", 1: "a1:10911"}, "broker-b": {0: "b0:10911"}}
GROUPS = {"a0:10911": {"G1"}, "a1:10911": {"G1", "G2"}, "b0:10911": {"G3"}}


def admin_where(monkeypatch: pytest.MonkeyPatch, hung: set[str]) -> tuple[MQAdmin, list[str]]:
    """An admin whose brokers answer QUERY_TOPIC_CONSUME_BY_WHO from GROUPS, except `hung` ones, which time out."""
    admin, asked = MQAdmin("127.0.0.1:9876"), []

    async def topic_sets(topic: str, cluster: str | None = None) -> dict[str, dict[int, str]]:
        return SETS

    async def call(addr: str, code: int, ext: dict[str, str] | None = None, **_: object) -> RemotingCommand:
        asked.append(addr)
        if addr in hung:
            raise RequestTimeoutError(f"{addr} timed out")
        return RemotingCommand(0, {}, GroupList(GROUPS[addr]).to_json())

    monkeypatch.setattr(admin.topics, "topic_sets", topic_sets)
    monkeypatch.setattr(admin, "call", call)
    return admin, asked


async def test_the_masters_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    admin, asked = admin_where(monkeypatch, set())
    assert await admin.topics.topic_consumed_by("T") == TopicConsumers(["G1", "G3"], [])
    assert sorted(asked) == ["a0:10911", "b0:10911"]


async def test_a_hung_master_is_read_from_its_slave(monkeypatch: pytest.MonkeyPatch) -> None:
    admin, asked = admin_where(monkeypatch, {"a0:10911"})
    assert await admin.topics.topic_consumed_by("T") == TopicConsumers(["G1", "G2", "G3"], [])
    assert sorted(asked) == ["a0:10911", "a1:10911", "b0:10911"]


async def test_a_set_nobody_answers_for_is_named_and_none_answering_is_unreachable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    admin, _ = admin_where(monkeypatch, {"a0:10911", "a1:10911"})
    consumers = await admin.topics.topic_consumed_by("T")
    assert consumers.groups == ["G3"]
    assert [(u.broker_name, u.addr) for u in consumers.unreachable] == [("broker-a", "a0:10911")]
    assert consumers.unreachable[0].reason == "timed out; slave a1:10911: timed out"
    admin, _ = admin_where(monkeypatch, set(GROUPS))
    with pytest.raises(UnreachableError, match="could not read"):
        await admin.topics.topic_consumed_by("T")
