"""Where a group is configured, with broker sets down: "does not exist" only when every set's master said so; a set
that did not answer, or answered from a slave (which learns groups from its master every few seconds), may hold it.
Until stop 106 a set whose master was down made every group only it held "does not exist on any master"."""

from __future__ import annotations

import pytest

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.base import SetRead, SetReads
from mqtools.client.errors import SubscriptionGroupNotExistError, UnreachableError
from mqtools.common.presentation import ReadSource, Unreachable
from mqtools.remoting.bodies import SubscriptionGroupConfig


def admin_with(monkeypatch: pytest.MonkeyPatch, read: SetReads) -> MQAdmin:
    admin = MQAdmin("127.0.0.1:9876")

    async def all_sets(cluster: str | None = None) -> dict[str, dict[int, str]]:
        return {"broker-a": {0: "a0:10911"}, "broker-b": {1: "b1:10911"}}

    async def read_sets(sets: object, fn: object) -> SetReads:
        return read

    monkeypatch.setattr(admin, "all_sets", all_sets)
    monkeypatch.setattr(admin, "read_sets", read_sets)
    return admin


A = SetRead("a0:10911", ReadSource.MASTER, {"G": SubscriptionGroupConfig(group_name="G")})


async def test_a_group_on_a_set_that_answered_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = admin_with(monkeypatch, SetReads({"broker-a": A}, [Unreachable("broker-b", None, "connection refused")]))
    assert [p.broker_name for p in (await admin.groups.subscription_group("G")).placements] == ["broker-a"]
    listed = await admin.groups.group_list()
    assert listed.unreachable == [Unreachable("broker-b", None, "connection refused")]


async def test_a_group_not_found_while_a_set_did_not_answer_is_not_known(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = admin_with(monkeypatch, SetReads({"broker-a": A}, [Unreachable("broker-b", None, "connection refused")]))
    with pytest.raises(UnreachableError, match="broker-b: connection refused"):
        await admin.groups.subscription_group("H")
    with pytest.raises(UnreachableError, match="broker-b"):
        await admin.overview.group_summaries(["H"])


async def test_a_group_not_found_on_a_slave_is_not_known(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = admin_with(monkeypatch, SetReads({"broker-a": A, "broker-b": SetRead("b1:10911", ReadSource.SLAVE, {})}, []))
    with pytest.raises(UnreachableError, match="broker-b: read from a slave"):
        await admin.groups.subscription_group("H")


async def test_a_group_every_master_answered_without_does_not_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = admin_with(monkeypatch, SetReads({"broker-a": A}, []))
    with pytest.raises(SubscriptionGroupNotExistError):
        await admin.groups.subscription_group("H")
