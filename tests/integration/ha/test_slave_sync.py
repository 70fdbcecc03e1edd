"""SlaveSynchronize rules against a loopback "master" serving real managers' bodies.

Topic configs and groups are replaced only when the master's dataVersion differs; consumer
offsets are merged every round (master wins, slave-only entries survive); delay offsets are
written verbatim and reloaded; the message request modes are replaced (and a master that does not
know the request, as RocketMQ 4, leaves them alone without failing the round); a slave's timer follows its
master's checkpoint and pending counts (a master without a timer, or that does not know the requests, fails
no round).
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

from mqtools.remoting.assignment import SetMessageRequestModeRequestBody
from mqtools.remoting.bodies import SubscriptionGroupConfig, TopicConfig
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.server import RemotingServer
from mqtools.server.broker.config import BrokerConfig
from mqtools.server.broker.consumer_offsets import ConsumerOffsetManager
from mqtools.server.broker.pop.request_mode import MessageRequestModeManager
from mqtools.server.broker.slave_sync import SlaveSynchronize
from mqtools.server.broker.subscription import SubscriptionGroupManager
from mqtools.server.broker.topic_config import TopicConfigManager
from mqtools.server.store.schedule import ScheduleMessageService


def managers(root: Path) -> SimpleNamespace:
    cfg = BrokerConfig(broker_name="broker-x", store_path_root_dir=str(root))
    root.mkdir(parents=True, exist_ok=True)
    return SimpleNamespace(
        config=cfg, topics=TopicConfigManager(root, cfg), offsets=ConsumerOffsetManager(root),
        groups=SubscriptionGroupManager(root, time.time), schedule=ScheduleMessageService(None, root),
        request_modes=MessageRequestModeManager(root), timer=None)


async def serve_master(master: SimpleNamespace, *, modes: bool = True) -> RemotingServer:
    server = RemotingServer("127.0.0.1", 0)
    if modes:  # RocketMQ 5's; a 4.x master answers REQUEST_CODE_NOT_SUPPORTED
        server.register(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE,
                        lambda c, r: r.response(body=master.request_modes.encode()))
    server.register(RequestCode.GET_ALL_TOPIC_CONFIG, lambda c, r: r.response(body=master.topics.encode()))
    server.register(RequestCode.GET_ALL_CONSUMER_OFFSET, lambda c, r: r.response(body=master.offsets.encode()))
    server.register(RequestCode.GET_ALL_DELAY_OFFSET, lambda c, r: r.response(body=master.schedule.encode()))
    server.register(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
                    lambda c, r: r.response(body=master.groups.encode()))
    await server.start()
    return server


async def test_sync_rules(tmp_path: Path) -> None:
    master = managers(tmp_path / "master")
    master.topics.update(TopicConfig("OnlyOnMaster", 4, 4))
    master.offsets.commit_offset("c", "G", "T", 0, 42)
    master.groups.update(SubscriptionGroupConfig("GroupM"))
    master.schedule.offset_table = {1: 7, 3: 9}
    master.request_modes.set(SetMessageRequestModeRequestBody("T", "G", "POP", 1))
    server = await serve_master(master)
    slave = managers(tmp_path / "slave")
    slave.offsets.commit_offset("c", "G", "T", 0, 5)
    slave.offsets.commit_offset("c", "SlaveOnly", "T", 1, 3)
    client = RemotingClient()
    controller = SimpleNamespace(**vars(slave), client=client, broker_addr="127.0.0.1:1",
                                 master_addr=f"127.0.0.1:{server.port}")
    sync = SlaveSynchronize(controller)
    try:
        assert await sync.sync_all()
        assert "OnlyOnMaster" in slave.topics.table and slave.topics.data_version == master.topics.data_version
        assert slave.offsets.query_offset("G", "T", 0) == 42  # master wins on common keys
        assert slave.offsets.query_offset("SlaveOnly", "T", 1) == 3  # slave-only entries survive
        assert "GroupM" in slave.groups.table
        assert slave.schedule.offset_table == {1: 7, 3: 9}
        assert (tmp_path / "slave" / "delayOffset.json").read_bytes() == master.schedule.encode()
        assert ConsumerOffsetManager(tmp_path / "slave").load()  # persisted
        assert slave.request_modes.get("T", "G") == SetMessageRequestModeRequestBody("T", "G", "POP", 1)
        again = MessageRequestModeManager(tmp_path / "slave")
        assert again.load() and again.get("T", "G") is not None  # persisted

        # same dataVersion: a local topic edit is not overwritten; a new master version replaces it
        slave.topics.table["LocalOnly"] = TopicConfig("LocalOnly")
        await sync.sync_all()
        assert "LocalOnly" in slave.topics.table
        master.topics.update(TopicConfig("Second", 2, 2))
        await sync.sync_all()
        assert "LocalOnly" not in slave.topics.table and "Second" in slave.topics.table
    finally:
        await client.close()
        await server.shutdown()


async def test_no_master_or_self_means_no_sync(tmp_path: Path) -> None:
    slave = managers(tmp_path / "slave")
    controller = SimpleNamespace(**vars(slave), client=None, broker_addr="127.0.0.1:1", master_addr=None)
    sync = SlaveSynchronize(controller)
    assert not await sync.sync_all()
    controller.master_addr = "127.0.0.1:1"
    assert not await sync.sync_all() and sync.rounds == 0


async def test_unreachable_master_is_survived(tmp_path: Path) -> None:
    slave = managers(tmp_path / "slave")
    client = RemotingClient()
    controller = SimpleNamespace(**vars(slave), client=client, broker_addr="127.0.0.1:1",
                                 master_addr="127.0.0.1:9")  # nothing listens on port 9
    try:
        assert not await SlaveSynchronize(controller, timeout=1.0).sync_all()
    finally:
        await client.close()


async def test_a_master_without_request_modes_fails_no_round(tmp_path: Path) -> None:
    master = managers(tmp_path / "master")
    server = await serve_master(master, modes=False)
    slave = managers(tmp_path / "slave")
    slave.request_modes.set(SetMessageRequestModeRequestBody("T", "G", "POP", 0))
    client = RemotingClient()
    controller = SimpleNamespace(**vars(slave), client=client, broker_addr="127.0.0.1:1",
                                 master_addr=f"127.0.0.1:{server.port}")
    try:
        assert await SlaveSynchronize(controller).sync_all()
        assert slave.request_modes.get("T", "G") is not None  # left alone
    finally:
        await client.close()
        await server.shutdown()


class FollowingTimer:
    """What SlaveSynchronize hands a slave's timer: the master's checkpoint and pending counts, recorded."""

    def __init__(self) -> None:
        self.dequeue_running = False
        self.checkpoints: list[tuple[int, int, int]] = []
        self.counts: list[dict[str, tuple[int, int]]] = []
        self.metrics = SimpleNamespace(dirty=False)

    async def follow_master(self, read_time_ms: int, queue_offset: int, version) -> None:
        self.checkpoints.append((read_time_ms, queue_offset, version.counter))

    def follow_master_metrics(self, timing_count: dict[str, tuple[int, int]], version: dict[str, int]) -> None:
        self.counts.append(timing_count)


async def test_a_slave_takes_its_masters_timer_checkpoint_and_counts_and_asks_a_rocketmq_4_master_once(
        tmp_path: Path) -> None:
    from mqtools.remoting.timer import TimerCheckpointBody

    master = managers(tmp_path / "master")
    server = await serve_master(master)
    checkpoint = TimerCheckpointBody(1_700_000_003_000, 0, 40, 42, 0, 1_700_000_000_000, 9).encode()
    metrics = b'{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1},"timingCount":{"T":{"count":2,"timeStamp":5}}}'

    server.register(RequestCode.GET_TIMER_CHECK_POINT, lambda c, r: r.response(body=checkpoint))
    server.register(RequestCode.GET_TIMER_METRICS, lambda c, r: r.response(body=metrics))
    slave = managers(tmp_path / "slave")
    slave.timer = FollowingTimer()
    client = RemotingClient()
    controller = SimpleNamespace(**vars(slave), client=client, broker_addr="127.0.0.1:1",
                                 master_addr=f"127.0.0.1:{server.port}")
    try:
        sync = SlaveSynchronize(controller)
        assert await sync.sync_all()
        assert slave.timer.checkpoints == [(1_700_000_003_000, 42, 9)] and slave.timer.counts == [{"T": (2, 5)}]
        await sync._timer_checkpoint_quietly()  # the 3 s step between rounds
        assert len(slave.timer.checkpoints) == 2
    finally:
        await server.shutdown()
    off = managers(tmp_path / "no-timer-master")  # timerWheelEnable=false: SYSTEM_ERROR, as Apache answers
    server = await serve_master(off)
    for code in (RequestCode.GET_TIMER_CHECK_POINT, RequestCode.GET_TIMER_METRICS):
        server.register(code, lambda c, r: r.response(ResponseCode.SYSTEM_ERROR, "The checkpoint is null"))
    controller.master_addr = f"127.0.0.1:{server.port}"
    try:
        assert await sync.sync_all()  # nothing to follow, and not a failed round
        assert len(slave.timer.checkpoints) == 2 and sync._no_timer is None
    finally:
        await server.shutdown()
    old = managers(tmp_path / "old-master")  # RocketMQ 4: REQUEST_CODE_NOT_SUPPORTED for both
    server = await serve_master(old, modes=False)
    controller.master_addr = f"127.0.0.1:{server.port}"
    try:
        assert await sync.sync_all() and await sync.sync_all()  # not a failed round
        await sync._timer_checkpoint_quietly()
        assert len(slave.timer.checkpoints) == 2 and sync._no_timer == controller.master_addr
    finally:
        await client.close()
        await server.shutdown()
