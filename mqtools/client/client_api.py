"""The wire calls consumers and the admin API share (RocketMQ's MQClientAPIImpl, PullAPIWrapper, MQAdminImpl).

Each function builds one request, sends it through the `ClientInstance` (the gateway) and turns the
answer into a Python value; a refusal arrives as its named `MQBrokerError`, a transport failure as
`UnreachableError`. None keeps state of its own.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Iterable
from typing import NamedTuple, Self

from mqtools.client.errors import MQClientError
from mqtools.client.instance import ClientInstance
from mqtools.client.lifecycle import Lifecycle
from mqtools.client.subscription import matches
from mqtools.client.types import PULL_STATUS_BY_CODE, PullResult, PullStatus
from mqtools.common import properties as P
from mqtools.common import sysflag
from mqtools.common.brokerrole import MASTER_ID
from mqtools.common.codec import decode_entries
from mqtools.common.message import MessageExt
from mqtools.common.security import ClientSecurity
from mqtools.common.topics import is_retry_topic
from mqtools.remoting.bodies import (
    ConsumerListBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    SubscriptionData,
)
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import (
    ConsumerGroupRequestHeader,
    ConsumerSendMsgBackRequestHeader,
    OffsetResponseHeader,
    PullMessageRequestHeader,
    QueueRequestHeader,
    SearchOffsetRequestHeader,
)

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4


def decode_pull_body(body: bytes | None) -> list[MessageExt]:
    """The stored messages of a pull answer, bodies decompressed, retry topics restored."""
    if not body:
        return []
    out = decode_entries(body)
    for msg in out:
        if msg.sys_flag & sysflag.COMPRESSED_FLAG:
            msg.body = zlib.decompress(msg.body)
            msg.sys_flag &= ~sysflag.COMPRESSED_FLAG
        real = msg.properties.get(P.RETRY_TOPIC)
        if real and is_retry_topic(msg.topic):
            msg.topic = real
    return out


async def pull_once(instance: ClientInstance, group: str, mq: MessageQueue, sub: SubscriptionData, offset: int, *,
                    max_nums: int = 32, commit_offset: int | None = None, suspend_ms: int = 0,
                    broker_id: int = MASTER_ID, timeout: float | None = None, decode: bool = True) -> PullResult:
    """One PULL_MESSAGE; with suspend_ms the broker holds it until a message arrives. With decode=False
    the stored messages stay in `body`, unfiltered by tag."""
    addr = instance.broker_addr(mq.broker_name, broker_id)
    if addr is None:
        await instance.route(mq.topic, refresh=True)
        addr = instance.broker_addr(mq.broker_name, broker_id)
        if addr is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
    flag = FLAG_SUBSCRIPTION | (FLAG_SUSPEND if suspend_ms else 0)
    if commit_offset is not None and commit_offset >= 0:
        flag |= FLAG_COMMIT_OFFSET
    header = PullMessageRequestHeader(
        consumer_group=group, topic=mq.topic, queue_id=mq.queue_id, queue_offset=offset, max_msg_nums=max_nums,
        sys_flag=flag, commit_offset=max(commit_offset or 0, 0), suspend_timeout_millis=suspend_ms,
        sub_version=sub.sub_version, subscription=sub.sub_string, expression_type="TAG",
    )
    wait = timeout if timeout is not None else instance.timeout + suspend_ms / 1000
    resp = await instance.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, header.to_ext()), wait,
                                 ok=PULL_STATUS_BY_CODE)
    status = PULL_STATUS_BY_CODE[resp.code]  # type: ignore[index]
    ext = resp.ext_fields
    result = PullResult(status, int(ext.get("nextBeginOffset", offset)), int(ext.get("minOffset", 0)),
                        int(ext.get("maxOffset", 0)), suggest_which_broker_id=int(ext.get("suggestWhichBrokerId", 0)))
    if status is PullStatus.FOUND and not decode:
        result.body = resp.body
    elif status is PullStatus.FOUND:
        msgs = decode_pull_body(resp.body)
        result.messages = [m for m in msgs if matches(sub, m)] if sub.tags_set else msgs
    return result


async def queue_offset(instance: ClientInstance, mq: MessageQueue, code: RequestCode, **extra: int) -> int:
    """GET_MAX_OFFSET / GET_MIN_OFFSET, or SEARCH_OFFSET_BY_TIMESTAMP with `timestamp=`."""
    addr = instance.broker_addr(mq.broker_name)
    if addr is None:
        raise MQClientError(f"The broker[{mq.broker_name}] not exist")
    if extra:
        ext = SearchOffsetRequestHeader(mq.topic, mq.queue_id, extra["timestamp"]).to_ext()
    else:
        ext = QueueRequestHeader(mq.topic, mq.queue_id).to_ext()
    resp = await instance.invoke(addr, RemotingCommand.request(code, ext))
    return OffsetResponseHeader.from_ext(resp.ext_fields).offset


async def consumer_ids(instance: ClientInstance, group: str, brokers: Iterable[str]) -> list[str] | None:
    """GET_CONSUMER_LIST_BY_GROUP from the first broker that answers with the list; None when none does (none
    reachable, or each refused: one that has not had this client's heartbeat yet says "no consumer"). The caller
    must tell None from a list, or a hung master would take every queue of its topic away."""
    for name in brokers:
        addr = instance.broker_addr(name)
        if addr is None:
            continue
        header = ConsumerGroupRequestHeader(group).to_ext()
        try:
            resp = await instance.invoke(addr, RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header))
        except MQClientError:
            continue
        if resp.body:
            return ConsumerListBody.from_json(resp.body).consumer_id_list
    return None


def _by_broker(mqs: Iterable[MessageQueue]) -> dict[str, set[MessageQueue]]:
    by_broker: dict[str, set[MessageQueue]] = {}
    for mq in mqs:
        by_broker.setdefault(mq.broker_name, set()).add(mq)
    return by_broker


class LockAnswer(NamedTuple):
    """LOCK_BATCH_MQ's outcome. `refused`: the queues a master that answered left out (another member holds them).
    The queues in neither were not answered for (no master in the route, unreachable, the request refused): their
    lock is unknown, not lost, as Apache's lockAll keeps them."""

    locked: set[MessageQueue]
    refused: set[MessageQueue]


async def lock_batch(instance: ClientInstance, group: str, mqs: Iterable[MessageQueue]) -> LockAnswer:
    """LOCK_BATCH_MQ on each queue's master."""
    answer = LockAnswer(set(), set())
    for name, queues in _by_broker(mqs).items():
        addr = instance.broker_addr(name, any_node=False)
        if addr is None:
            continue
        body = LockBatchRequestBody(group, instance.client_id, queues).to_json()
        try:
            resp = await instance.invoke(addr, RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, body=body))
        except MQClientError:
            continue
        locked = LockBatchResponseBody.from_json(resp.body).lock_ok_mq_set if resp.body else set()
        answer.locked.update(locked)
        answer.refused.update(queues - locked)
    return answer


