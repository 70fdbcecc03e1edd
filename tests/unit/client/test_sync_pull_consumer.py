"""SyncPullConsumer, the blocking pull API Spark executors use, over a fake transport.

The fake broker keeps one queue (T on broker-a, queue 0) of five messages tagged A, B, A,
B, A and a committed-offset table, and answers PULL_MESSAGE, QUERY/UPDATE_CONSUMER_OFFSET
and GET_MAX_OFFSET the way a broker does. No socket, no process: the consumer's own loop
thread is the only thing running besides the test.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from unit.client.fake_remoting import FakeRemoting, fake_instance, route_data

from mqtools.client.client_api import FLAG_SUBSCRIPTION
from mqtools.client.errors import MQBrokerError
from mqtools.client.sync import SyncPullConsumer
from mqtools.client.types import PullStatus
from mqtools.common import properties as P
from mqtools.common.codec import encode_stored
from mqtools.common.message import MessageExt
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand

MQ = MessageQueue("T", "broker-a", 0)
TAGS = ["A", "B", "A", "B", "A"]


class FakeBroker:
    """broker-a's answers for queue T/0, plus the thread each request ran on."""

    def __init__(self) -> None:
        self.log = [self._stored(i, tag) for i, tag in enumerate(TAGS)]
        self.committed: dict[tuple[str, str, int], int] = {}
        self.threads: set[threading.Thread] = set()
        self.fail_pulls_with: int | None = None

    @staticmethod
    def _stored(offset: int, tag: str) -> bytes:
        msg = MessageExt("T", f"body-{offset}".encode(), properties={P.TAGS: tag}, queue_offset=offset,
                         commit_log_offset=4096 + offset * 200, store_host=("10.0.0.1", 10911))
        return encode_stored(msg)

    async def __call__(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        self.threads.add(threading.current_thread())
        ext = cmd.ext_fields
        if cmd.code == RequestCode.PULL_MESSAGE:
            return self._pull(cmd, int(ext["queueOffset"]), int(ext["maxMsgNums"]))
        key = (ext.get("consumerGroup", ""), ext["topic"], int(ext["queueId"]))
        if cmd.code == RequestCode.QUERY_CONSUMER_OFFSET:
            if key not in self.committed:
                return cmd.response(ResponseCode.QUERY_NOT_FOUND, "not found")
            return cmd.response(ext_fields={"offset": str(self.committed[key])})
        if cmd.code == RequestCode.UPDATE_CONSUMER_OFFSET:
            self.committed[key] = int(ext["commitOffset"])
            return cmd.response()
        if cmd.code == RequestCode.GET_MAX_OFFSET:
            return cmd.response(ext_fields={"offset": str(len(self.log))})
        return cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "fake broker")

    def _pull(self, cmd: RemotingCommand, offset: int, max_nums: int) -> RemotingCommand:
        if self.fail_pulls_with is not None:
            return cmd.response(self.fail_pulls_with, "scripted failure")
        end = len(self.log)
        bounds = {"minOffset": "0", "maxOffset": str(end), "suggestWhichBrokerId": "0"}
        if offset > end:
            return cmd.response(ResponseCode.PULL_OFFSET_MOVED, "moved", {**bounds, "nextBeginOffset": str(end)})
        if offset == end:
            return cmd.response(ResponseCode.PULL_NOT_FOUND, "none", {**bounds, "nextBeginOffset": str(end)})
        batch = self.log[offset:offset + max_nums]
        return cmd.response(ext_fields={**bounds, "nextBeginOffset": str(offset + len(batch))}, body=b"".join(batch))


@pytest.fixture
def broker() -> FakeBroker:
    return FakeBroker()


@pytest.fixture
def remoting(broker: FakeBroker) -> FakeRemoting:
    return FakeRemoting({"T": route_data({"broker-a": 2, "broker-b": 2})}, broker)


