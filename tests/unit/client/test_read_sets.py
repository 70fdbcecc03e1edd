"""Reads of a broker set go to its master, else a slave; what no replica answered for is named."""

from __future__ import annotations

from mqtools.client.admin.base import AdminBase
from mqtools.client.errors import ConnectFailedError, MQBrokerError, RequestTimeoutError
from mqtools.common.presentation import Unreachable

SETS = {"a": {0: "m-a", 1: "s-a"}, "b": {1: "s-b"}, "c": {0: "m-c"}, "d": {0: "m-d", 2: "s-d"}, "e": {}}
DEAD = {"m-a": ConnectFailedError("connect to m-a failed: [Errno 111] Connection refused", "connection refused"),
        "m-c": RequestTimeoutError("slow"), "m-d": RequestTimeoutError("slow"),
        "s-d": ConnectFailedError("connect to s-d failed: [Errno 111] Connection refused", "connection refused")}


async def test_master_else_slave_and_the_rest_named() -> None:
    asked: list[str] = []

    async def read(addr: str) -> str:
        asked.append(addr)
        if addr in DEAD:
            raise DEAD[addr]
        return f"from {addr}"

    admin = AdminBase("127.0.0.1:9876")
    try:
        got = await admin.read_sets(SETS, read)
    finally:
        await admin.close()
    assert {n: (r.addr, r.source, r.value) for n, r in got.reads.items()} == {
        "a": ("s-a", "slave", "from s-a"), "b": ("s-b", "slave", "from s-b")}
    assert got.unreachable == [
        Unreachable("c", "m-c", "timed out"),
        Unreachable("d", "m-d", "timed out; slave s-d: connection refused"),
        Unreachable("e", None, "not registered")]
    assert got.from_slaves() == ["a", "b"]
    assert asked.index("m-a") < asked.index("s-a")  # the master first


async def test_a_master_that_refuses_is_an_answer_not_a_fallback() -> None:
    async def read(addr: str) -> str:
        raise MQBrokerError(1, "no")

    admin = AdminBase("127.0.0.1:9876")
    try:
        try:
            await admin.read_sets({"a": {0: "m", 1: "s"}}, read)
        except MQBrokerError:
            pass
        else:
            raise AssertionError("a refusal must not fall back to the slave")
    finally:
        await admin.close()


async def test_a_set_without_master_says_so_when_its_slave_is_silent_too() -> None:
    async def read(addr: str) -> str:
        raise RequestTimeoutError("slow")

    admin = AdminBase("127.0.0.1:9876")
    try:
        got = await admin.read_sets({"a": {1: "s"}}, read)
    finally:
        await admin.close()
    assert got.unreachable == [Unreachable("a", "s", "no master registered; slave s: timed out")]
