"""What a slave's metadata sync survives (slave_sync.py): a master's delay offsets that are not Java longs are
neither taken nor written, a step that fails in any way fails only itself and the loop goes on, a failing
step is logged through a limiter, and a registration result without a master stops the rounds."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.clientsupport import until

from mqtools.remoting.bodies import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingConnectError
from mqtools.remoting.timer import TimerCheckpointBody
from mqtools.server.broker.app import BrokerController
from mqtools.server.broker.config import BrokerConfig
from mqtools.server.broker.consumer_offsets import ConsumerOffsetManager
from mqtools.server.broker.pop.request_mode import MessageRequestModeManager
from mqtools.server.broker.registration import RegisterResult
from mqtools.server.broker.slave_sync import SlaveSynchronize
from mqtools.server.broker.subscription import SubscriptionGroupManager
from mqtools.server.broker.topic_config import TopicConfigManager
from mqtools.server.store.schedule import ScheduleMessageService

MASTER = "127.0.0.1:10911"
NOT_LONGS = [b'{"offsetTable":{"1":1e400}}', b'{"offsetTable":{"1":"9999999999999999999999"}}',
             b'{"offsetTable":{"1":9223372036854775808}}']


@dataclass
class FakeMaster:
    """The broker's RemotingClient as the sync uses it, answering as a master whose bodies a test sets."""

    topics: dict[str, TopicConfig] = field(default_factory=lambda: {"T1": TopicConfig("T1", 4, 4)})
    version: int = 1
    delay: bytes = b'{"offsetTable":{"1":5}}'
    fail: dict[int, Exception] = field(default_factory=dict)

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        if cmd.code in self.fail:
            raise self.fail[cmd.code]
        bodies = {
            RequestCode.GET_ALL_TOPIC_CONFIG: TopicConfigSerializeWrapper(
                topic_config_table=dict(self.topics), data_version=DataVersion(self.version, self.version)).to_json(),
            RequestCode.GET_ALL_CONSUMER_OFFSET: b'{"offsetTable":{}}',
            RequestCode.GET_ALL_DELAY_OFFSET: self.delay,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: b'{"subscriptionGroupTable":{}}',
            RequestCode.GET_ALL_MESSAGE_REQUEST_MODE: b"{}",
            RequestCode.GET_TIMER_CHECK_POINT: TimerCheckpointBody(1, 0, 2, 3, 0, 1, 1).encode(),
            RequestCode.GET_TIMER_METRICS: b'{"dataVersion":{"counter":1},"timingCount":{}}',
        }
        if cmd.code not in bodies:
            return cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "no")
        return cmd.response(ResponseCode.SUCCESS, body=bodies[cmd.code])


class BrokenTimer:
    """A slave's timer whose following of the master's checkpoint fails with what nobody expects."""

    dequeue_running = False
    metrics = SimpleNamespace(dirty=False)

    async def follow_master(self, read_time_ms: int, queue_offset: int, version: object) -> None:
        raise RuntimeError("a bug in the timer")

    def follow_master_metrics(self, timing_count: dict[str, tuple[int, int]], version: object) -> None:
        """Nothing to follow in these tests."""


def slave(root: Path, client: FakeMaster, timer: object = None) -> SimpleNamespace:
    cfg = BrokerConfig(broker_name="broker-x", store_path_root_dir=str(root))
    root.mkdir(parents=True, exist_ok=True)
    return SimpleNamespace(
        config=cfg, topics=TopicConfigManager(root, cfg), offsets=ConsumerOffsetManager(root),
        groups=SubscriptionGroupManager(root, time.time), schedule=ScheduleMessageService(None, root),
        request_modes=MessageRequestModeManager(root), timer=timer, client=client, broker_addr="127.0.0.1:1",
        master_addr=MASTER)


@pytest.mark.parametrize("body", NOT_LONGS)
async def test_a_delay_body_that_is_not_java_longs_is_neither_taken_nor_written(tmp_path: Path,
                                                                               body: bytes) -> None:
    broker = slave(tmp_path, FakeMaster(delay=body))
    broker.schedule.offset_table = {1: 3}
    broker.schedule.persist()
    before = broker.schedule.path.read_bytes()
    sync = SlaveSynchronize(broker)  # type: ignore[arg-type]
    assert not await sync.sync_all()  # the round failed, and said so, without raising
    assert broker.schedule.path.read_bytes() == before and broker.schedule.offset_table == {1: 3}
    assert "T1" in broker.topics.table  # the other items were taken
    broker.client.delay = b'{"offsetTable":{"1":9223372036854775807}}'
    assert await sync.sync_all()
    assert broker.schedule.offset_table == {1: 2**63 - 1}
    assert broker.schedule.path.read_bytes() == broker.client.delay


