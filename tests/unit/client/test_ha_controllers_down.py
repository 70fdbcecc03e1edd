"""Controller mode with the controllers down: `ha ready` cannot tell (nobody could elect a new master), and
`ha status` is partial, naming the controllers that did not answer."""

from __future__ import annotations

from support.documents import check

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.models.controller import ControllerMetadata
from mqtools.client.admin.models.ha import (
    SAFE,
    UNKNOWN,
    ControllerState,
    ReplicationGroup,
    SlaveReplication,
    SlaveView,
)
from mqtools.client.admin.models.ha_readiness import assess
from mqtools.client.admin.models.ha_views import ha_ready_view, ha_status_view
from mqtools.client.errors import ConnectFailedError, RequestTimeoutError
from mqtools.common.exitcodes import EXIT_UNREACHABLE
from mqtools.common.presentation import Unreachable

CONTROLLERS = ["c0:9878", "c1:9878"]
DOWN = [Unreachable(None, "c0:9878", "connection refused"), Unreachable(None, "c1:9878", "timed out")]
SLAVE = SlaveView("10.0.0.2:10911", 1, "10.0.0.1:10912", 1000, 2048.0, None, None, True)
IN_SYNC = SlaveReplication("10.0.0.2:50001", 1000, 0, 0, 2048.0, 0.0, True, "steady", 0, [], SLAVE)


def group(name: str, controller: ControllerState) -> ReplicationGroup:
    return ReplicationGroup("C", name, "10.0.0.1:10911", "SYNC_MASTER", 1000, 1, 100.0, 2.0, [IN_SYNC],
                            controller=controller)


async def test_controllers_that_do_not_answer_are_named_in_the_groups_controller_state(admin: MQAdmin) -> None:
    async def metadata(addr: str) -> ControllerMetadata:
        if addr == "c0:9878":
            raise ConnectFailedError("connect to c0:9878 failed", "connection refused")
        raise RequestTimeoutError("slow")

    admin.controllers.metadata = metadata  # type: ignore[method-assign]
    state = await admin.ha._controller_state("broker-a", {"enableControllerMode": "true",
                                                          "controllerAddr": ";".join(CONTROLLERS)})
    assert state is not None and state.error is not None
    assert state.unreachable == DOWN


def test_ha_status_with_the_controllers_down_is_partial_naming_them_once() -> None:
    """Two groups behind the same controllers: each controller is named once (it was partial false, exit 0)."""
    down = ControllerState(CONTROLLERS, None, None, [], None, error="no controller answered", unreachable=DOWN)
    view = ha_status_view([group("broker-a", down), group("broker-b", down)], 2.0)
    doc = check(view)
    assert doc["partial"] is True
    assert doc["unreachable"] == [u.to_json() for u in DOWN]
    assert doc["groups"][0]["controller"]["masterEpoch"] is None


def test_ha_ready_with_the_controllers_down_is_unknown_exit_3() -> None:
    """Stopping the master would leave the set without one: nobody can elect (it said SAFE, exit 0)."""
    down = ControllerState(CONTROLLERS, None, None, [], None, error="no controller answered")
    r = assess(group("broker-a", down))
    assert r.verdict == UNKNOWN and r.safe is None
    assert [(c.name, c.ok) for c in r.checks] == [("master reachable", True), ("controllers reachable", False)]
    doc = check(ha_ready_view(r, 2.0))
    assert doc["exitCode"] == EXIT_UNREACHABLE and doc["verdict"] == "unknown"
    answering = ControllerState(CONTROLLERS, 0, 3, [0, 1], 4)
    assert assess(group("broker-a", answering)).verdict == SAFE
