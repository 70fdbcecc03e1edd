"""Consumer offset stores: on the broker (clustering) or in a local file (broadcasting)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from mqtools.client.errors import MQClientError, UnreachableError
from mqtools.common.atomic_file import write_atomic
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader

if TYPE_CHECKING:
    from mqtools.client.instance import ClientInstance


class OffsetStore:
    """In-memory next-offsets per queue, persisted by the subclass."""

    def __init__(self) -> None:
        self.table: dict[MessageQueue, int] = {}

    def update(self, mq: MessageQueue, offset: int, *, increase_only: bool = False) -> None:
        if increase_only and self.table.get(mq, -1) >= offset:
            return
        self.table[mq] = offset

    def remove(self, mq: MessageQueue) -> None:
        self.table.pop(mq, None)

    async def read(self, mq: MessageQueue) -> int | None:
        raise NotImplementedError

    async def persist(self, mqs: list[MessageQueue]) -> None:
        raise NotImplementedError


class RemoteOffsetStore(OffsetStore):
    """Offsets kept by the broker that owns the queue (QUERY/UPDATE_CONSUMER_OFFSET)."""

    def __init__(self, instance: ClientInstance, group: str) -> None:
        super().__init__()
        self.instance = instance
        self.group = group

    def _addr(self, mq: MessageQueue) -> str:
        addr = self.instance.broker_addr(mq.broker_name)
        if addr is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
        return addr

    async def _invoke(self, mq: MessageQueue, code: RequestCode, ext: dict[str, str],
                      ok: tuple[int, ...] = (ResponseCode.SUCCESS,), *, pass_timed_out: bool = False
                      ) -> RemotingCommand:
        """To the node serving the queue's broker: the master, else (route refreshed after the master
        failed to answer) the slave, where RocketMQ 4.x clients also read and commit offsets while
        the master is down. The returning master takes those offsets back (server pre-online step).
        A refreshed route that still names the unreachable master (its name server has not dropped it yet)
        sends the request to the next node: a commit that waited for the next round instead reached a slave
        made master 5 s late, and a drill read that master's offsets behind the dead one's (CI at 5a49667).
        With `pass_timed_out`, a master whose last request timed out (ClientInstance.timed_out: until one is
        answered again, a lock renewal or a pull) is not asked while its set has another node."""
        addr = self._addr(mq)
        if pass_timed_out and self.instance.timed_out(addr) and (other := self._other_node(mq, addr)) is not None:
            return await self.instance.invoke(other, RemotingCommand.request(code, ext), ok=ok)
        try:
            return await self.instance.invoke(addr, RemotingCommand.request(code, ext), ok=ok)
        except UnreachableError:
            with contextlib.suppress(MQClientError):
                await self.instance.route(mq.topic, refresh=True)
            other = self._other_node(mq, addr)
            if other is None:
                raise
            return await self.instance.invoke(other, RemotingCommand.request(code, ext), ok=ok)

    def _other_node(self, mq: MessageQueue, addr: str) -> str | None:
        return next((a for a in self.instance.broker_nodes(mq.broker_name) if a != addr), None)

    async def read(self, mq: MessageQueue) -> int | None:
        """The broker's committed offset; None when the group never committed on that queue."""
        header = QueryConsumerOffsetRequestHeader(self.group, mq.topic, mq.queue_id)
        resp = await self._invoke(mq, RequestCode.QUERY_CONSUMER_OFFSET, header.to_ext(),
                                  (ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND))
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        offset = int(resp.ext_fields["offset"])
        self.table[mq] = offset
        return offset

    async def commit(self, mq: MessageQueue, offset: int, *, in_round: bool = False) -> None:
        """`in_round`: one of a consumer's rounds (commit_all's tolerant), which passes over a timed-out master."""
        header = UpdateConsumerOffsetRequestHeader(self.group, mq.topic, mq.queue_id, offset)
        await self._invoke(mq, RequestCode.UPDATE_CONSUMER_OFFSET, header.to_ext(), pass_timed_out=in_round)

    async def commit_all(self, offsets: dict[MessageQueue, int], *, tolerant: bool = False) -> list[MessageQueue]:
        """Commit many queues: one broker's one after another, the brokers at once. RocketMQ's
        ConsumerOffsetManager.commitOffset makes a group's table for a topic with an unguarded get-then-put,
        so two first commits of a topic landing on two of a broker's threads at once keep only one of them
        (Apache 4.9.7 lost queue 0 of a reset that way, CI at 5378398); Java's clients commit in a loop.
        With `tolerant` (a consumer's round), a queue whose commit fails is left for the next round, and so are
        the broker's queues after it when the broker could not be reached; the queues left are returned. A hung
        master costs the round one timeout, not one a queue (a consumer's shutdown waited 15 s for five): once it
        timed out, in this round or before, the set's commits go straight to its slave (_invoke's
        `pass_timed_out`), and when there is none the set's queues are left at the first failure."""
        by_broker: dict[str, list[tuple[MessageQueue, int]]] = {}
        for mq, offset in offsets.items():
            by_broker.setdefault(mq.broker_name, []).append((mq, offset))

        async def one_broker(items: list[tuple[MessageQueue, int]]) -> list[MessageQueue]:
            left: list[MessageQueue] = []
            for i, (mq, offset) in enumerate(items):
                if not tolerant:
                    await self.commit(mq, offset)
                    continue
                try:
                    await self.commit(mq, offset, in_round=True)
                except UnreachableError:
                    return left + [q for q, _ in items[i:]]
                except MQClientError:
                    left.append(mq)
            return left

        left = await asyncio.gather(*(one_broker(items) for items in by_broker.values()))
        return [mq for queues in left for mq in queues]

    async def persist(self, mqs: list[MessageQueue]) -> None:
        await self.commit_all({mq: self.table[mq] for mq in mqs if mq in self.table}, tolerant=True)


def _key(mq: MessageQueue) -> str:
    return f"{mq.topic}@{mq.broker_name}@{mq.queue_id}"


class LocalOffsetStore(OffsetStore):
    """Broadcasting offsets in `<dir>/<client id>/<group>/offsets.json`, written atomically."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self._loaded: dict[str, int] = {}
        self._version = 0
        self._written = 0
        self._file_lock = threading.Lock()
        if path.exists():
            raw = orjson.loads(path.read_bytes())
            self._loaded = {str(k): int(v) for k, v in raw.get("offsetTable", {}).items()}

    async def read(self, mq: MessageQueue) -> int | None:
        offset = self._loaded.get(_key(mq))
        if offset is not None:
            self.table[mq] = offset
        return offset

    async def persist(self, mqs: list[MessageQueue]) -> None:
        for mq in mqs:
            if mq in self.table:
                self._loaded[_key(mq)] = self.table[mq]
        data = orjson.dumps({"offsetTable": self._loaded}, option=orjson.OPT_INDENT_2)
        self._version += 1
        await asyncio.to_thread(self._write, self._version, data)

    def _write(self, version: int, data: bytes) -> None:
        """One writer at a time, and never an older table over a newer one.

        A thread lock, not an asyncio one: a persist cancelled at shutdown leaves its thread running,
        and the final persist must not race it on the temp file.
        """
        with self._file_lock:
            if version > self._written:
                write_atomic(self.path, data)
                self._written = version