@pytest.fixture
def consumer(remoting: FakeRemoting) -> Iterator[SyncPullConsumer]:
    with SyncPullConsumer("spark-group", instance=fake_instance(remoting)) as c:
        yield c


def test_fetch_queues_lists_every_readable_queue_of_the_route(consumer: SyncPullConsumer) -> None:
    assert consumer.fetch_queues("T") == [MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1),
                                          MessageQueue("T", "broker-b", 0), MessageQueue("T", "broker-b", 1)]


def test_pull_returns_a_batch_from_the_offset(consumer: SyncPullConsumer, remoting: FakeRemoting) -> None:
    result = consumer.pull(MQ, "*", 1, max_nums=3)
    assert (result.status, result.next_begin_offset, result.min_offset, result.max_offset) == (
        PullStatus.FOUND, 4, 0, 5)
    assert [(m.queue_offset, m.body, m.tags, m.commit_log_offset) for m in result.messages] == [
        (1, b"body-1", "B", 4296), (2, b"body-2", "A", 4496), (3, b"body-3", "B", 4696)]
    [sent] = remoting.broker_requests(RequestCode.PULL_MESSAGE)
    assert sent.addr == "broker-a:10911"
    assert sent.timeout == 3.0
    assert {k: sent.cmd.ext_fields[k] for k in ("consumerGroup", "queueOffset", "maxMsgNums", "sysFlag",
                                                "commitOffset", "suspendTimeoutMillis", "subscription")} == {
        "consumerGroup": "spark-group", "queueOffset": "1", "maxMsgNums": "3", "sysFlag": str(FLAG_SUBSCRIPTION),
        "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*"}


def test_pull_keeps_only_the_subscribed_tags_but_moves_past_the_rest(consumer: SyncPullConsumer) -> None:
    result = consumer.pull(MQ, "A", 0)
    assert [m.queue_offset for m in result.messages] == [0, 2, 4]
    assert result.next_begin_offset == 5


def test_pull_at_the_end_and_past_it(consumer: SyncPullConsumer) -> None:
    at_end = consumer.pull(MQ, "*", 5)
    assert (at_end.status, at_end.next_begin_offset, at_end.messages) == (PullStatus.NO_NEW_MSG, 5, [])
    past = consumer.pull(MQ, "*", 9)
    assert (past.status, past.next_begin_offset, past.messages) == (PullStatus.OFFSET_ILLEGAL, 5, [])


def test_a_broker_error_reaches_the_calling_thread(consumer: SyncPullConsumer, broker: FakeBroker) -> None:
    broker.fail_pulls_with = ResponseCode.SYSTEM_ERROR
    with pytest.raises(MQBrokerError) as caught:
        consumer.pull(MQ, "*", 0)
    assert (caught.value.code, caught.value.remark) == (ResponseCode.SYSTEM_ERROR, "scripted failure")


def test_offsets_are_read_and_committed_on_the_broker(consumer: SyncPullConsumer, broker: FakeBroker) -> None:
    """No route lookup first: a Spark executor handed a queue may commit before it ever pulls."""
    consumer.commit_offset(MQ, 3)
    assert broker.committed == {("spark-group", "T", 0): 3}
    broker.committed.clear()
    assert consumer.fetch_offset(MQ) is None
    consumer.commit_offset(MQ, 3)
    assert broker.committed == {("spark-group", "T", 0): 3}
    assert consumer.fetch_offset(MQ) == 3
    assert consumer.max_offset(MQ) == 5


def test_requests_run_on_the_consumer_thread_which_shutdown_ends(remoting: FakeRemoting,
                                                                 broker: FakeBroker) -> None:
    consumer = SyncPullConsumer("spark-group", instance=fake_instance(remoting))
    consumer.start()
    consumer.pull(MQ, "*", 0, max_nums=1)
    consumer.shutdown()
    [thread] = broker.threads
    assert thread is not threading.current_thread()
    assert not thread.is_alive()
