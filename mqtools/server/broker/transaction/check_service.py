"""TransactionalMessageCheckService: asks producers about half messages left open.

Every transactionCheckInterval ms one round walks the half queue from the saved offset. Op messages
(read first, from their own saved offset) say which half messages have ended. An open one is left
alone while it is younger than transactionTimeOut (or its own CHECK_IMMUNITY_TIME_IN_SECONDS); then it
is copied to the end of the half queue with TRANSACTION_CHECK_TIMES + 1 and CHECK_TRANSACTION_STATE
about the copy goes to one live connection of its producer group, whose answer (END_TRANSACTION,
fromTransactionCheck) ends the copy. One checked transactionCheckMax times, or older than the store
keeps files, goes to TRANS_CHECK_MAX_TIME_TOPIC instead. The round saves both offsets as consumer
offsets of CID_RMQ_SYS_TRANS, so a restarted broker neither asks again about what ended nor forgets
what is open. As Apache's, the round stops at the first half message stored after it began, and at
the first one too young (with no immunity of its own): the queue is in store order. A round lets the
loop turn every RECORDS_PER_TURN messages read or PUTS_PER_TURN copies put (puts that never wait), so
a long one (150,000 ops ended since the last) does not hold every request meanwhile; what ends while it
is paused is in `bridge.ended` when it reaches it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mqtools.common import properties as P
from mqtools.common.codec import encode_stored
from mqtools.common.loop import PUTS_PER_TURN
from mqtools.common.message import MessageExt
from mqtools.remoting.codes import RequestCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingError
from mqtools.remoting.transaction import OP_REMOVE_TAG, CheckTransactionStateRequestHeader, op_half_offsets
from mqtools.server.broker.transaction.bridge import (
    CHECK_MAX_TIME_TOPIC,
    HALF_TOPIC,
    OP_TOPIC,
    TransactionalMessageBridge,
    origin,
    transaction_id,
)
from mqtools.server.lifecycle import cancel_and_wait
from mqtools.server.store.results import STORED

if TYPE_CHECKING:
    from mqtools.server.broker.context import BrokerContext

log = logging.getLogger(__name__)

#: Messages (half and op) a round reads before it lets the loop turn.
RECORDS_PER_TURN = 256


class _Pace:
    """A round's reads and puts since the loop last turned: it turns every RECORDS_PER_TURN reads or
    PUTS_PER_TURN puts (a copy's put never waits, so it never suspends)."""

    def __init__(self) -> None:
        self.reads = 0
        self.puts = 0

    async def read(self) -> None:
        self.reads += 1
        if self.reads >= RECORDS_PER_TURN:
            await self._turn()

    async def put(self) -> None:
        self.puts += 1
        if self.puts >= PUTS_PER_TURN:
            await self._turn()

    async def _turn(self) -> None:
        self.reads = self.puts = 0
        await asyncio.sleep(0)


@dataclass
class CheckRound:
    """What one round did (for logs and tests)."""

    checked: int = 0
    discarded: int = 0
    renewed: int = 0
    unasked: int = 0
    """Checks that found no live connection of the producer group (asked again next round)."""


class TransactionalMessageCheckService:
    def __init__(self, broker: BrokerContext, bridge: TransactionalMessageBridge) -> None:
        self.b = broker
        self.bridge = bridge
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="transaction-check")

    async def shutdown(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.b.config.transaction_check_interval / 1000)
            try:
                done = await self.check_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # a bad round must not end the service
                log.exception("transaction check round failed")
                continue
            if done.checked or done.discarded:
                log.info("transaction check: %s", done)

    # ------------------------------------------------------------------ one round

    async def _read_ops(self, op_from: int, half_from: int, pace: _Pace) -> tuple[set[int], list[tuple[int, int]]]:
        """Half offsets ended at or after `half_from`, and each op's (op offset, highest half offset it
        names); remembers every op's transaction in `bridge.ended`."""
        removed: set[int] = set()
        ops: list[tuple[int, int]] = []
        for op_offset in range(op_from, self.bridge.max_offset(OP_TOPIC)):
            await pace.read()
            op = self.bridge.op_at(op_offset)
            halves = op_half_offsets(op.body) if op is not None and op.tags == OP_REMOVE_TAG else []
            ops.append((op_offset, max(halves, default=-1)))
            named = op.keys[0] if op is not None and op.keys else ""
            for half_offset in halves:
                if half_offset >= half_from:
                    removed.add(half_offset)
                if named.isdigit():
                    key: int | None = int(named)
                else:  # an op of Apache's (no keys) or of an older mq (the client's key): its half message's
                    half = self.bridge.half_at(half_offset)
                    key = origin(half) if half is not None else None
                if key is not None and key not in self.bridge.ended:
                    self.bridge.remember(key, half_offset)
        return removed, ops

    async def check_once(self) -> CheckRound:
        cfg = self.b.config
        bridge = self.bridge
        done = CheckRound()
        started = int(self.b.clock() * 1000)
        half_from = bridge.progress(HALF_TOPIC)
        op_from = bridge.progress(OP_TOPIC)
        pace = _Pace()
        removed, ops = await self._read_ops(op_from, half_from, pace)
        offset = half_from
        half_end = bridge.max_offset(HALF_TOPIC)
        while offset < half_end:
            await pace.read()
            if offset in removed:
                offset += 1
                continue
            half = bridge.half_at(offset)
            if half is None or origin(half) in bridge.ended:
                offset += 1
                continue
            times = _int(half.properties.get(P.TRANSACTION_CHECK_TIMES), 0)
            now = int(self.b.clock() * 1000)
            age = now - half.born_timestamp
            if times >= cfg.transaction_check_max or age > self.b.store.config.file_reserved_time * 3_600_000:
                await pace.put()
                if not await self._discard(half):
                    break
                done.discarded += 1
                offset += 1
                continue
            if half.store_timestamp >= started:
                break
            own = half.properties.get(P.CHECK_IMMUNITY_TIME_IN_SECONDS)
            immunity = cfg.transaction_time_out
            if own is not None:
                seconds = _int(own, -1)
                immunity = seconds * 1000 if seconds >= 0 else cfg.transaction_time_out
                if 0 <= age < immunity:  # its own immunity: keep it, without holding up the ones after it
                    await pace.put()
                    if await self._renew(half, dict(half.properties)) is None:
                        break
                    done.renewed += 1
                    offset += 1
                    continue
            elif 0 <= age < immunity:
                break
            props = dict(half.properties)
            props[P.TRANSACTION_CHECK_TIMES] = str(times + 1)
            await pace.put()
            copy = await self._renew(half, props)
            if copy is None:
                break
            if self._ask(copy):
                done.checked += 1
            else:
                done.unasked += 1
            offset += 1
        if offset != half_from:
            bridge.save_progress(HALF_TOPIC, offset)
        op_to = op_from
        for op_offset, highest in ops:  # contiguous ops that name nothing the walk has not passed
            if highest >= offset:
                break
            op_to = op_offset + 1
        if op_to != op_from:
            bridge.save_progress(OP_TOPIC, op_to)
        return done

    async def _renew(self, half: MessageExt, props: dict[str, str]) -> MessageExt | None:
        """The half message copied to the end of its queue; the copy as stored, or None when the put failed."""
        inner = self.bridge.renew(half, props)
        result = await self.b.store.put_message(inner)
        if result.status.name not in STORED or result.append is None:
            log.warning("renewing half message %s failed: %s", half.msg_id, result.status)
            return None
        a = result.append
        return dataclasses.replace(half, properties=P.string_to_properties(inner.encoded_properties()),
                                   queue_offset=a.logics_offset, commit_log_offset=a.wrote_offset, msg_id=a.msg_id,
                                   store_timestamp=a.store_timestamp)

    async def _discard(self, half: MessageExt) -> bool:
        """Past transactionCheckMax checks: kept in TRANS_CHECK_MAX_TIME_TOPIC, never checked again."""
        self.b.topics.create_topic_in_send_message_back_method(CHECK_MAX_TIME_TOPIC, 1)
        inner = self.bridge.renew(half, dict(half.properties))
        inner.topic = CHECK_MAX_TIME_TOPIC
        result = await self.b.store.put_message(inner)
        if result.status.name not in STORED:
            log.warning("moving half message %s to %s failed: %s", half.msg_id, CHECK_MAX_TIME_TOPIC, result.status)
            return False
        log.info("half message %s (transaction %s) checked %s times: moved to %s", half.msg_id,
                 transaction_id(half), half.properties.get(P.TRANSACTION_CHECK_TIMES), CHECK_MAX_TIME_TOPIC)
        return True

    def _ask(self, copy: MessageExt) -> bool:
        """CHECK_TRANSACTION_STATE about the copy to one live connection of its producer group."""
        group = copy.properties.get(P.PGROUP, "")
        live = [info for info in self.b.producers.connections(group) if info.channel.is_open]
        if not live:
            log.debug("no live producer of group %s to ask about %s", group, copy.msg_id)
            return False
        key = transaction_id(copy)
        header = CheckTransactionStateRequestHeader(copy.queue_offset, copy.commit_log_offset, msg_id=key,
                                                    transaction_id=key, offset_msg_id=copy.msg_id)
        shown = dataclasses.replace(copy, topic=copy.properties.get(P.REAL_TOPIC, copy.topic),
                                    queue_id=_int(copy.properties.get(P.REAL_QID), 0), store_size=0)
        cmd = RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, header.to_ext(), encode_stored(shown),
                                      oneway=True)
        info = random.choice(live)
        try:
            info.channel.invoke_oneway(cmd)
        except (RemotingError, OSError) as exc:
            log.info("asking %s about transaction %s failed: %s", info.client_id, key, exc)
            return False
        return True


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default
