"""The refresh round's plan: a drilled-into group is read once a round, and that read is its verdict's sample
when one is due (an admin that records its calls; the rounds run against it as against a cluster)."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

from mqtools.client.admin.models.groups import ConsumerProgress, QueueProgress
from mqtools.client.errors import ConsumerNotOnlineError, TopicNotExistError
from mqtools.diagnose.group import GroupSample, QueueSample
from mqtools.live.collect import Collector, GroupDetail, Wanted
from mqtools.live.state import Outcome
from mqtools.remoting.bodies import MessageQueue

QUEUE = MessageQueue("T", "broker-a", 0)


class RecordingAdmin:
    """Answers as a cluster with one offline group of one queue would, and counts each call."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        # the areas the collector asks (admin.cluster.cluster_snapshot, admin.groups.consumer_progress, ...)
        self.cluster = self.namesrv_probes = self.groups = self.queue_offsets = self

    async def cluster_snapshot(self, runtime: bool) -> Any:
        return SimpleNamespace(brokers=[])

    async def namesrv_probe(self) -> None:
        return None

    async def consumer_progress(self, group: str) -> ConsumerProgress:
        self.calls["consumer_progress"] += 1
        return ConsumerProgress(group, [QueueProgress(QUEUE, 10, 4, None)])

    async def consumer_connections(self, group: str) -> Any:
        self.calls["consumer_connections"] += 1
        raise ConsumerNotOnlineError(ConsumerNotOnlineError.CODE, "not online")

    async def queue_bounds(self, topic: str) -> Any:
        self.calls["queue_bounds"] += 1
        raise TopicNotExistError(TopicNotExistError.CODE, f"no {topic}")


async def test_a_drilled_group_is_read_once_a_round_and_that_read_is_its_sample_when_due() -> None:
    admin = RecordingAdmin()
    outcomes: list[Outcome] = []
    collector = Collector(admin, outcomes.append)  # type: ignore[arg-type]
    wanted = Wanted(group_details=("G",))

    await collector.round(wanted)
    assert admin.calls == {"consumer_progress": 1, "consumer_connections": 1, "queue_bounds": 1}
    by_key = {o.key: o for o in outcomes}
    sample, detail = by_key["sample:G"].value, by_key["group:G"].value
    assert isinstance(sample, GroupSample) and sample.queues == {QUEUE: QueueSample(10, 4, None)}
    assert sample.members == [] and sample.dlq_offset == 0
    assert isinstance(detail, GroupDetail) and detail.connections is None and detail.progress.total_diff == 6

    outcomes.clear()
    await collector.round(wanted)  # the next sample is not due yet: the detail alone, without the DLQ's size
    assert admin.calls == {"consumer_progress": 2, "consumer_connections": 2, "queue_bounds": 1}
    assert [o.key for o in outcomes if o.key.endswith(":G")] == ["group:G"]
