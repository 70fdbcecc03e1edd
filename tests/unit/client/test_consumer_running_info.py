"""MQAdmin.groups.consumer_running_info, which `group status`, diagnose and `mq top` ask for each member: a broker
relays it to the client, and a client heartbeats to slaves too, so with a set's master gone the slave is asked
(it used to take the first master of the group's brokers and, with none, failed with a traceback)."""

from __future__ import annotations

import pytest

from mqtools.client.admin import MQAdmin
from mqtools.client.errors import ConnectFailedError, MQBrokerError
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand

INFO = b'{"properties":{"consumeType":"CONSUME_PASSIVELY"},"subscriptionSet":[],"mqTable":{},"statusTable":{}}'


def admin_where(monkeypatch: pytest.MonkeyPatch, sets: dict[str, dict[int, str]], down: set[str],
                not_connected: set[str] = frozenset()) -> tuple[MQAdmin, list[str]]:
    """An admin over `sets` whose brokers relay GET_CONSUMER_RUNNING_INFO, but `down` ones refuse connections and
    `not_connected` ones answer that the client is not connected to them."""
    admin, asked = MQAdmin("127.0.0.1:9876"), []

    async def group_sets(group: str, topic: str | None) -> dict[str, dict[int, str]]:
        return sets

    async def call(addr: str, code: int, ext: dict[str, str] | None = None, **_: object) -> RemotingCommand:
        assert code == RequestCode.GET_CONSUMER_RUNNING_INFO
        asked.append(addr)
        if addr in down:
            raise ConnectFailedError(f"connect to {addr} failed")
        if addr in not_connected:
            raise MQBrokerError(ResponseCode.SYSTEM_ERROR, "The Consumer <c1> not online")
        return RemotingCommand(0, {}, INFO)

    monkeypatch.setattr(admin, "group_sets", group_sets)
    monkeypatch.setattr(admin, "call", call)
    return admin, asked


async def test_the_master_relays(monkeypatch: pytest.MonkeyPatch) -> None:
    admin, asked = admin_where(monkeypatch, {"broker-a": {0: "a0", 1: "a1"}}, set())
    assert (await admin.groups.consumer_running_info("G", "c1")).client_id == "c1"
    assert asked == ["a0"]


async def test_a_set_without_its_master_is_asked_through_its_slave(monkeypatch: pytest.MonkeyPatch) -> None:
    admin, asked = admin_where(monkeypatch, {"broker-a": {1: "a1"}}, set())  # the name server dropped the master
    assert (await admin.groups.consumer_running_info("G", "c1")).client_id == "c1"
    assert asked == ["a1"]
    admin, asked = admin_where(monkeypatch, {"broker-a": {0: "a0", 1: "a1"}}, {"a0"})  # registered, not answering
    assert (await admin.groups.consumer_running_info("G", "c1")).client_id == "c1"
    assert asked == ["a0", "a1"]


async def test_a_broker_the_client_is_not_connected_to_passes_to_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    sets = {"broker-a": {0: "a0"}, "broker-b": {0: "b0"}}
    admin, asked = admin_where(monkeypatch, sets, set(), {"a0"})
    assert (await admin.groups.consumer_running_info("G", "c1")).client_id == "c1"
    assert asked == ["a0", "b0"]
    admin, _ = admin_where(monkeypatch, sets, set(), {"a0", "b0"})
    with pytest.raises(MQBrokerError, match="not online"):
        await admin.groups.consumer_running_info("G", "c1")


async def test_no_broker_at_all_is_a_named_error_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    admin, _ = admin_where(monkeypatch, {}, set())
    with pytest.raises(Exception, match="no broker to ask about group G") as raised:
        await admin.groups.consumer_running_info("G", "c1")
    assert not isinstance(raised.value, (RuntimeError, StopIteration))
