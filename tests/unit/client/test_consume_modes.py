"""Consume modes read per broker set: what `group status` and `mq top` mark as POP, and when they cannot tell."""

from __future__ import annotations

from typing import Any

from mqtools.client.admin.base import SetRead, SetReads
from mqtools.client.admin.consume_modes import ConsumeModeAdmin
from mqtools.client.errors import MQBrokerError
from mqtools.common.presentation import Unreachable
from mqtools.remoting.assignment import MessageRequestModeTable, SetMessageRequestModeRequestBody


class Admin:
    """Only what ConsumeModeAdmin asks of MQAdmin: the sets, and one read per set (a value or a refusal)."""

    def __init__(self, reads: dict[str, Any] | Exception) -> None:
        self.reads = reads

    async def all_sets(self, cluster: str | None = None) -> dict[str, dict[int, str]]:
        return {"a": {0: "m-a"}, "b": {0: "m-b"}}

    async def read_sets(self, sets: Any, read: Any) -> SetReads:
        if isinstance(self.reads, Exception):
            raise self.reads
        return SetReads({n: SetRead(f"m-{n}", "master", v) for n, v in self.reads.items() if v != "gone"},
                        [Unreachable(n, f"m-{n}", "timed out") for n, v in self.reads.items() if v == "gone"])


def table(**modes: str) -> MessageRequestModeTable:
    return MessageRequestModeTable({"T": {g: SetMessageRequestModeRequestBody("T", g, m) for g, m in modes.items()}})


async def test_pop_groups_across_sets_and_a_rocketmq_4_broker() -> None:
    admin = ConsumeModeAdmin(Admin({"a": table(G1="POP", G2="PULL"), "b": None}))  # type: ignore[arg-type]
    assert await admin.pop_groups() == {"G1"}


async def test_pop_groups_unknown_when_nobody_answers_or_a_broker_refuses() -> None:
    assert await ConsumeModeAdmin(Admin({"a": "gone", "b": "gone"})).pop_groups() is None  # type: ignore[arg-type]
    refused = Admin(MQBrokerError(16, "no permission"))
    assert await ConsumeModeAdmin(refused).pop_groups() is None  # type: ignore[arg-type]


async def test_consume_modes_per_set_with_their_origin() -> None:
    admin = ConsumeModeAdmin(Admin({"a": table(G1="POP"), "b": None, "c": "gone"}))  # type: ignore[arg-type]
    modes = await admin.consume_modes("G1", "T")
    assert [(m.broker_name, m.mode, m.origin) for m in modes.modes] == [("a", "POP", "set"),
                                                                         ("b", "PULL", "no POP (RocketMQ 4)")]
    assert [u.broker_name for u in modes.unreachable] == ["c"]
    other = await admin.consume_modes("G2", "T")
    assert (other.modes[0].broker_name, other.modes[0].mode, other.modes[0].origin) == ("a", "PULL", "default")
