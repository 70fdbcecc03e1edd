"""Messages: by offset msgId, by key, by unique key, at a queue offset; queue spans and pulls
(printMsg, consumeMessage), one-off sends (sendMessage) and timed sends per broker (clusterRT)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

from mqtools.client.admin.base import AdminService, broker_sets
from mqtools.client.admin.models.brokers import SendRT
from mqtools.client.admin.models.messages import MessageDetail, MessageHits, QueueSpan, TopicSpans
from mqtools.client.admin.models.parse import queue_key
from mqtools.client.client_api import decode_pull_body, pull_once, queue_offset
from mqtools.client.errors import MessageNotFoundError, MQClientError, UnreachableError, reason_of
from mqtools.client.producer import Producer
from mqtools.client.subscription import parse_subscription
from mqtools.client.types import PullResult, PullStatus, SendResult
from mqtools.common import properties as P
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.ids import decode_offset_msg_id
from mqtools.common.message import Message, MessageExt
from mqtools.common.presentation import Unreachable
from mqtools.common.topics import TOOLS_CONSUMER_GROUP
from mqtools.remoting.bodies import MessageQueue
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.headers import UNIQUE_KEY_QUERY, QueryMessageRequestHeader, ViewMessageRequestHeader

SEND_GROUP = "mq_admin_send"
"""Producer group of `send_message`: its own, so the admin's connections carry no producer."""