async def unlock_batch(instance: ClientInstance, group: str, mqs: Iterable[MessageQueue]) -> None:
    """UNLOCK_BATCH_MQ on each queue's master, best effort: the broker lock expires anyway (so a master whose last
    request timed out is not asked)."""
    for name, queues in _by_broker(mqs).items():
        addr = instance.broker_addr(name, any_node=False)
        if addr is None or instance.timed_out(addr):
            continue
        body = LockBatchRequestBody(group, instance.client_id, queues).to_json()
        with contextlib.suppress(MQClientError):
            await instance.invoke(addr, RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, body=body))


async def send_back(instance: ClientInstance, group: str, mq: MessageQueue, msg: MessageExt,
                    max_reconsume_times: int) -> bool:
    """CONSUMER_SEND_MSG_BACK to the set's master (a slave refuses it): the broker schedules the retry (or the DLQ);
    False if it refused, or did not answer, or the set has no master."""
    addr = instance.broker_addr(mq.broker_name, any_node=False)
    if addr is None:
        return False
    header = ConsumerSendMsgBackRequestHeader(
        offset=msg.commit_log_offset, group=group, delay_level=0, origin_msg_id=msg.msg_id,
        origin_topic=msg.topic, max_reconsume_times=max_reconsume_times,
    )
    try:
        await instance.invoke(addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext()))
    except MQClientError:
        return False
    return True


class ConsumerBase(Lifecycle):
    """What the consumers share: their ClientInstance (started and shut down with them unless a consumer
    does more) and the queue queries of RocketMQ's MQAdminImpl."""

    def __init__(self, group: str, namesrv: str | list[str] | None, instance: ClientInstance | None,
                 security: ClientSecurity | None = None) -> None:
        if instance is None and namesrv is None:
            raise MQClientError("a consumer needs namesrv= or instance=")
        self.group = group
        self.instance = instance or ClientInstance(namesrv, security=security)  # type: ignore[arg-type]

    async def start(self) -> Self:
        await self.instance.start()
        return self

    async def shutdown(self) -> None:
        await self.instance.shutdown()

    async def fetch_queues(self, topic: str) -> list[MessageQueue]:
        route = await self.instance.route(topic, refresh=True)
        if route is None:
            raise MQClientError(f"No route info of this topic: {topic}")
        return list(route.subscribe)

    async def max_offset(self, mq: MessageQueue) -> int:
        await self._routed(mq)
        return await queue_offset(self.instance, mq, RequestCode.GET_MAX_OFFSET)

    async def _routed(self, mq: MessageQueue) -> None:
        """Know the queue's brokers before talking to them: an executor handed a queue may commit first."""
        if mq.topic not in self.instance.routes:
            await self.instance.route(mq.topic)

    async def min_offset(self, mq: MessageQueue) -> int:
        return await queue_offset(self.instance, mq, RequestCode.GET_MIN_OFFSET)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return await queue_offset(self.instance, mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, timestamp=timestamp_ms)
