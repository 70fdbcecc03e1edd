"""SlaveSynchronize: a slave periodically copies metadata from its master's client port.

Items and rules as RocketMQ 4.x applies them: topic configs and subscription groups are
replaced when the master's dataVersion differs; consumer offsets are merged every time
(master wins on common keys, slave-only entries survive); the delay offsets body, once it decodes to
Java longs, is taken and written verbatim to delayOffset.json; the message request modes (RocketMQ 5) are
replaced; the timer's pending counts per topic (RocketMQ 5) are replaced. Runs every 10 s while the last
registration result names a master that is not this broker (first after 3 s), as Apache's; and
besides, at once when a registration names a master it has not synced from yet (Apache's slave first
syncs 3 s after it starts, so a master that dies within those seconds leaves it without the topics it
holds). The timer's checkpoint (the master's read time and queue offset) is taken every 3 s, as Apache's
slave takes it: what a slave made master delivers again after its master died is at most those seconds.

Each item fails alone, whatever it raises (Apache catches each item's Exception, and the Throwable of the
scheduled round): the failure is logged and the loop goes on. A master that hangs fails every item of every
round the same way, so each item's failure is logged at most once a minute.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from mqtools.common.atomic_file import write_atomic
from mqtools.common.log_limiter import LimitedLog
from mqtools.common.loop import wait_event
from mqtools.remoting.bodies import (
    ConsumerOffsetSerializeWrapper,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
)
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingError
from mqtools.remoting.timer import TimerCheckpointBody, TimerMetricsBody
from mqtools.server.broker.context import BrokerContext
from mqtools.server.lifecycle import cancel_and_wait
from mqtools.server.store.config_manager import DECODE_ERRORS
from mqtools.server.store.timer.timer_checkpoint import DataVersion

log = logging.getLogger("mq.broker.slave_sync")
#: The item taken every timer_interval besides the rounds; one name, so its failures share one limit.
TIMER_CHECKPOINT = "timer checkpoint"
#: What a master that does not answer, answers an error or sends a bad body makes an item raise (the tables'
#: decoders raise for a bad body what they raise for a bad file): a line naming it; anything else is a bug,
#: logged with its traceback.
PEER_ERRORS = (RemotingError, OSError, TimeoutError, *DECODE_ERRORS)


class SlaveSynchronize:
    """Pull-and-apply of the master's metadata into this broker's tables."""

    def __init__(self, broker: BrokerContext, *, interval: float = 10.0, first_delay: float = 3.0,
                 timeout: float = 3.0, timer_interval: float = 3.0) -> None:
        self.broker = broker
        self.interval = interval
        self.first_delay = first_delay
        self.timeout = timeout
        self.timer_interval = timer_interval
        self._no_timer: str | None = None
        """A master that does not know the timer's requests (RocketMQ 4): not asked again."""
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._synced_from: str | None = None
        #: Per item, a line a minute: the first failure, then how many were left out.
        self._failures = LimitedLog(log, limit=1)
        self.rounds = 0

    def master_addr(self) -> str | None:
        addr = self.broker.master_addr
        if not addr or addr == self.broker.broker_addr:
            return None
        return addr

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="slave-sync")

    def master_named(self, addr: str | None) -> None:
        """A registration result named the group's master: sync now if it is one not synced from yet."""
        if addr and addr != self._synced_from:
            self._wake.set()

    async def shutdown(self) -> None:
        await cancel_and_wait(self._task)

    async def _loop(self) -> None:
        """Rounds at first_delay and then every interval, as Apache's; a round on top whenever a new
        master is named, which does not move the periodic ones; the timer's checkpoint between them."""
        loop = asyncio.get_running_loop()
        due = timer_due = loop.time() + self.first_delay
        while True:
            await wait_event(self._wake, max(0.0, min(due, timer_due) - loop.time()))
            now = loop.time()
            if self._wake.is_set():
                self._wake.clear()
            elif now >= due:
                due += self.interval
            else:
                timer_due = now + self.timer_interval
                await self._timer_checkpoint_quietly()
                continue
            timer_due = now + self.timer_interval
            master = self.master_addr()
            if await self.sync_all():
                self._synced_from = master

    async def sync_all(self) -> bool:
        """One round; each item independently (a failing one does not stop the others)."""
        master = self.master_addr()
        if master is None:
            return False
        steps: list[tuple[str, Callable[[str], Awaitable[None]]]] = [
            ("topic config", self.sync_topic_config), ("consumer offsets", self.sync_consumer_offsets),
            ("delay offsets", self.sync_delay_offsets), ("subscription groups", self.sync_subscription_groups),
            ("message request modes", self.sync_message_request_modes)]
        if self.broker.timer is not None:
            steps += [(TIMER_CHECKPOINT, self.sync_timer_checkpoint), ("timer metrics", self.sync_timer_metrics)]
        ok = True
        for name, step in steps:
            ok = await self._item(name, step, master) and ok
        self.rounds += 1
        return ok

    async def _item(self, name: str, step: Callable[[str], Awaitable[None]], master: str) -> bool:
        """One item from `master`; False when it failed, which is logged and stops nothing else."""
        try:
            await step(master)
        except PEER_ERRORS as exc:
            self._failures.warning(name, "slave sync of %s from %s failed: %s", name, master, exc)
            return False
        except Exception:  # noqa: BLE001 - a bug in one item must not end the sync for good
            self._failures.failure(name, "slave sync of %s from %s failed", name, master)
            return False
        return True

    async def _fetch(self, master: str, code: int) -> bytes:
        resp = await self.broker.client.invoke(master, RemotingCommand.request(code), self.timeout)
        if resp.code != ResponseCode.SUCCESS:
            raise ValueError(f"code {resp.code}: {resp.remark}")
        return bytes(resp.body or b"")

    async def sync_topic_config(self, master: str) -> None:
        wrapper = TopicConfigSerializeWrapper.from_json(await self._fetch(master, RequestCode.GET_ALL_TOPIC_CONFIG))
        topics = self.broker.topics
        if wrapper.data_version is not None and wrapper.data_version != topics.data_version:
            topics.data_version = wrapper.data_version
            topics.table.clear()
            topics.table.update(wrapper.topic_config_table)
            await asyncio.to_thread(topics.persist)

    async def sync_consumer_offsets(self, master: str) -> None:
        body = await self._fetch(master, RequestCode.GET_ALL_CONSUMER_OFFSET)
        wrapper = ConsumerOffsetSerializeWrapper.from_json(body)
        offsets = self.broker.offsets
        for key, table in wrapper.offset_table.items():
            if table is not None:
                offsets.offset_table[key] = dict(table)
        await offsets.persist_async()

    async def sync_delay_offsets(self, master: str) -> None:
        body = await self._fetch(master, RequestCode.GET_ALL_DELAY_OFFSET)
        if not body:
            return
        schedule = self.broker.schedule
        schedule.decode(body)  # first: a body that is not a table of Java longs is neither taken nor written
        await asyncio.to_thread(write_atomic, schedule.path, body)

    async def sync_subscription_groups(self, master: str) -> None:
        body = await self._fetch(master, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        wrapper = SubscriptionGroupWrapper.from_json(body)
        groups = self.broker.groups
        if wrapper.data_version is not None and wrapper.data_version != groups.data_version:
            groups.table.clear()
            groups.decode(body)
            await asyncio.to_thread(groups.persist)

    async def sync_message_request_modes(self, master: str) -> None:
        """Apache's syncMessageRequestMode: the master's messageRequestMode.json replaces the slave's. A master
        that does not know the request (RocketMQ 4) has no modes: nothing to copy, and nothing failed."""
        cmd = RemotingCommand.request(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)
        resp = await self.broker.client.invoke(master, cmd, self.timeout)
        if resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            return
        if resp.code != ResponseCode.SUCCESS:
            raise ValueError(f"code {resp.code}: {resp.remark}")
        body = bytes(resp.body or b"")
        modes = self.broker.request_modes
        modes.replace(body)
        await modes.persist_async()

    async def _timer_checkpoint_quietly(self) -> None:
        master = self.master_addr()
        if master is not None and self.broker.timer is not None:
            await self._item(TIMER_CHECKPOINT, self.sync_timer_checkpoint, master)

    async def _fetch_timer(self, master: str, code: int) -> bytes | None:
        """A timer request's body; None from a master that does not know it (RocketMQ 4; asked once) or runs no
        timer (SYSTEM_ERROR, as Apache's answers then: timerWheelEnable=false there; asked again, quietly)."""
        if self._no_timer == master:
            return None
        resp = await self.broker.client.invoke(master, RemotingCommand.request(code), self.timeout)
        if resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            self._no_timer = master
            return None
        if resp.code == ResponseCode.SYSTEM_ERROR:
            return None
        if resp.code != ResponseCode.SUCCESS:
            raise ValueError(f"code {resp.code}: {resp.remark}")
        return bytes(resp.body or b"")

    async def sync_timer_checkpoint(self, master: str) -> None:
        """Apache's syncTimerCheckPoint: the master's read time and queue offset, which the slave's timer
        files up to and, made master, delivers from."""
        timer = self.broker.timer
        body = await self._fetch_timer(master, RequestCode.GET_TIMER_CHECK_POINT)
        if timer is None or body is None or timer.dequeue_running:
            return
        cp = TimerCheckpointBody.decode(body)
        version = DataVersion(cp.state_version or 0, cp.timestamp or 0, cp.counter or 0)
        await timer.follow_master(cp.last_read_time_ms, cp.master_timer_queue_offset, version)

    async def sync_timer_metrics(self, master: str) -> None:
        """Apache's syncTimerMetrics: the master's pending counts per topic replace the slave's."""
        timer = self.broker.timer
        body = await self._fetch_timer(master, RequestCode.GET_TIMER_METRICS)
        if timer is None or body is None or timer.dequeue_running:
            return
        metrics = TimerMetricsBody.from_json(body)
        timer.follow_master_metrics({t: (m.count, m.time_stamp) for t, m in metrics.timing_count.items()},
                                    metrics.data_version)
        if timer.metrics.dirty:
            await timer.metrics.persist_async()