class MessageAdmin(AdminService):
    """Messages: by offset msgId, by key, by unique key, at a queue offset; pulls and sends."""

    async def view_message(self, offset_msg_id: str) -> MessageExt:
        """By offsetMsgId: the id names the storing broker and the commit log offset. When that broker does
        not answer (a master gone), every other registered replica is asked for the same commit log offset (a
        slave's commit log, or a newly elected master's, is the old master's byte for byte); a message there
        whose store host is the id's is the one."""
        try:
            (host, port), offset = decode_offset_msg_id(offset_msg_id)
        except ValueError as exc:
            raise MQClientError(f"not an offset message id: {offset_msg_id!r} ({exc})") from None
        ext = ViewMessageRequestHeader(offset).to_ext()
        try:
            resp = await self.admin.call(f"{host}:{port}", RequestCode.VIEW_MESSAGE_BY_ID, ext)
        except UnreachableError:
            found = await self._view_on_replicas((host, port), ext)
            if found is None:
                raise
            return found
        messages = decode_pull_body(resp.body)
        if not messages:
            raise MQClientError(f"no message at {offset_msg_id}")
        return messages[0]

    async def _view_on_replicas(self, store_host: tuple[str, int], ext: dict[str, str]) -> MessageExt | None:
        """The message at a commit log offset stored by `store_host`, from any other registered replica."""
        gone = f"{store_host[0]}:{store_host[1]}"
        replicas = [a for addrs in (await self.admin.all_sets()).values() for a in addrs.values() if a != gone]
        answers = await asyncio.gather(*(self.admin._settled(
            self.admin.call(a, RequestCode.VIEW_MESSAGE_BY_ID, ext, ok=tuple(ResponseCode))) for a in replicas))
        for answer in answers:
            if isinstance(answer, Exception) or answer.code != ResponseCode.SUCCESS:
                continue
            for m in decode_pull_body(answer.body):
                if tuple(m.store_host) == store_host:
                    return m
        return None

    async def query_by_key(self, topic: str, key: str, *, max_num: int = 64, begin_ms: int = 0,
                           end_ms: int | None = None) -> MessageHits:
        """QUERY_MESSAGE on every broker set of the topic (its master, else a slave): messages whose KEYS hold
        `key`, oldest first, and the sets no replica answered for."""
        return await self._query(topic, key, max_num, begin_ms, end_ms, unique=False)

    async def query_by_unique_key(self, topic: str, uniq_key: str, *, begin_ms: int = 0,
                                  end_ms: int | None = None) -> MessageHits:
        """By msgId (the producer's UNIQ_KEY); more than one hit means the message was sent again."""
        found = await self._query(topic, uniq_key, 32, begin_ms, end_ms, unique=True)
        return MessageHits([m for m in found.messages if m.properties.get(P.UNIQ_KEY) == uniq_key], found.unreachable)

    async def _query(self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int | None, *,
                     unique: bool) -> MessageHits:
        end = end_ms if end_ms is not None else int(time.time() * 1000) + 60_000
        ext = QueryMessageRequestHeader(topic, key, max_num, begin_ms, end).to_ext()
        if unique:
            ext[UNIQUE_KEY_QUERY] = "true"

        async def query(addr: str) -> list[MessageExt]:
            resp = await self.admin.call(addr, RequestCode.QUERY_MESSAGE, ext,
                                         ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND))
            return decode_pull_body(resp.body) if resp.code == ResponseCode.SUCCESS else []

        read = await self.admin.read_sets(await self.admin.topics.topic_sets(topic), query)
        found = sorted((m for r in read.reads.values() for m in r.value),
                       key=lambda m: (m.store_timestamp, m.commit_log_offset))
        return MessageHits(found[:max_num], read.unreachable)

    async def message_at(self, mq: MessageQueue, offset: int, group: str = TOOLS_CONSUMER_GROUP) -> MessageExt | None:
        """The message at one queue offset, from the queue's master, else a slave of its set; None past the
        end or before the start of the queue. UnreachableError when no replica of the set answers."""
        sets = await self.admin.topics.topic_sets(mq.topic)
        if mq.broker_name not in sets:
            raise MQClientError(f"broker {mq.broker_name} does not serve {mq.topic}")
        ids = {addr: broker_id for broker_id, addr in sets[mq.broker_name].items()}

        async def pull(addr: str) -> MessageExt | None:
            result = await pull_once(self.admin.instance, group, mq, parse_subscription(mq.topic, "*"), offset,
                                     max_nums=1, broker_id=ids[addr])
            return next((m for m in result.messages if m.queue_offset == offset), None)

        read = await self.admin.read_sets({mq.broker_name: sets[mq.broker_name]}, pull)
        if read.unreachable:
            raise UnreachableError(f"could not read {read.unreachable[0]}")
        return read.reads[mq.broker_name].value

    async def find_message(self, topic: str, msg_id: str) -> MessageExt | None:
        """By either id, as mqadmin's queryMsgById: an offset msgId naming a broker of the cluster is
        read from that broker, anything else is looked up as a unique key (the oldest copy wins)."""
        return (await self._find(topic, msg_id, registered_only=True))[0]

    async def _find(self, topic: str, msg_id: str, *,
                    registered_only: bool = False) -> tuple[MessageExt | None, list[Unreachable]]:
        """The message by either id, and what the lookup could not read. An offset msgId is read by its commit log
        offset first (view_message: the broker that stored it, else the other replicas), whatever its host, so a
        killed master's message is read from its slave; when that read finds nothing the id is looked up as a
        unique key, the host that did not answer named beside the sets the lookup could not read. With
        `registered_only`, as mqadmin's queryMsgById: read by offset only when its host is registered, whose
        silence then raises (Apache's cannot reach a host the name servers dropped, and looks the id up as a
        unique key)."""
        try:
            (host, port), _offset = decode_offset_msg_id(msg_id)
        except ValueError:
            host, port = "", 0
        missed: list[Unreachable] = []
        if host and not registered_only:
            try:
                return await self.view_message(msg_id), []
            except UnreachableError as exc:
                missed.append(Unreachable(None, f"{host}:{port}", reason_of(exc)))
            except MQClientError:
                pass  # nothing there: the id may be a unique key that reads as an offset msgId
        elif host:
            info = await self.admin.cluster_info()
            if f"{host}:{port}" in {a for b in info.broker_addr_table.values() for a in b.broker_addrs.values()}:
                return await self.view_message(msg_id), []
        hits = await self.query_by_unique_key(topic, msg_id)
        return (hits.messages[0] if hits.messages else None), missed + hits.unreachable

    async def message_by_id(self, msg_id: str, topic: str | None = None) -> MessageDetail:
        """One message with its consuming groups' tracks (`msg get`, MCP's message_by_id): without a topic
        `msg_id` is read as an offset msgId, with one either id is, an offset msgId read from a replica of its
        host too when the name servers no longer list that host (a killed master); MessageNotFoundError, or
        UnreachableError when a set or broker that could hold it did not answer (not found is then not known)."""
        if topic is None:
            return await self.message_detail(await self.view_message(msg_id), msg_id)
        found, missed = await self._find(topic, msg_id)
        if found is None and missed:
            raise UnreachableError(f"message {msg_id} is not on the broker sets read, and could not be looked for "
                                   f"on: {'; '.join(str(u) for u in missed)}")
        return await self.message_detail(found, msg_id)

    async def message_detail(self, found: MessageExt | None, what: str) -> MessageDetail:
        """`found` with whether each group consuming its topic has consumed it; MessageNotFoundError naming
        `what` when there is no message (one not-found for every lookup that shows a message)."""
        if found is None:
            raise MessageNotFoundError(f"message not found: {what}")
        return MessageDetail(found, await self.admin.tracking.message_tracks(found))

    async def message_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues, in mqadmin's order (broker name, queue id)."""
        return await self.admin.queue_offsets.topic_queues(topic)

    async def queue_span(self, mq: MessageQueue, *, begin_ms: int | None = None,
                         end_ms: int | None = None) -> QueueSpan:
        """The offsets to read from a queue: all of it, or those stored between two times."""
        await self.admin.instance.route(mq.topic)  # a cached route is enough to find the queue's broker
        begin = await (queue_offset(self.admin.instance, mq, RequestCode.GET_MIN_OFFSET) if begin_ms is None
                       else queue_offset(self.admin.instance, mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                                         timestamp=begin_ms))
        end = await (queue_offset(self.admin.instance, mq, RequestCode.GET_MAX_OFFSET) if end_ms is None
                     else queue_offset(self.admin.instance, mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                                       timestamp=end_ms))
        return QueueSpan(mq, begin, end)

    async def topic_spans(self, topic: str, *, begin_ms: int | None = None,
                          end_ms: int | None = None) -> TopicSpans:
        """The span of each of the topic's readable queues, in mqadmin's order: what reading a topic reads. Each
        broker set's from its master, else a slave (whose node the span's pulls then go to), as every read of a
        set; a set no replica answers for is named, its queues left out (a hung master made `msg print` fail)."""
        route = await self.admin._route(topic)  # one route read for the queues and their sets
        queues, sets = sorted(route.subscribe, key=queue_key), broker_sets(route)
        ask = self.admin.queue_offsets.offset_at
        first = RequestCode.GET_MIN_OFFSET if begin_ms is None else RequestCode.SEARCH_OFFSET_BY_TIMESTAMP
        last = RequestCode.GET_MAX_OFFSET if end_ms is None else RequestCode.SEARCH_OFFSET_BY_TIMESTAMP

        node = {addr: (name, broker_id) for name, ids in sets.items() for broker_id, addr in ids.items()}

        async def spans_at(addr: str) -> list[QueueSpan]:
            name, broker_id = node[addr]
            return [QueueSpan(q, await ask(addr, q, first, begin_ms), await ask(addr, q, last, end_ms), broker_id)
                    for q in queues if q.broker_name == name]

        read = await self.admin.read_sets({q.broker_name: sets.get(q.broker_name, {}) for q in queues}, spans_at)
        got = {s.queue: s for one in read.reads.values() for s in one.value}
        return TopicSpans([got[q] for q in queues if q in got], read.unreachable)

    async def pull_messages(self, mq: MessageQueue, offset: int, *, max_nums: int = 32, expression: str = "*",
                            group: str = TOOLS_CONSUMER_GROUP, broker_id: int = MASTER_ID) -> PullResult:
        """One PULL_MESSAGE from the queue's master (or the node `broker_id` of its set) without committing
        anything (a tools pull)."""
        return await pull_once(self.admin.instance, group, mq, parse_subscription(mq.topic, expression), offset,
                               max_nums=max_nums, broker_id=broker_id)

    async def read_span(self, mq: MessageQueue, begin: int, end: int, *, expression: str = "*",
                        group: str = TOOLS_CONSUMER_GROUP, limit: int | None = None, exact: bool = True,
                        broker_id: int = MASTER_ID) -> AsyncIterator[PullResult]:
        """Pull a queue from `begin` to `end` in order, each answer as it comes: 32 messages a pull, fewer
        near `limit` messages. `exact` asks for no more than the span holds and drops what lies past
        `end`; without it every pull asks for 32 and keeps what comes (mqadmin's printMsg). Ends at
        `end`, at `limit`, after an answer that is neither FOUND nor NO_MATCHED_MSG (yielded last), or
        at an answer that does not move on."""
        offset, got = begin, 0
        while offset < end and (limit is None or got < limit):
            want = min(32, end - offset) if exact else 32
            if limit is not None:
                want = min(want, limit - got)
            result = await self.pull_messages(mq, offset, max_nums=want, expression=expression, group=group,
                                              broker_id=broker_id)
            if exact:
                result.messages = [m for m in result.messages if m.queue_offset < end][:want]
            got += len(result.messages)
            yield result
            if result.status not in (PullStatus.FOUND, PullStatus.NO_MATCHED_MSG) or result.next_begin_offset <= offset:
                return
            offset = result.next_begin_offset

    def _producer(self, group: str, **options: float) -> Producer:
        """A producer on a client instance of its own (the admin's connections carry no producer) with the admin
        session's credentials and TLS: its sends are signed and encrypted as the session's requests are."""
        return Producer(group, namesrv=self.admin.namesrv_addrs, security=self.admin.instance.remoting.security,
                        **options)

    async def send_message(self, topic: str, body: bytes, *, tags: str | None = None, keys: str | None = None,
                           broker_name: str | None = None, queue_id: int | None = None) -> SendResult:
        """One sync send (mqadmin's sendMessage), to a chosen queue when broker_name and queue_id are given."""
        if (broker_name is None) != (queue_id is None):
            raise MQClientError("give both broker_name and queue_id, or neither")
        msg = Message(topic, body)
        if tags:
            msg.properties[P.TAGS] = tags
        if keys:
            msg.properties[P.KEYS] = keys
        async with self._producer(SEND_GROUP, send_timeout=self.admin.timeout) as producer:
            queue = None if broker_name is None else MessageQueue(topic, broker_name, queue_id or 0)
            return await producer.send(msg, queue=queue)

    async def send_rt(self, broker_names: list[str], amount: int, size: int, *, group: str = SEND_GROUP,
                      on_send: Callable[[], None] | None = None) -> list[SendRT]:
        """`amount` sync sends of `size` bytes to the topic named after each broker (every broker serves
        one; RocketMQ's clusterRT probe), through one producer; `on_send` is called after each send."""
        results = []
        async with self._producer(group) as producer:
            for name in broker_names:
                samples = []
                for _ in range(amount):
                    began = time.perf_counter()
                    try:
                        await producer.send(Message(name, b"x" * size))
                        stored = True
                    except Exception:  # noqa: BLE001 - a failed send is counted, not fatal, as mqadmin does
                        stored = False
                    samples.append(((time.perf_counter() - began) * 1000, stored))
                    if on_send is not None:
                        on_send()
                results.append(SendRT(name, samples))
        return results
