"""`controller metadata` with a controller that does not answer: the others' views, the silent one named."""

from __future__ import annotations

import pytest

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.models.controller import ControllerMetadata, controller_metadata_view
from mqtools.client.errors import MQBrokerError, RequestTimeoutError
from mqtools.common.presentation import Unreachable


async def each(failures: dict[str, Exception]) -> tuple[list[ControllerMetadata], list[Unreachable]]:
    admin = MQAdmin("127.0.0.1:9876")

    async def metadata(addr: str) -> ControllerMetadata:
        if addr in failures:
            raise failures[addr]
        return ControllerMetadata(addr, "g", "n0", "c0:9878", addr == "c0:9878", {"n0": "c0:9878"})

    admin.controllers.metadata = metadata  # type: ignore[method-assign]
    try:
        return await admin.controllers.metadata_each(["c0:9878", "c1:9878", "c2:9878"])
    finally:
        await admin.close()


async def test_a_hung_controller_is_named_and_the_others_are_read() -> None:
    got, missed = await each({"c2:9878": RequestTimeoutError("slow")})
    assert [m.address for m in got] == ["c0:9878", "c1:9878"]
    assert missed == [Unreachable(None, "c2:9878", "timed out")]
    view = controller_metadata_view(got, missed)
    assert view.partial and view.document()["unreachable"] == [
        {"brokerName": None, "addr": "c2:9878", "reason": "timed out"}]


async def test_no_controller_answering_raises_and_a_refusal_raises() -> None:
    with pytest.raises(RequestTimeoutError):
        await each(dict.fromkeys(("c0:9878", "c1:9878", "c2:9878"), RequestTimeoutError("slow")))
    with pytest.raises(MQBrokerError):
        await each({"c1:9878": MQBrokerError(1, "no")})
