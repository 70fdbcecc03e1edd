"""Controller reads in an outage: who leads, asked of every controller at once; config and broker epochs read
from those that answer, the others named (partial); no controller answering is unreachable (exit 3)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.models.controller import (
    ControllerMetadata,
    ElectionEvent,
    broker_epochs_view,
    controller_config_view,
    controller_elections_view,
)
from mqtools.client.errors import (
    ConnectFailedError,
    MQBrokerError,
    MQClientError,
    RequestTimeoutError,
    UnknownTargetError,
    UnreachableError,
)
from mqtools.common.exitcodes import EXIT_UNREACHABLE
from mqtools.common.presentation import Unreachable
from mqtools.remoting.bodies import BrokerData, ClusterInfo
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.controller import EpochEntry, EpochEntryCache

CONTROLLERS = ["c0:9878", "c1:9878", "c2:9878"]
REFUSED = "connection refused"


def refused(addr: str) -> ConnectFailedError:
    return ConnectFailedError(f"connect to {addr} failed: [Errno 111] Connection refused", REFUSED)


async def hang() -> None:
    await asyncio.Event().wait()


def answering(admin: MQAdmin, answer: Callable[[str], Awaitable[ControllerMetadata]]) -> None:
    admin.controllers.metadata = answer  # type: ignore[method-assign]


# -- finding 7: who leads -----------------------------------------------------------------------------------


async def test_a_hung_first_controller_costs_no_timeout_the_leader_comes_from_the_next(admin: MQAdmin) -> None:
    async def metadata(addr: str) -> ControllerMetadata:
        if addr == "c0:9878":
            await hang()
        return ControllerMetadata(addr, "g", "n1", "c1:9878", addr == "c1:9878", {})

    answering(admin, metadata)
    assert await asyncio.wait_for(admin.controllers.leader(CONTROLLERS), 1.0) == "c1:9878"


async def test_no_controller_answering_is_unreachable_and_names_each(admin: MQAdmin) -> None:
    async def metadata(addr: str) -> ControllerMetadata:
        raise RequestTimeoutError("slow") if addr == "c1:9878" else refused(addr)

    answering(admin, metadata)
    with pytest.raises(UnreachableError) as caught:
        await admin.controllers.leader(CONTROLLERS)
    assert caught.value.exit_code == EXIT_UNREACHABLE
    assert caught.value.missed == [Unreachable(None, "c0:9878", REFUSED), Unreachable(None, "c1:9878", "timed out"),
                                   Unreachable(None, "c2:9878", REFUSED)]


async def test_controllers_without_a_leader_or_refusing_are_not_an_outage(admin: MQAdmin) -> None:
    async def metadata(addr: str) -> ControllerMetadata:
        if addr == "c0:9878":
            raise MQBrokerError(1, "no")
        if addr == "c1:9878":
            raise refused(addr)
        return ControllerMetadata(addr, "g", None, None, False, {})

    answering(admin, metadata)
    with pytest.raises(MQClientError) as caught:
        await admin.controllers.leader(CONTROLLERS)
    assert not isinstance(caught.value, UnreachableError)
    assert "c2:9878: no leader" in str(caught.value) and "c1:9878" in str(caught.value)


async def test_sync_state_sets_with_every_controller_down_are_unreachable(admin: MQAdmin) -> None:
    async def metadata(addr: str) -> ControllerMetadata:
        raise refused(addr)

    answering(admin, metadata)
    with pytest.raises(UnreachableError):
        await admin.controllers.broker_sets(CONTROLLERS, ["broker-a"])
    with pytest.raises(UnreachableError):
        await admin.controllers.elections(CONTROLLERS)


async def test_a_leader_that_does_not_answer_is_named(admin: MQAdmin) -> None:
    """The followers name the leader, and the leader itself times out: the read names the leader."""
    async def metadata(addr: str) -> ControllerMetadata:
        return ControllerMetadata(addr, "g", "n0", "c0:9878", addr == "c0:9878", {})

    async def call(addr: str | None, code: int, *args: object, **kwargs: object) -> RemotingCommand:
        raise RequestTimeoutError("slow")

    answering(admin, metadata)
    admin.call = call  # type: ignore[method-assign]
    with pytest.raises(UnreachableError) as caught:
        await admin.controllers.broker_sets(CONTROLLERS, ["broker-a"])
    assert caught.value.missed == [Unreachable(None, "c0:9878", "timed out")]


# -- finding 8: controller config -----------------------------------------------------------------------------


async def test_config_of_the_controllers_that_answer_and_the_hung_one_named(admin: MQAdmin) -> None:
    async def config(addr: str) -> dict[str, str]:
        if addr == "c1:9878":
            raise RequestTimeoutError("slow")
        return {"controllerType": "DLedger", "at": addr}

    admin.controllers.config = config  # type: ignore[method-assign]
    configs, missed = await admin.controllers.config_each(CONTROLLERS)
    assert list(configs) == ["c0:9878", "c2:9878"]
    assert missed == [Unreachable(None, "c1:9878", "timed out")]
    doc = controller_config_view(configs, missed).document()
    assert doc["partial"] is True and [c["address"] for c in doc["controllers"]] == ["c0:9878", "c2:9878"]
    assert doc["unreachable"] == [{"brokerName": None, "addr": "c1:9878", "reason": "timed out"}]


async def test_config_with_no_controller_answering_is_unreachable(admin: MQAdmin) -> None:
    async def config(addr: str) -> dict[str, str]:
        raise refused(addr)

    admin.controllers.config = config  # type: ignore[method-assign]
    with pytest.raises(UnreachableError):
        await admin.controllers.config_each(CONTROLLERS)


# -- finding 9: broker epochs ---------------------------------------------------------------------------------

CLUSTER = ClusterInfo({"broker-a": BrokerData("C", "broker-a", {0: "a0:10911", 1: "a1:10911"}),
                       "broker-b": BrokerData("C", "broker-b", {0: "b0:10911", 1: "b1:10911"})},
                      {"C": {"broker-a", "broker-b"}})


def epoch_cache(addr: str) -> bytes:
    name, bid = f"broker-{addr[0]}", int(addr[1])
    return EpochEntryCache("C", name, bid, [EpochEntry(1, 0, 100)], 100 + bid).to_json()


def brokers(admin: MQAdmin, failing: dict[str, Exception], hung_until: asyncio.Event | None = None) -> list[str]:
    """The cluster above, each broker answering its epoch cache (or failing); the addresses asked."""
    asked: list[str] = []

    async def cluster_info() -> ClusterInfo:
        return CLUSTER

    async def call(addr: str | None, code: int, *args: object, **kwargs: object) -> RemotingCommand:
        assert addr is not None and code == RequestCode.GET_BROKER_EPOCH_CACHE
        asked.append(addr)
        if addr == "a0:10911" and hung_until is not None:
            await hung_until.wait()
        if addr == "a1:10911" and hung_until is not None:
            hung_until.set()
        if addr in failing:
            raise failing[addr]
        return RemotingCommand.request(code, {}, None).response(body=epoch_cache(addr[:2]))

    admin.cluster_info = cluster_info  # type: ignore[method-assign]
    admin.call = call  # type: ignore[method-assign]
    return asked


async def test_broker_epochs_asked_at_once_and_the_silent_brokers_named(admin: MQAdmin) -> None:
    brokers(admin, {"b0:10911": refused("b0:10911"), "b1:10911": RequestTimeoutError("slow")}, asyncio.Event())
    found, missed = await asyncio.wait_for(admin.controllers.broker_epochs_each("C"), 1.0)
    assert [(b.broker_name, b.broker_addr, b.broker_id, b.max_offset) for b in found] == [
        ("broker-a", "a0:10911", 0, 100), ("broker-a", "a1:10911", 1, 101)]
    assert missed == [Unreachable("broker-b", "b0:10911", REFUSED), Unreachable("broker-b", "b1:10911", "timed out")]
    doc = broker_epochs_view(found, missed).document()
    assert doc["partial"] is True and len(doc["brokers"]) == 2
    assert [u["addr"] for u in doc["unreachable"]] == ["b0:10911", "b1:10911"]


async def test_broker_epochs_of_one_set_ask_only_that_set(admin: MQAdmin) -> None:
    asked = brokers(admin, {"a0:10911": refused("a0:10911")})
    found, missed = await admin.controllers.broker_epochs_each("C", "broker-b")
    assert sorted(asked) == ["b0:10911", "b1:10911"]
    assert [b.broker_addr for b in found] == ["b0:10911", "b1:10911"] and missed == []
    with pytest.raises(UnknownTargetError):
        await admin.controllers.broker_epochs_each("C", "broker-x")


async def test_broker_epochs_with_no_broker_answering_is_unreachable(admin: MQAdmin) -> None:
    brokers(admin, {a: refused(a) for a in ("a0:10911", "a1:10911", "b0:10911", "b1:10911")})
    with pytest.raises(UnreachableError):
        await admin.controllers.broker_epochs_each("C")


async def test_broker_epochs_all_or_nothing_for_the_mqadmin_dialect(admin: MQAdmin) -> None:
    """getBrokerEpoch prints what every broker answered, or fails on the one that did not, as mqadmin does."""
    brokers(admin, {"b1:10911": RequestTimeoutError("slow")})
    with pytest.raises(UnreachableError, match="b1:10911"):
        await admin.controllers.broker_epochs("C")


# -- finding 4: an election that found no master --------------------------------------------------------------


def test_an_election_that_found_no_master_has_no_unwritable_time() -> None:
    """The set is still without a master: its unwritable time is not known yet (it was at - down_since)."""
    nobody = ElectionEvent(1_700_000_010_000, "broker-a", 0, None, 5, "controller", 1_700_000_000_000)
    assert nobody.unwritable_ms is None
    view = controller_elections_view([nobody])
    assert view.rows[0][6] is None and view.document()["elections"][0]["unwritableMs"] is None
    elected = ElectionEvent(1_700_000_010_000, "broker-a", 0, 1, 5, "controller", 1_700_000_000_000)
    assert elected.unwritable_ms == 10_000
