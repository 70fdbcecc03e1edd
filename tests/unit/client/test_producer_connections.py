"""MQAdmin.groups.producer_connections: every master of the topic's route asked at once; one that does not answer
is named (a producer connected only to it is missing), a refusal fails the read."""

from __future__ import annotations

import pytest

from mqtools.client.admin import MQAdmin
from mqtools.client.errors import RequestTimeoutError
from mqtools.remoting.bodies import Connection, ProducerConnection
from mqtools.remoting.command import RemotingCommand

MASTERS = {"broker-a": "a0:10911", "broker-b": "b0:10911"}


def admin_where(monkeypatch: pytest.MonkeyPatch, hung: set[str]) -> MQAdmin:
    """An admin whose masters each know one producer of the group (the same one), except `hung` ones."""
    admin = MQAdmin("127.0.0.1:9876")

    async def route_masters(topic: str) -> dict[str, str]:
        return MASTERS

    async def call(addr: str, code: int, ext: dict[str, str] | None = None, **_: object) -> RemotingCommand:
        if addr in hung:
            raise RequestTimeoutError(f"{addr} timed out")
        body = ProducerConnection([Connection("p@1", "10.0.0.9:50000", "JAVA", 453)])
        return RemotingCommand(0, {}, body.to_json())

    monkeypatch.setattr(admin, "route_masters", route_masters)
    monkeypatch.setattr(admin, "call", call)
    return admin


async def test_each_producer_once_from_every_master(monkeypatch: pytest.MonkeyPatch) -> None:
    found = await admin_where(monkeypatch, set()).groups.producer_connections("PG", "T")
    assert [c.client_id for c in found.clients] == ["p@1"] and found.unreachable == []


async def test_a_hung_master_is_named_and_the_others_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    found = await admin_where(monkeypatch, {"b0:10911"}).groups.producer_connections("PG", "T")
    assert [c.client_id for c in found.clients] == ["p@1"]
    assert [(u.broker_name, u.addr, u.reason) for u in found.unreachable] == [("broker-b", "b0:10911", "timed out")]
