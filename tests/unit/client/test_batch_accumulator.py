"""Producer auto-batching over the in-memory transport: what goes together, when, and who gets which answer.

The fake broker stores SEND_BATCH_MESSAGE bodies per queue and answers as ours does (every
offset msg id, the queue offset of the first); a gate holds answers back so later sends gather
while an earlier batch is in flight.
"""

from __future__ import annotations

import asyncio

import pytest
from unit.client.fake_remoting import FakeClock, FakeRemoting, fake_instance, route_data

from mqtools.client.batch_accumulator import BatchAccumulator
from mqtools.client.errors import MQBrokerError
from mqtools.client.producer import Producer
from mqtools.client.types import SendResult
from mqtools.common import properties as P
from mqtools.common.codec import iter_batch
from mqtools.common.message import Message
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand


class FakeBroker:
    """Stores what it is sent. Request n (in arrival order) waits for `gates[n]` when there is one,
    and is answered with `codes[n]` instead of being stored when there is one."""

    def __init__(self) -> None:
        self.log: dict[tuple[str, int], list[str]] = {}
        self.gates: dict[int, asyncio.Event] = {}
        self.codes: dict[int, int] = {}
        self.batches: list[list[str]] = []

    def hold(self, n: int) -> asyncio.Event:
        gate = self.gates[n] = asyncio.Event()
        return gate

    async def __call__(self, addr: str, cmd: RemotingCommand, _timeout: float) -> RemotingCommand:
        if cmd.code not in (RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_MESSAGE_V2):
            return cmd.response(ResponseCode.SUCCESS)
        if cmd.code == RequestCode.SEND_MESSAGE_V2:
            keys = [P.string_to_properties(cmd.ext_fields["i"])[P.UNIQ_KEY]]
        else:
            keys = [P.string_to_properties(bytes(props).decode())[P.UNIQ_KEY] for _, _, props in iter_batch(cmd.body)]
        n = len(self.batches)
        self.batches.append(keys)
        if n in self.gates:
            await self.gates[n].wait()
        if n in self.codes:
            return cmd.response(self.codes[n], "scripted")
        queue = self.log.setdefault((addr, int(cmd.ext_fields["e"])), [])
        first = len(queue)
        queue.extend(keys)
        ids = ",".join(f"{addr}/{cmd.ext_fields['e']}@{first + i}" for i in range(len(keys)))
        return cmd.response(ResponseCode.SUCCESS, None,
                            {"msgId": ids, "queueId": cmd.ext_fields["e"], "queueOffset": str(first)})


def make(**options: object) -> tuple[Producer, FakeBroker, FakeClock]:
    clock = FakeClock()
    broker = FakeBroker()
    remoting = FakeRemoting({"T": route_data({"broker-a": 2, "broker-b": 2})}, broker, clock)
    producer = Producer("pg", instance=fake_instance(remoting), clock=clock, auto_batch=True,
                        **options)  # type: ignore[arg-type]
    return producer, broker, clock


def messages(n: int, size: int = 10) -> list[Message]:
    return [Message("T", bytes([65 + i % 26]) * size, properties={"KEYS": f"k{i}"}) for i in range(n)]


