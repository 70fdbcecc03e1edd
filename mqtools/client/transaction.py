"""TransactionProducer: a message sent in a local transaction (RocketMQ's TransactionMQProducer).

`send_in_transaction(msg, arg)` stores the message as a half message, which no consumer sees; runs
`execute(msg, arg)`, the local transaction, which answers COMMIT, ROLLBACK or UNKNOWN; and ends the half
message accordingly (END_TRANSACTION, oneway, to the broker that stored it). After UNKNOWN, a failed
send of the end, or a producer that died in between, the broker asks the producer group later
(CHECK_TRANSACTION_STATE): `check(msg)` answers from the local state, and the producer ends the half
message with that answer. A half message that could not be stored is rolled back without running the
local transaction, as the Java client does.

`execute` and `check` may be plain functions or coroutine functions; one that raises counts as UNKNOWN
(the broker asks again). With `trace=True` (a Producer option) each end also gets an EndTransaction record.

    async with TransactionProducer("OrderTx", namesrv=ns, execute=save_order, check=order_saved) as p:
        result = await p.send_in_transaction(Message("Orders", body), arg=order)
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Self

from mqtools.client.errors import MQClientError
from mqtools.client.instance import ClientInstance
from mqtools.client.lifecycle import Lifecycle
from mqtools.client.producer import Producer
from mqtools.client.types import SendResult, SendStatus
from mqtools.common import properties as P
from mqtools.common.ids import decode_offset_msg_id
from mqtools.common.message import Message, MessageExt
from mqtools.common.topics import AUTO_CREATE_TOPIC_KEY
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.transaction import (
    COMMIT,
    ROLLBACK,
    UNKNOWN,
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)

log = logging.getLogger(__name__)


class LocalTransactionState(enum.Enum):
    """What the local transaction says; the value is END_TRANSACTION's commitOrRollback."""

    COMMIT = COMMIT
    ROLLBACK = ROLLBACK
    UNKNOWN = UNKNOWN


#: LocalTransactionState's names in the Java client, which trace records carry.
_JAVA_STATE = {COMMIT: "COMMIT_MESSAGE", ROLLBACK: "ROLLBACK_MESSAGE", UNKNOWN: "UNKNOW"}

Execute = Callable[[Message, Any], LocalTransactionState | Awaitable[LocalTransactionState]]
Check = Callable[[MessageExt], LocalTransactionState | Awaitable[LocalTransactionState]]


@dataclass(frozen=True)
class TransactionSendResult:
    send: SendResult
    """Where the half message was stored."""
    state: LocalTransactionState
    """How the transaction was ended (UNKNOWN: left to the broker's check)."""

    @property
    def transaction_id(self) -> str:
        return self.send.msg_id


async def _answer(call: Callable[..., Any], *args: Any) -> tuple[LocalTransactionState, str | None]:
    """The callable's state, UNKNOWN with the error's text when it raised or answered something else."""
    try:
        state = call(*args)
        if inspect.isawaitable(state):
            state = await state
    except Exception as exc:  # noqa: BLE001 - the user's code failing is an unknown outcome, not ours
        return LocalTransactionState.UNKNOWN, f"{type(exc).__name__}: {exc}"
    if not isinstance(state, LocalTransactionState):
        return LocalTransactionState.UNKNOWN, f"not a LocalTransactionState: {state!r}"
    return state, None


