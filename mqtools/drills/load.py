"""The drill's load: producers at a constant rate, push consumers, every operation into the history.

Open loop: send i is planned at start + i/rate and started then, whatever earlier sends are doing, so a
stalled broker shows as latency (measured from the planned time) instead of a quietly lower rate.
Every message carries the drill's unique id (also its KEYS, so `mq admin msg key` finds it), a
sharding key and a sequence number within that key. With `keys`, sends pick the queue by the key
(RocketMQ's ordered sends: one attempt, no retry) and consumers are orderly; without, sends go
round robin with the client's retries.

A send's outcome needs every attempt of the client's send loop: a final "connect failed" after an
earlier attempt timed out may still have stored the message. `RecordingProducer` notes each attempt,
so only a send whose every attempt surely stored nothing is `fail`; the rest are `unknown`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mqtools.client.errors import ConnectFailedError, MQBrokerError, MQClientError, UnreachableError
from mqtools.client.producer import Producer, select_by_hash
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.types import ConsumeFromWhere, ConsumeResult, SendResult
from mqtools.common import properties as P
from mqtools.common.ids import decode_offset_msg_id
from mqtools.common.message import Message, MessageExt
from mqtools.common.security import ClientSecurity
from mqtools.drills.history import FAIL, OK, RECEIVE, SEND, UNKNOWN, History, Op
from mqtools.remoting.codes import ResponseCode

KEY_PROPERTY = "DRILL_KEY"
SEQ_PROPERTY = "DRILL_SEQ"
BALANCE_TIMEOUT = 15.0

# What each attempt of the running send ended with: "ok", "none" (surely not stored), "maybe".
_attempts: contextvars.ContextVar[list[tuple[str, int | None]]] = contextvars.ContextVar("drill_attempts")


@dataclass(frozen=True, slots=True)
class LoadSpec:
    rate: float = 100.0
    duration: float = 60.0
    producers: int = 2
    consumers: int = 2
    size: int = 256
    keys: int = 0
    send_timeout: float = 3.0
    poll_interval: float = 30.0
    """Seconds between the clients' route refreshes (RocketMQ's pollNameServerInterval)."""

    def to_json(self) -> dict[str, Any]:
        return {"rate": self.rate, "duration": self.duration, "producers": self.producers,
                "consumers": self.consumers, "size": self.size, "keys": self.keys, "sendTimeout": self.send_timeout,
                "pollInterval": self.poll_interval}


class RecordingProducer(Producer):
    """A Producer that notes how each attempt of its send loop ended (see the module docstring)."""

    async def _send_once(self, *args: Any, **kwargs: Any) -> SendResult:
        noted = _attempts.get(None)
        try:
            result = await super()._send_once(*args, **kwargs)
        except MQBrokerError as exc:
            if noted is not None:
                noted.append(("none", exc.code))
            raise
        except ConnectFailedError:
            if noted is not None:
                noted.append(("none", None))
            raise
        except UnreachableError:  # timed out or dropped: the broker may have stored it
            if noted is not None:
                noted.append(("maybe", None))
            raise
        except MQClientError:
            if noted is not None:
                noted.append(("none", None))
            raise
        except BaseException:
            if noted is not None:
                noted.append(("maybe", None))
            raise
        if noted is not None:
            noted.append(("ok", None))
        return result


@dataclass(slots=True)
class Counters:
    """Live figures for the progress display."""

    sent: int = 0
    ok: int = 0
    failed: int = 0
    unknown: int = 0
    received: int = 0
    inflight: int = 0


class LoadSchedule:
    """What every drill load shares: the open-loop schedule, the counters, and waiting for what was sent to arrive.
    A load sends message `i` in `_send` and records each operation with `_sent` and `_delivered`."""

    def __init__(self, topic: str, group: str, spec: LoadSpec, history: History, clock: Callable[[], float],
                 brokers_by_addr: dict[str, str], run_id: str) -> None:
        self.topic = topic
        self.group = group
        self.spec = spec
        self.history = history
        self.clock = clock
        self.brokers_by_addr = brokers_by_addr
        self.run_id = run_id
        self.end = spec.duration
        self.counters = Counters()
        self._tasks: set[asyncio.Task] = set()
        self._expected: set[str] = set()
        self._received: set[str] = set()
        self._last_receive = 0.0

    async def run(self, start: float) -> None:
        """The constant-rate schedule from `start` until `self.end` (seconds on the drill clock)."""
        i = 0
        while True:
            planned = start + i / self.spec.rate
            if planned >= self.end:
                break
            delay = planned - self.clock()
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.create_task(self._send(i, planned))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            i += 1
        if self._tasks:
            await asyncio.wait(set(self._tasks))

    async def _send(self, i: int, planned: float) -> None:
        raise NotImplementedError

    def _sending(self, msg_id: str) -> float:
        """A send begins: counted, expected; its invoke time."""
        self._expected.add(msg_id)
        self.counters.sent += 1
        self.counters.inflight += 1
        return self.clock()

    def _sent(self, op: Op) -> None:
        """A send ended: counted by its result (a definite failure is no longer expected) and kept."""
        self.counters.inflight -= 1
        if op.result == OK:
            self.counters.ok += 1
        elif op.result == FAIL:
            self.counters.failed += 1
            self._expected.discard(op.id)
        else:
            self.counters.unknown += 1
        self.history.ops.append(op)

    def _delivered(self, ops: list[Op], now: float) -> None:
        self._received.update(op.id for op in ops)
        self.history.ops.extend(ops)
        self.counters.received += len(ops)
        self._last_receive = now

    def expect(self, ids: Iterable[str]) -> None:
        """Messages sent outside `run` (the transactional load's) that `settle` waits for too."""
        ids = set(ids)
        self._expected |= ids
        self.counters.sent += len(ids)
        self.counters.ok += len(ids)

    async def settle(self, quiet: float, cap: float) -> None:
        """After the last send: until every sent message arrived, or none arrived for `quiet` s, or `cap` s."""
        began = self.clock()
        self._last_receive = max(self._last_receive, began)
        while self.clock() - began < cap:
            if not self._expected - self._received:
                return
            if self.clock() - self._last_receive >= quiet:
                return
            await asyncio.sleep(0.1)


class Load(LoadSchedule):
    """Producers and consumers on one topic and group; `run` sends until `end` (which may move)."""

    def __init__(self, namesrv: str, topic: str, group: str, spec: LoadSpec, history: History,
                 clock: Callable[[], float], brokers_by_addr: dict[str, str], run_id: str,
                 security: ClientSecurity | None = None) -> None:
        super().__init__(topic, group, spec, history, clock, brokers_by_addr, run_id)
        self.namesrv = namesrv
        self.security = security
        self.producers: list[RecordingProducer] = []
        self.consumers: list[PushConsumer] = []
        self._refresher: asyncio.Task | None = None

    # life cycle ---------------------------------------------------------------------------

    async def start(self) -> bool:
        """Consumers first (balanced over the topic's queues), then producers; False when never balanced."""
        for i in range(self.spec.consumers):
            consumer = PushConsumer(self.group, namesrv=self.namesrv, orderly=self.spec.keys > 0,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                                    security=self.security)
            consumer.subscribe(self.topic).register_listener(self._listener(f"consumer-{i}"))
            self.consumers.append(consumer)
            await consumer.start()
        for i in range(self.spec.producers):
            producer = RecordingProducer(f"{self.group}_P{i}", namesrv=self.namesrv,
                                         send_timeout=self.spec.send_timeout, security=self.security)
            self.producers.append(await producer.start())
            with contextlib.suppress(MQClientError):
                await producer.instance.route(self.topic, refresh=True)
        if self.spec.poll_interval < 30:
            self._refresher = asyncio.create_task(self._refresh_routes())
        return await self._balanced()

    async def warm_up(self, broker_names: list[str]) -> None:
        """A few sends per producer to each master's own topic, outside the history: connections are
        open and replication has woken up before the first measured send, so "before" latency is real."""
        for producer in self.producers:
            for name in broker_names:
                for _ in range(2):
                    with contextlib.suppress(MQClientError):
                        await producer.send(Message(name, b"mq drill warm-up"), timeout=self.spec.send_timeout)

    async def stop(self) -> None:
        """Producers finish their sends and leave; consumers commit their offsets and leave."""
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher
        await asyncio.gather(*(p.shutdown() for p in self.producers), return_exceptions=True)
        await asyncio.gather(*(c.shutdown(drain_timeout=2.0) for c in self.consumers), return_exceptions=True)

    async def _balanced(self) -> bool:
        """Until the consumers own every queue of the topic between them, each a fair share."""
        deadline = time.monotonic() + BALANCE_TIMEOUT
        while time.monotonic() < deadline:
            route = await self._route()
            owned = [[q for q in c.owned_queues if q.topic == self.topic] for c in self.consumers]
            total = len(route) if route is not None else 0
            fair = total // max(1, len(self.consumers))
            if total and sum(len(o) for o in owned) == total and {q for o in owned for q in o} == route \
                    and all(len(o) >= fair for o in owned):
                return True
            await asyncio.sleep(0.1)
        return False

    async def _route(self) -> set[Any] | None:
        try:
            route = await self.consumers[0].instance.route(self.topic, refresh=True) if self.consumers else None
        except MQClientError:
            return None
        return set(route.subscribe) if route is not None else None

    async def _refresh_routes(self) -> None:
        """pollNameServerInterval below RocketMQ's 30 s: every client refreshes the topic's route."""
        while True:
            await asyncio.sleep(self.spec.poll_interval)
            for client in [*self.producers, *self.consumers]:
                with contextlib.suppress(MQClientError):
                    await client.instance.route(self.topic, refresh=True)

    # sending ------------------------------------------------------------------------------

    def _message(self, i: int) -> tuple[Message, str, str | None, int]:
        keys = self.spec.keys
        key = f"k{i % keys}" if keys else None
        seq = i // keys if keys else i
        msg_id = f"{self.run_id}-{i:07d}"
        body = msg_id.encode().ljust(self.spec.size, b".")
        msg = Message(self.topic, body)
        msg.properties[P.KEYS] = msg_id
        msg.properties[SEQ_PROPERTY] = str(seq)
        if key is not None:
            msg.properties[KEY_PROPERTY] = key
        return msg, msg_id, key, seq

    async def _send(self, i: int, planned: float) -> None:
        msg, msg_id, key, seq = self._message(i)
        producer = self.producers[i % len(self.producers)]
        noted: list[tuple[str, int | None]] = []
        _attempts.set(noted)
        invoke = self._sending(msg_id)
        op = Op(f"producer-{i % len(self.producers)}", SEND, msg_id, invoke, invoke, UNKNOWN, key=key, seq=seq,
                planned=round(planned, 4))
        try:
            if key is not None:
                result = await producer.send(msg, selector=select_by_hash, arg=key)
            else:
                result = await producer.send(msg)
        except (MQClientError) as exc:  # ordered sends raise the transport's error as is
            record_failure(op, exc, noted)
        except Exception as exc:  # noqa: BLE001 - any other failure of a send is recorded, not fatal
            op.result, op.error = UNKNOWN, f"{type(exc).__name__}: {exc}"
        else:
            record_success(op, result)
        op.complete = round(self.clock(), 4)
        op.invoke = round(invoke, 4)
        op.attempts = len(noted) or None
        self._sent(op)

    # receiving ----------------------------------------------------------------------------

    def _listener(self, client: str) -> Callable[[list[MessageExt]], ConsumeResult]:
        def listener(msgs: list[MessageExt]) -> ConsumeResult:
            now = round(self.clock(), 4)
            self._delivered([self._receive_op(client, m, now) for m in msgs], now)
            return ConsumeResult.CONSUME_SUCCESS

        return listener

    def _receive_op(self, client: str, m: MessageExt, now: float) -> Op:
        uniq = m.properties.get(P.UNIQ_KEY) or m.msg_id
        drill_id = m.properties.get(P.KEYS) or f"foreign:{uniq}"
        host = f"{m.store_host[0]}:{m.store_host[1]}"
        seq = m.properties.get(SEQ_PROPERTY)
        return Op(client, RECEIVE, drill_id, now, now, OK, key=m.properties.get(KEY_PROPERTY),
                  seq=int(seq) if seq and seq.isdigit() else None, msg_id=uniq,
                  broker=self.brokers_by_addr.get(host), queue=m.queue_id, offset=m.queue_offset,
                  commitlog_offset=m.commit_log_offset, size=m.store_size, store_host=host)


def record_success(op: Op, result: SendResult) -> None:
    """Where the message was stored: broker, queue, queue offset, and the commitlog offset from its offset id
    (what the ASYNC_MASTER loss check compares with the slave's offset)."""
    op.result = OK
    op.status = result.status.value
    op.msg_id = result.msg_id
    op.broker = result.queue.broker_name
    op.queue = result.queue.queue_id
    op.offset = result.queue_offset
    with contextlib.suppress(ValueError):
        (host, port), op.commitlog_offset = decode_offset_msg_id(result.offset_msg_id)
        op.store_host = f"{host}:{port}"
    if op.status != "SEND_OK":
        op.code = int(ResponseCode[op.status])


def record_failure(op: Op, exc: MQClientError, noted: list[tuple[str, int | None]]) -> None:
    """fail only when no attempt could have stored the message; the code of the last refusal."""
    op.error = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, MQBrokerError):
        op.code = exc.code
    else:
        op.code = next((code for how, code in reversed(noted) if code is not None), None)
    op.result = UNKNOWN if any(how == "maybe" for how, _ in noted) else FAIL