async def ticks(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def assert_own_result(broker: FakeBroker, msg: Message, result: SendResult) -> None:
    """Its msg id sits at its queue offset, and its offset msg id names that place."""
    addr = f"{result.queue.broker_name}:10911"
    assert result.msg_id == msg.properties[P.UNIQ_KEY]
    assert broker.log[(addr, result.queue.queue_id)][result.queue_offset] == result.msg_id
    assert result.offset_msg_id == f"{addr}/{result.queue.queue_id}@{result.queue_offset}"


async def test_sends_gather_while_a_batch_is_out_and_each_future_gets_its_own_result() -> None:
    producer, broker, _ = make()
    gate = broker.hold(0)
    msgs = messages(10)
    futures = [producer.send_async(m) for m in msgs]
    await ticks()
    assert [len(b) for b in broker.batches] == [1], "a lone send goes at once, the rest are held"
    gate.set()
    results = await asyncio.gather(*futures)
    assert [len(b) for b in broker.batches] == [1, 9]
    for msg, result in zip(msgs, results, strict=True):
        assert_own_result(broker, msg, result)
    assert len({r.offset_msg_id for r in results}) == 10


async def test_a_batch_goes_once_its_bodies_exceed_batch_max_bytes() -> None:
    """RocketMQ's rule: bodies only (not properties or framing), and a batch at exactly the bound is held."""
    producer, broker, _ = make(batch_max_bytes=3 * 40)
    gates = [broker.hold(n) for n in range(3)]
    futures = [producer.send_async(m) for m in messages(10, size=40)]
    await ticks()
    assert [len(b) for b in broker.batches] == [1, 4, 4], "three bodies are 120 bytes, not over: four go"
    for gate in gates:
        gate.set()
    await asyncio.gather(*futures)
    assert [len(b) for b in broker.batches] == [1, 4, 4, 1]


async def test_a_retryable_failure_retries_the_batch_on_the_other_broker() -> None:
    producer, broker, _ = make()
    gate = broker.hold(0)
    broker.codes[1] = ResponseCode.SYSTEM_BUSY
    msgs = messages(4)
    futures = [producer.send_async(m) for m in msgs]
    await ticks()
    gate.set()
    results = await asyncio.gather(*futures)
    assert [len(b) for b in broker.batches] == [1, 3, 3], "the failed batch went again, whole"
    assert [r.queue.broker_name for r in results] == ["broker-a", "broker-b", "broker-b", "broker-b"]
    for msg, result in zip(msgs, results, strict=True):
        assert_own_result(broker, msg, result)


async def test_a_broker_failure_fails_exactly_the_sends_of_the_batch_it_held() -> None:
    producer, broker, _ = make()
    first_gate, second_gate = broker.hold(0), broker.hold(1)
    broker.codes[1] = ResponseCode.MESSAGE_ILLEGAL  # outside the retry codes: not tried again
    futures = [producer.send_async(m) for m in messages(5)]
    await ticks()
    first_gate.set()
    await futures[0]
    await ticks()
    later = [producer.send_async(m) for m in messages(2)]
    second_gate.set()
    outcomes = await asyncio.gather(*futures[1:], *later, return_exceptions=True)
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(failed) == 4 and all(isinstance(o, MQBrokerError) for o in failed)
    assert outcomes[:4] == failed, "the four held together failed together"
    assert all(isinstance(o, SendResult) for o in outcomes[4:]), "sends gathered after it are untouched"
    assert [len(b) for b in broker.batches] == [1, 4, 2]


async def test_a_single_held_send_goes_after_batch_max_delay_ms() -> None:
    producer, broker, clock = make(batch_max_delay_ms=20)
    gate = broker.hold(0)
    first = producer.send_async(messages(1)[0])
    await ticks()
    second = producer.send_async(messages(1)[0])
    await asyncio.sleep(0.05)
    assert len(broker.batches) == 1, "the producer's clock has not moved: still held"
    clock.advance(0.02)
    for _ in range(200):  # the real timer is 20 ms; poll rather than bet on one sleep
        if len(broker.batches) == 2:
            break
        await asyncio.sleep(0.01)
    assert [len(b) for b in broker.batches] == [1, 1], "due by the clock: it goes with the first still out"
    gate.set()
    await asyncio.gather(first, second)


async def test_a_full_accumulator_makes_sends_wait_and_lets_them_in_as_bytes_come_back() -> None:
    producer, broker, _ = make(total_batch_max_bytes=300)
    gate = broker.hold(0)
    msgs = messages(8, size=60)
    futures = [producer.send_async(m) for m in msgs]
    await ticks()
    batcher = producer._batcher
    assert batcher is not None
    fit = 300 // len(msgs[0].body)
    assert 0 < fit < 8 and len(batcher._waiters) == 8 - fit and batcher.acc.held <= 300
    assert not any(f.done() for f in futures)
    gate.set()
    results = await asyncio.gather(*futures)
    for msg, result in zip(msgs, results, strict=True):
        assert_own_result(broker, msg, result)
    assert batcher.acc.held == 0
    assert [k for b in broker.batches for k in b] == [m.properties[P.UNIQ_KEY] for m in msgs], "in arrival order"


async def test_shutdown_flushes_what_is_held() -> None:
    producer, broker, _ = make(batch_max_delay_ms=60_000)
    gate = broker.hold(0)
    futures = [producer.send_async(m) for m in messages(3)]
    await ticks()
    closing = asyncio.ensure_future(producer.shutdown())
    await ticks()
    assert [len(b) for b in broker.batches] == [1, 2], "held sends go at shutdown, not after the delay"
    gate.set()
    await closing
    assert all(isinstance(f.result(), SendResult) for f in futures)


async def test_ordered_delayed_and_compressed_sends_bypass_the_accumulator() -> None:
    producer, broker, _ = make(compress_over=100)
    await producer.send(Message("T", b"x"), queue=MessageQueue("T", "broker-a", 1))
    await producer.send_async(Message("T", b"x", properties={P.DELAY: "3"}))
    await producer.send_async(Message("T", b"x" * 200))
    await producer.send_async(Message("T", b"x"), callback=lambda r, e: None)
    assert [len(b) for b in broker.batches] == [1, 1, 1, 1]
    assert len([s for s in producer.instance.remoting.sent if s.cmd.code == RequestCode.SEND_BATCH_MESSAGE]) == 1


def test_the_accumulator_alone() -> None:
    acc: BatchAccumulator[str] = BatchAccumulator(max_delay=0.01, max_bytes=100, total_max_bytes=150)
    first = acc.add("T", "a", 40, now=0.0)
    assert first is not None and first.items == ["a"]
    assert acc.add("T", "b", 40, now=0.001) is None
    assert acc.add("U", "u", 10, now=0.001) is not None, "another topic has nothing out"
    assert acc.next_due() == pytest.approx(0.011)
    assert acc.due(0.005) == [] and not acc.has_room(70) and acc.has_room(60)
    following = acc.done(first)
    assert following is not None and following.items == ["b"] and acc.held == 50
    assert acc.add("T", "c", 10, now=0.02) is None
    assert [b.items for b in acc.due(0.031)] == [["c"]]
    assert acc.add("T", "d", 10, now=0.04) is None
    assert [b.items for b in acc.close()] == [["d"]]
    assert acc.add("T", "e", 10, now=0.05) is not None, "closing: nothing is held any more"