class TransactionProducer(Lifecycle):
    """A Producer whose sends are transactions; `check` answers the brokers' questions about them."""

    def __init__(self, group: str, *, execute: Execute, check: Check, namesrv: str | list[str] | None = None,
                 instance: ClientInstance | None = None, topics: Sequence[str] = (), **options: Any) -> None:
        self.producer = Producer(group, namesrv=namesrv, instance=instance, **options)
        self.topics = list(topics)
        self.group = group
        self.execute = execute
        self.check = check
        self._checks: set[asyncio.Task] = set()
        self._announced: set[str] = set()

    @property
    def instance(self) -> ClientInstance:
        return self.producer.instance

    async def start(self) -> Self:
        """Start, and announce the group at once to the brokers of `topics` and of the auto-create topic
        (TBW102, as the Java producer's first heartbeat does): a producer started again after a crash
        answers the checks of what its predecessor left open without waiting to send first."""
        self.instance.transaction_checkers[self.group] = self._on_check
        await self.producer.start()
        for topic in [AUTO_CREATE_TOPIC_KEY, *self.topics]:
            with contextlib.suppress(MQClientError):
                await self.instance.route(topic)
        await self.instance.heartbeat()
        self._announced.update(self.instance.all_broker_addrs())
        return self

    async def shutdown(self) -> None:
        self.instance.transaction_checkers.pop(self.group, None)
        if self._checks:
            await asyncio.wait(set(self._checks), timeout=self.producer.send_timeout)
        await self.producer.shutdown()

    async def send_in_transaction(self, msg: Message, arg: Any = None) -> TransactionSendResult:
        sent = await self.producer.send_half(msg)
        if sent.status is SendStatus.SEND_OK:
            state, error = await _answer(self.execute, msg, arg)
        else:
            state, error = LocalTransactionState.ROLLBACK, f"the half message was not stored OK: {sent.status.value}"
        commit_log_offset = decode_offset_msg_id(sent.offset_msg_id)[1]
        header = EndTransactionRequestHeader(
            producer_group=self.group, tran_state_table_offset=sent.queue_offset,
            commit_log_offset=commit_log_offset, commit_or_rollback=state.value, msg_id=sent.msg_id,
            transaction_id=sent.msg_id)
        try:
            addr = self._master(sent.queue.broker_name)
            await self._end(addr, header, error, msg)
            if addr not in self._announced:  # the broker asks only producers it has a heartbeat from
                self._announced.add(addr)
                await self.instance.heartbeat()
        except MQClientError as exc:  # the broker will ask: the outcome is not lost
            log.warning("ending transaction %s failed (the broker will check it): %s", sent.msg_id, exc)
        return TransactionSendResult(sent, state)

    def _master(self, broker_name: str) -> str:
        addr = self.instance.broker_addr(broker_name, any_node=False)
        if addr is None:
            raise MQClientError(f"The broker[{broker_name}] not exist")
        return addr

    async def _end(self, broker_addr: str, header: EndTransactionRequestHeader, remark: str | None,
                   msg: Message) -> None:
        cmd = RemotingCommand.request(RequestCode.END_TRANSACTION, header.to_ext(), oneway=True)
        cmd.remark = remark
        await self.instance.invoke_oneway(broker_addr, cmd)
        tracer = self.producer.tracer
        if tracer is not None:
            tracer.end_transaction(msg, header.msg_id, broker_addr, _JAVA_STATE[header.commit_or_rollback],
                                   header.from_transaction_check)

    def _on_check(self, broker_addr: str, header: CheckTransactionStateRequestHeader, msg: MessageExt) -> None:
        task = asyncio.get_running_loop().create_task(self._answer_check(broker_addr, header, msg))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _answer_check(self, broker_addr: str, header: CheckTransactionStateRequestHeader,
                            msg: MessageExt) -> None:
        state, error = await _answer(self.check, msg)
        end = EndTransactionRequestHeader(
            producer_group=self.group, tran_state_table_offset=header.tran_state_table_offset,
            commit_log_offset=header.commit_log_offset, commit_or_rollback=state.value,
            msg_id=msg.properties.get(P.UNIQ_KEY) or msg.msg_id, transaction_id=header.transaction_id,
            from_transaction_check=True)
        try:
            await self._end(broker_addr, end, error, msg)
        except MQClientError as exc:
            log.warning("answering the check of transaction %s failed: %s", header.transaction_id, exc)
