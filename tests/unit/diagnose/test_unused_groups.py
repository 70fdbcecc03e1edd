"""`mq admin diagnose` of a cluster counts the groups configured and never used (no offsets anywhere, nobody
online) without judging them; a group of which that could not be read is judged, so its verdict says it is not
known (a group whose set's master was killed, the slave not knowing it yet, was counted as never used)."""

from __future__ import annotations

import pytest

from mqtools.client.admin import MQAdmin
from mqtools.client.admin.models.groups import ConsumerProgress, GroupCatalogue, GroupConnections, GroupEntry
from mqtools.client.errors import ConsumerNotOnlineError, RequestTimeoutError, TopicNotExistError
from mqtools.common.exitcodes import EXIT_UNREACHABLE
from mqtools.common.presentation import Unreachable
from mqtools.diagnose.cluster import diagnose_cluster
from mqtools.diagnose.findings import Severity
from mqtools.remoting.bodies import ClusterInfo

LOST = Unreachable("broker-a", "a1:10911", "no master answering; the slave does not know the group yet")
PROGRESS = {"G-unused": ConsumerProgress("G-unused"), "G-unread": ConsumerProgress("G-unread", unreachable=[LOST]),
            "G-silent": ConsumerProgress("G-silent")}


async def test_a_group_whose_offsets_were_not_read_is_judged_not_known(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = MQAdmin("127.0.0.1:9876")

    async def cluster_info() -> ClusterInfo:
        return ClusterInfo()

    async def group_list() -> GroupCatalogue:
        return GroupCatalogue([GroupEntry(g, []) for g in sorted(PROGRESS)])

    async def consumer_progress(group: str, topic: str | None = None, **_: object) -> ConsumerProgress:
        return PROGRESS[group]

    async def consumer_connections(group: str) -> GroupConnections:
        if group == "G-silent":  # whether a member is online is not known
            raise RequestTimeoutError("b0:10911 timed out")
        raise ConsumerNotOnlineError(206, f"the consumer group[{group}] not online")

    async def queue_bounds(topic: str, **_: object) -> dict:
        raise TopicNotExistError(17, topic)

    async def namesrv_probe() -> list:
        return []

    monkeypatch.setattr(admin, "cluster_info", cluster_info)
    monkeypatch.setattr(admin.groups, "group_list", group_list)
    monkeypatch.setattr(admin.groups, "consumer_progress", consumer_progress)
    monkeypatch.setattr(admin.groups, "consumer_connections", consumer_connections)
    monkeypatch.setattr(admin.queue_offsets, "queue_bounds", queue_bounds)
    monkeypatch.setattr(admin.namesrv_probes, "namesrv_probe", namesrv_probe)
    diagnosis = await diagnose_cluster(admin, 0.0)
    assert diagnosis.unused_groups == ["G-unused"]
    assert [(i.kind, i.name, i.severity) for i in diagnosis.items] == [("group", "G-silent", Severity.UNKNOWN),
                                                                        ("group", "G-unread", Severity.UNKNOWN)]
    assert str(LOST) in diagnosis.items[1].summary and diagnosis.exit_code == EXIT_UNREACHABLE
