"""Blocking facade over the async client, for scripts and Spark executors.

Each facade object owns a private event loop running in a daemon thread; calls submit
coroutines to it and wait. Listeners of a blocking push consumer run on that loop's
thread, so a slow listener delays only its own consumer.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future
from typing import Any, Self, TypeVar

from mqtools.client.consume_service import Listener
from mqtools.client.producer import Producer
from mqtools.client.pull_consumer import PullConsumer
from mqtools.client.push_consumer import PushConsumer
from mqtools.client.transaction import TransactionProducer, TransactionSendResult
from mqtools.client.types import PullResult, SendResult
from mqtools.common.loop import new_event_loop
from mqtools.common.message import Message
from mqtools.remoting.bodies import MessageQueue

T = TypeVar("T")


class LoopThread:
    """An event loop in a daemon thread; `run(coro)` blocks until the coroutine is done."""

    def __init__(self, name: str = "mq-client") -> None:
        self.loop = new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return self.submit(coro).result(timeout)

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Start `coro` on the loop without waiting: several calls can be in flight at once."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


class _Blocking:
    def __init__(self) -> None:
        self._loop = LoopThread()

    def _build(self, factory: Any, *args: Any, **kwargs: Any) -> Any:
        async def make() -> Any:
            return factory(*args, **kwargs)

        return self._loop.run(make())

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def start(self) -> None:
        raise NotImplementedError

    def shutdown(self) -> None:
        raise NotImplementedError


class SyncProducer(_Blocking):
    """`with SyncProducer("group", namesrv="127.0.0.1:9876") as p: p.send(Message(...))`."""

    def __init__(self, group: str, **options: Any) -> None:
        super().__init__()
        self.producer: Producer = self._build(Producer, group, **options)

    def start(self) -> None:
        self._loop.run(self.producer.start())

    def shutdown(self) -> None:
        self._loop.run(self.producer.shutdown())
        self._loop.close()

    def send(self, msg: Message, **kwargs: Any) -> SendResult:
        return self._loop.run(self.producer.send(msg, **kwargs))

    def send_oneway(self, msg: Message) -> None:
        self._loop.run(self.producer.send_oneway(msg))

    def send_batch(self, msgs: Sequence[Message], **kwargs: Any) -> SendResult:
        return self._loop.run(self.producer.send_batch(msgs, **kwargs))


class SyncTransactionProducer(_Blocking):
    """`with SyncTransactionProducer("group", namesrv=ns, execute=f, check=g) as p: p.send_in_transaction(msg)`;
    `execute` and `check` run on the facade's loop thread."""

    def __init__(self, group: str, **options: Any) -> None:
        super().__init__()
        self.producer: TransactionProducer = self._build(TransactionProducer, group, **options)

    def start(self) -> None:
        self._loop.run(self.producer.start())

    def shutdown(self) -> None:
        self._loop.run(self.producer.shutdown())
        self._loop.close()

    def send_in_transaction(self, msg: Message, arg: Any = None) -> TransactionSendResult:
        return self._loop.run(self.producer.send_in_transaction(msg, arg))


class SyncPullConsumer(_Blocking):
    def __init__(self, group: str, **options: Any) -> None:
        super().__init__()
        self.consumer: PullConsumer = self._build(PullConsumer, group, **options)

    def start(self) -> None:
        self._loop.run(self.consumer.start())

    def shutdown(self) -> None:
        self._loop.run(self.consumer.shutdown())
        self._loop.close()

    def fetch_queues(self, topic: str) -> list[MessageQueue]:
        return self._loop.run(self.consumer.fetch_queues(topic))

    def pull(self, mq: MessageQueue, expression: str | None, offset: int, max_nums: int = 32) -> PullResult:
        return self._loop.run(self.consumer.pull(mq, expression, offset, max_nums))

    def max_offset(self, mq: MessageQueue) -> int:
        return self._loop.run(self.consumer.max_offset(mq))

    def fetch_offset(self, mq: MessageQueue) -> int | None:
        return self._loop.run(self.consumer.fetch_offset(mq))

    def commit_offset(self, mq: MessageQueue, offset: int) -> None:
        self._loop.run(self.consumer.commit_offset(mq, offset))

    def commit_offsets(self, offsets: dict[MessageQueue, int]) -> list[MessageQueue]:
        return self._loop.run(self.consumer.commit_offsets(offsets))


class SyncPushConsumer(_Blocking):
    """A push consumer whose (plain function) listener runs on the consumer's own thread."""

    def __init__(self, group: str, **options: Any) -> None:
        super().__init__()
        self.consumer: PushConsumer = self._build(PushConsumer, group, **options)

    def subscribe(self, topic: str, expression: str = "*") -> SyncPushConsumer:
        self.consumer.subscribe(topic, expression)
        return self

    def register_listener(self, listener: Listener) -> SyncPushConsumer:
        self.consumer.register_listener(listener)
        return self

    def start(self) -> None:
        self._loop.run(self.consumer.start())

    def shutdown(self) -> None:
        self._loop.run(self.consumer.shutdown())
        self._loop.close()
