"""The producer's sync send loop over a fake transport and a fake clock.

Checked against RocketMQ's DefaultMQProducerImpl.sendDefaultImpl rules: up to
1 + retry_times attempts inside one send_timeout budget, none started once it is spent,
the next attempt on another broker after a failure, non-retryable broker codes raised at
once, stored-but-not-OK answers retried only with retryAnotherBrokerWhenNotStoreOK. Plus
this client's rule that an attempt waits at most its share of what is left.
"""

from __future__ import annotations

import pytest
from unit.client.fake_remoting import FakeClock, FakeRemoting, Sent, fake_instance, route_data

from mqtools.client.errors import MQBrokerError, MQClientError
from mqtools.client.producer import Producer
from mqtools.client.route import TopicRoute
from mqtools.client.types import SEND_STATUS_BY_CODE, SendStatus
from mqtools.common.message import Message
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingTimeoutError

A = "broker-a:10911"
B = "broker-b:10911"
Step = tuple[float, int | Exception]


class Script:
    """Answers send requests in order: each step spends its seconds on the clock, then answers or raises."""

    def __init__(self, clock: FakeClock, steps: list[Step]) -> None:
        self.clock = clock
        self.steps = list(steps)

    async def __call__(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        seconds, outcome = self.steps.pop(0)
        self.clock.advance(seconds)
        if isinstance(outcome, Exception):
            raise outcome
        ext = {}
        if outcome in SEND_STATUS_BY_CODE:
            ext = {"msgId": f"{addr}/offset-id", "queueId": cmd.ext_fields["e"], "queueOffset": "42"}
        return cmd.response(outcome, "scripted", ext)


def timed_out(addr: str, after: float) -> RemotingTimeoutError:
    return RemotingTimeoutError(addr, after, RequestCode.SEND_MESSAGE_V2)


def make_producer(steps: list[Step], **options: object) -> tuple[Producer, FakeRemoting, FakeClock]:
    clock = FakeClock()
    remoting = FakeRemoting({"T": route_data({"broker-a": 2, "broker-b": 2})}, Script(clock, steps), clock)
    producer = Producer("pg", instance=fake_instance(remoting), clock=clock, **options)  # type: ignore[arg-type]
    return producer, remoting, clock


def sends(remoting: FakeRemoting) -> list[tuple[str | None, int, float | None, float]]:
    """(broker, queue id, timeout, start time) of each send attempt."""
    return [(s.addr, int(s.cmd.ext_fields["e"]), s.timeout, s.at)
            for s in remoting.broker_requests(RequestCode.SEND_MESSAGE_V2)]


def route_lookups(remoting: FakeRemoting) -> int:
    return sum(1 for s in remoting.sent if s.addr is None and s.cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC)


def doubted(producer: Producer) -> list[str]:
    """The topics whose route the producer asks its instance to re-read in the background (refresh_soon)."""
    topics: list[str] = []
    producer.instance.refresh_soon = topics.append  # type: ignore[method-assign]
    return topics


async def test_a_clean_send_is_one_attempt_with_a_third_of_the_budget() -> None:
    producer, remoting, _ = make_producer([(0.01, ResponseCode.SUCCESS)])
    result = await producer.send(Message("T", b"hello"))
    assert (result.status, result.queue, result.queue_offset) == (SendStatus.SEND_OK,
                                                                  MessageQueue("T", "broker-a", 0), 42)
    assert result.offset_msg_id == f"{A}/offset-id"
    assert sends(remoting) == [(A, 0, 1.0, 1000.0)]
    assert route_lookups(remoting) == 1


async def test_after_a_failure_the_next_attempt_goes_to_the_other_broker() -> None:
    producer, remoting, _ = make_producer([(1.0, timed_out(A, 1.0)), (0.2, ResponseCode.SUCCESS)])
    result = await producer.send(Message("T", b"hello"))
    assert result.queue == MessageQueue("T", "broker-b", 0)
    assert sends(remoting) == [(A, 0, 1.0, 1000.0), (B, 0, 1.0, 1001.0)]
    assert route_lookups(remoting) == 2, "a failure refreshes the route"


async def test_each_attempt_waits_only_its_share_of_what_is_left() -> None:
    producer, remoting, _ = make_producer([(0.5, timed_out(A, 0.5)), (0.5, timed_out(B, 0.5)), (0.5, timed_out(A, 0.5))])
    with pytest.raises(MQClientError, match=r"send to T failed after 1\.500s \(budget 3\.000s\): .*timed out"):
        await producer.send(Message("T", b"hello"))
    assert sends(remoting) == [(A, 0, 1.0, 1000.0), (B, 0, 1.25, 1000.5), (A, 0, 2.0, 1001.0)]


async def test_no_attempt_starts_once_the_budget_is_spent() -> None:
    producer, remoting, _ = make_producer([(2.5, timed_out(A, 2.5)), (0.5, timed_out(B, 0.5))])
    with pytest.raises(MQClientError, match=r"failed after 3\.000s \(budget 3\.000s\)"):
        await producer.send(Message("T", b"hello"))
    assert sends(remoting) == [(A, 0, 1.0, 1000.0), (B, 0, 0.25, 1002.5)]


async def test_the_timeout_argument_replaces_send_timeout_as_the_budget() -> None:
    producer, remoting, _ = make_producer([(0.3, timed_out(A, 0.3)), (0.1, ResponseCode.SUCCESS)], send_timeout=10.0)
    await producer.send(Message("T", b"hello"), timeout=0.9)
    assert sends(remoting) == [(A, 0, pytest.approx(0.3), 1000.0), (B, 0, pytest.approx(0.3), 1000.3)]


async def test_retry_times_zero_makes_one_attempt_with_the_whole_budget() -> None:
    producer, remoting, _ = make_producer([(0.2, timed_out(A, 0.2))], retry_times=0)
    with pytest.raises(MQClientError, match=r"failed after 0\.200s"):
        await producer.send(Message("T", b"hello"))
    assert sends(remoting) == [(A, 0, 3.0, 1000.0)]


async def test_a_retryable_broker_code_moves_on_to_the_other_broker() -> None:
    producer, remoting, _ = make_producer([(0.1, ResponseCode.SYSTEM_BUSY), (0.1, ResponseCode.SUCCESS)])
    result = await producer.send(Message("T", b"hello"))
    assert result.queue == MessageQueue("T", "broker-b", 0)
    assert [s[0] for s in sends(remoting)] == [A, B]


async def test_a_broker_code_outside_the_retry_codes_is_raised_at_once() -> None:
    producer, remoting, _ = make_producer([(0.1, ResponseCode.MESSAGE_ILLEGAL)])
    with pytest.raises(MQBrokerError) as caught:
        await producer.send(Message("T", b"hello"))
    assert (caught.value.code, caught.value.remark) == (ResponseCode.MESSAGE_ILLEGAL, "scripted")
    assert len(sends(remoting)) == 1


async def test_stored_but_not_ok_is_returned_as_is_by_default() -> None:
    producer, remoting, _ = make_producer([(0.1, ResponseCode.FLUSH_DISK_TIMEOUT)])
    result = await producer.send(Message("T", b"hello"))
    assert (result.status, result.queue.broker_name) == (SendStatus.FLUSH_DISK_TIMEOUT, "broker-a")
    assert len(sends(remoting)) == 1


async def test_stored_but_not_ok_tries_another_broker_when_asked() -> None:
    producer, remoting, _ = make_producer([(0.1, ResponseCode.FLUSH_DISK_TIMEOUT), (0.1, ResponseCode.SUCCESS)],
                                  retry_another_broker_when_not_store_ok=True)
    result = await producer.send(Message("T", b"hello"))
    assert (result.status, result.queue.broker_name) == (SendStatus.SEND_OK, "broker-b")
    assert [s[0] for s in sends(remoting)] == [A, B]


async def test_when_no_attempt_stores_ok_the_last_answer_is_returned() -> None:
    steps: list[Step] = [(0.1, ResponseCode.FLUSH_DISK_TIMEOUT), (0.1, ResponseCode.FLUSH_SLAVE_TIMEOUT),
                         (0.1, ResponseCode.SLAVE_NOT_AVAILABLE)]
    producer, remoting, _ = make_producer(steps, retry_another_broker_when_not_store_ok=True)
    result = await producer.send(Message("T", b"hello"))
    assert result.status is SendStatus.SLAVE_NOT_AVAILABLE
    assert len(sends(remoting)) == 3
    assert route_lookups(remoting) == 1, "a stored answer is no failure: the route is not refreshed"


async def test_a_failed_send_to_a_chosen_queue_refreshes_the_route_and_is_not_retried() -> None:
    producer, remoting, _ = make_producer([(0.1, timed_out(A, 0.1))])
    with pytest.raises(MQClientError):
        await producer.send(Message("T", b"ordered"), selector=lambda queues, _m, _a: queues[0])
    assert sends(remoting) == [(A, 0, 3.0, 1000.0)]
    assert route_lookups(remoting) == 2, "the failure refreshes the route (a new master may be in it)"


def test_a_route_is_headless_while_a_writable_group_has_no_master() -> None:
    data = route_data({"broker-a": 2, "broker-b": 2})
    assert not TopicRoute.build("T", data).headless
    data.broker_datas[0].broker_addrs = {2: "broker-a-s:10911"}  # the master died; its slave is listed
    route = TopicRoute.build("T", data)
    assert route.headless and [q.broker_name for q in route.publish] == ["broker-b", "broker-b"]


class HungNameServer(FakeRemoting):
    """A name server that answers the first route read, then hangs: each later read waits out its timeout
    (on the fake clock) and times out."""

    async def invoke_namesrv(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        if route_lookups(self) == 0:
            return await super().invoke_namesrv(cmd, timeout)
        self.sent.append(Sent(None, cmd, timeout, self.clock()))
        self.clock.advance(timeout)
        raise RemotingTimeoutError("namesrv:9876", timeout, cmd.code)


async def test_a_hung_name_server_does_not_eat_the_budget_of_the_retry() -> None:
    """broker-a refuses and the only name server hangs: the route's read waits at most half the budget left, the
    retry goes to broker-b on the route held, and the route is read again at the instance's next tick. Until stop
    106 the read took the instance's whole 3 s timeout, and the send failed with broker-b never tried."""
    clock = FakeClock()
    remoting = HungNameServer({"T": route_data({"broker-a": 2, "broker-b": 2})},
                              Script(clock, [(0.1, ResponseCode.SYSTEM_BUSY), (0.1, ResponseCode.SUCCESS)]), clock)
    producer = Producer("pg", instance=fake_instance(remoting), clock=clock)
    refreshed = doubted(producer)
    result = await producer.send(Message("T", b"hello"))
    assert result.queue == MessageQueue("T", "broker-b", 0)
    assert [s[0] for s in sends(remoting)] == [A, B]
    assert route_lookups(remoting) == 2 and refreshed == ["T"]


def namesrv_timeouts(remoting: FakeRemoting) -> list[float | None]:
    return [s.timeout for s in remoting.sent if s.addr is None]


async def test_sends_go_on_over_the_route_held_when_the_name_server_forgot_the_topic() -> None:
    """A name server restarted empty answers TOPIC_NOT_EXIST for every topic until the brokers register again (up
    to 30 s). Once the instance's periodic refresh met that answer, every send failed with "No route info of this
    topic" (the route dropped); the route held serves them, as Apache's producer keeps topicPublishInfoTable. A
    topic never routed still fails as before."""
    producer, remoting, _ = make_producer([(0.01, ResponseCode.SUCCESS), (0.01, ResponseCode.SUCCESS)])
    await producer.send(Message("T", b"before"))
    del remoting.route_table["T"]
    await producer.instance.route("T", refresh=True)  # the instance's periodic refresh
    assert (await producer.send(Message("T", b"after"))).status is SendStatus.SEND_OK
    with pytest.raises(MQClientError, match="No route info of this topic: U"):
        await producer.send(Message("U", b"never routed"))


async def test_a_retry_after_the_name_server_forgot_the_topic_goes_to_the_route_held() -> None:
    """A failed attempt re-reads the route; an answer of TOPIC_NOT_EXIST dropped it mid-send, and the retry failed
    with "No route info of this topic" instead of going to the other broker."""
    producer, remoting, _ = make_producer([(0.01, ResponseCode.SUCCESS), (0.1, ResponseCode.SYSTEM_BUSY),
                                           (0.1, ResponseCode.SUCCESS)])
    await producer.send(Message("T", b"before"))
    del remoting.route_table["T"]
    result = await producer.send(Message("T", b"after"))
    assert result.status is SendStatus.SEND_OK and [s[0] for s in sends(remoting)][1:] == [A, B]


async def test_the_route_read_of_a_send_waits_at_most_the_budget() -> None:
    """send_timeout 1 s on an instance whose timeout is 3 s: a first send's route reads (the topic's, then TBW102's
    for a new topic) wait at most the budget, not the instance's 3 s (a hung name server made such a send take
    3 s); a send to a chosen queue's read likewise."""
    producer, remoting, _ = make_producer([(0.01, ResponseCode.SUCCESS)] * 3, send_timeout=1.0)
    remoting.route_table["TBW102"] = route_data({"broker-a": 8})
    await producer.send(Message("T", b"x"))
    assert namesrv_timeouts(remoting) == [1.0]
    await producer.send(Message("NEW", b"x"))
    assert len(namesrv_timeouts(remoting)) == 3 and all(t is not None and t <= 1.0 for t in namesrv_timeouts(remoting))
    await producer.send(Message("NEW2", b"x"), selector=lambda queues, _m, _a: queues[0], timeout=0.5)
    assert all(t is not None and t <= 0.5 for t in namesrv_timeouts(remoting)[3:])