@pytest.mark.parametrize("body", NOT_LONGS)
def test_a_stored_delay_file_with_a_value_not_a_long_is_a_bad_file(tmp_path: Path, body: bytes) -> None:
    schedule = ScheduleMessageService(None, tmp_path)
    schedule.path.write_bytes(body)
    assert not schedule.load() and schedule.offset_table == {}  # a bad file, not an error that stops start-up
    schedule.path.with_name(schedule.path.name + ".bak").write_bytes(b'{"offsetTable":{"1":4}}')
    assert schedule.load() and schedule.offset_table == {1: 4}  # as any bad file: the backup is taken


async def test_the_loop_goes_on_after_steps_that_fail_in_any_way(tmp_path: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    master = FakeMaster(fail={RequestCode.GET_ALL_DELAY_OFFSET: OverflowError("cannot convert float infinity")})
    broker = slave(tmp_path, master, BrokenTimer())
    sync = SlaveSynchronize(broker, interval=0.05, first_delay=0.0, timer_interval=0.01)  # type: ignore[arg-type]
    sync.start()
    try:
        await until(lambda: sync.rounds >= 2, 10, "two rounds")
        master.topics["T2"] = TopicConfig("T2", 4, 4)
        master.version = 2
        await until(lambda: "T2" in broker.topics.table, 10, "the master's new topic on the slave")
        assert sync._task is not None and not sync._task.done()
    finally:
        await sync.shutdown()
    failed = [r for r in caplog.records if r.name == "mq.broker.slave_sync"]
    assert {r.exc_info[0] for r in failed if r.exc_info} == {OverflowError, RuntimeError}  # a bug shows its trace


async def test_a_master_that_does_not_answer_is_logged_a_line_a_minute_per_item(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    down = RemotingConnectError(MASTER, "refused")
    master = FakeMaster(fail=dict.fromkeys(
        (RequestCode.GET_ALL_TOPIC_CONFIG, RequestCode.GET_ALL_CONSUMER_OFFSET, RequestCode.GET_ALL_DELAY_OFFSET,
         RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE), down))
    sync = SlaveSynchronize(slave(tmp_path, master))  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, "mq.broker.slave_sync"):
        for _ in range(6):  # a minute of rounds
            assert not await sync.sync_all()
    assert len([r for r in caplog.records if r.name == "mq.broker.slave_sync"]) == 5


def _answer(controller: BrokerController, result: RegisterResult) -> None:
    """A name server's answer as the registrar hands it over: kept as that name server's last, then told."""
    controller.registrar.last[result.namesrv] = result
    controller._on_register_result(result)


def test_a_registration_result_without_a_master_clears_the_master(tmp_path: Path) -> None:
    controller = BrokerController(BrokerConfig(broker_role="SLAVE", broker_id=1, store_path_root_dir=str(tmp_path)))
    _answer(controller, RegisterResult("ns:1", True, MASTER))
    assert controller.master_addr == MASTER
    _answer(controller, RegisterResult("ns:1", False, None, error="timed out"))
    assert controller.master_addr == MASTER  # a name server that did not answer says nothing about the master
    _answer(controller, RegisterResult("ns:1", True, None))
    assert controller.master_addr is None  # the master left the route: Apache's setMasterAddr(null)


def test_one_name_server_that_does_not_list_the_master_does_not_clear_it(tmp_path: Path) -> None:
    """Each name server answers on its own: one restarted (the master not registered to it yet) said no master
    after the other had named it, and the slave skipped its sync rounds as long."""
    controller = BrokerController(BrokerConfig(broker_role="SLAVE", broker_id=1, store_path_root_dir=str(tmp_path)))
    _answer(controller, RegisterResult("ns:1", True, MASTER))
    _answer(controller, RegisterResult("ns:2", True, None))
    assert controller.master_addr == MASTER
    _answer(controller, RegisterResult("ns:1", True, None))
    assert controller.master_addr is None  # no name server names it any more
