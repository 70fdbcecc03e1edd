"""The push consumer's rebalance when a broker does not answer: what it keeps, drops and takes without a lock."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from unit.client.fake_remoting import FakeRemoting, fake_instance, route_data

from mqtools.client.instance import ClientInstance
from mqtools.client.offset_store import OffsetStore
from mqtools.client.process_queue import LOCK_MAX_LIVE_MS, ProcessQueue
from mqtools.client.rebalance import Rebalance
from mqtools.client.types import ConsumeFromWhere
from mqtools.remoting.bodies import (
    BrokerData,
    ConsumerListBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    QueueData,
    TopicRouteData,
)
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import RemotingTimeoutError

A0, A1 = MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)
B0, C0 = MessageQueue("T", "broker-b", 0), MessageQueue("T", "broker-c", 0)


class MemoryOffsets(OffsetStore):
    """No stored offsets: every new queue starts at the broker's max offset."""

    async def read(self, mq: MessageQueue) -> int | None:
        return None

    async def persist(self, mqs: list[MessageQueue]) -> None:
        return None


class Brokers:
    """Every broker of the test: one consumer in the group (set by `instance`), each lock granted unless another
    member holds it (`held_elsewhere`), a LOCK_BATCH_MQ refused by the sets in `busy`, no answer at all from `hung`."""

    def __init__(self) -> None:
        self.client_id = ""
        self.hung: set[str] = set()
        self.busy: set[str] = set()
        self.held_elsewhere: set[MessageQueue] = set()
        self.lock_asked: list[str] = []
        #: Runs while a LOCK_BATCH_MQ is in flight (what other tasks of the consumer do meanwhile).
        self.meanwhile: Callable[[], Awaitable[None]] | None = None
        #: What the name server answers (a test changes a topic's route here).
        self.routes: dict[str, TopicRouteData] = {}

    async def __call__(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        if addr in self.hung:
            raise RemotingTimeoutError(addr, timeout, cmd.code)
        if cmd.code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
            return cmd.response(body=ConsumerListBody([self.client_id]).to_json())
        if cmd.code == RequestCode.LOCK_BATCH_MQ:
            self.lock_asked.append(addr)
            if self.meanwhile is not None:
                await self.meanwhile()
            if addr in self.busy:
                return cmd.response(ResponseCode.SYSTEM_BUSY, "too busy")
            asked = LockBatchRequestBody.from_json(cmd.body).mq_set
            return cmd.response(body=LockBatchResponseBody(asked - self.held_elsewhere).to_json())
        if cmd.code == RequestCode.GET_MAX_OFFSET:
            return cmd.response(ext_fields={"offset": "0"})
        return cmd.response()


def consumer(route: TopicRouteData, orderly: bool = False) -> tuple[Rebalance, Brokers]:
    brokers = Brokers()
    brokers.routes = {"T": route}
    instance: ClientInstance = fake_instance(FakeRemoting(brokers.routes, brokers))
    brokers.client_id = instance.client_id
    dispatched: list[ProcessQueue] = []
    rebalance = Rebalance(instance, "G", MemoryOffsets(), clustering=True,
                          consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, consume_timestamp_ms=None,
                          dispatch=dispatched.append, orderly=orderly)
    return rebalance, brokers


async def test_an_unread_consumer_list_keeps_the_topic_s_queues() -> None:
    rebalance, brokers = consumer(route_data({"broker-a": 2}))
    assert await rebalance.rebalance(["T"]) is False
    assert set(rebalance.table) == {A0, A1}
    brokers.hung.add("broker-a:10911")  # the topic's only set: neither the consumer list nor a lock is answered
    await rebalance.rebalance(["T"])
    assert set(rebalance.table) == {A0, A1}
    assert all(pq.locked for pq in rebalance.table.values())


async def test_a_lock_renewal_drops_only_what_an_answering_master_refused() -> None:
    rebalance, brokers = consumer(route_data({"broker-a": 1, "broker-b": 1, "broker-c": 1}))
    assert await rebalance.rebalance(["T"]) is False
    assert set(rebalance.table) == {A0, B0, C0}
    brokers.hung.add("broker-a:10911")  # a GC pause: the renewal times out
    brokers.busy.add("broker-c:10911")  # the request refused as a whole: nothing said of the lock
    brokers.held_elsewhere.add(B0)  # answered without B0: another member holds it
    await rebalance.rebalance(["T"])
    assert set(rebalance.table) == {A0, C0}


async def test_a_queue_dropped_while_its_lock_renewal_is_in_flight_is_left_alone() -> None:
    """What the table holds when the renewal's answer comes is what is renewed or dropped: a queue dropped while
    the answer was awaited was looked up again (a KeyError that ended the rebalance). No drop runs beside a
    rebalance today (the push consumer's shutdown cancels it first); this keeps the renewal from depending on it."""
    rebalance, brokers = consumer(route_data({"broker-a": 2}), orderly=True)
    await rebalance.rebalance(["T"])
    brokers.held_elsewhere.add(A1)

    async def shutting_down() -> None:
        brokers.meanwhile = None
        await rebalance.drop([A0, A1], 1.0)

    brokers.meanwhile = shutting_down
    await rebalance.rebalance(["T"])  # the renewal's answer: A0 locked, A1 refused
    assert brokers.lock_asked.count("broker-a:10911") >= 2


def headless_route() -> TopicRouteData:
    """broker-a with its master, broker-b with only its slave (a master outage)."""
    return TopicRouteData(
        queue_datas=[QueueData("broker-a", 1, 1), QueueData("broker-b", 1, 1)],
        broker_datas=[BrokerData("DefaultCluster", "broker-a", {0: "broker-a:10911"}),
                      BrokerData("DefaultCluster", "broker-b", {1: "broker-b-s:10911"})],
    )


async def test_a_concurrent_consumer_takes_a_masterless_set_s_queues_without_a_lock() -> None:
    rebalance, _ = consumer(headless_route(), orderly=False)
    assert await rebalance.rebalance(["T"]) is False
    assert {mq: pq.locked for mq, pq in rebalance.table.items()} == {A0: True, B0: False}


async def test_a_queue_taken_unlocked_is_locked_once_its_master_is_back_or_dropped_if_another_holds_it() -> None:
    """Else it stays unlocked for good, and a member that locks it later reads it too."""
    back = TopicRouteData(queue_datas=headless_route().queue_datas,
                          broker_datas=[BrokerData("DefaultCluster", "broker-a", {0: "broker-a:10911"}),
                                        BrokerData("DefaultCluster", "broker-b", {0: "broker-b:10911",
                                                                                  1: "broker-b-s:10911"})])
    for elsewhere, table in ((False, {A0: True, B0: True}), (True, {A0: True})):
        rebalance, brokers = consumer(headless_route(), orderly=False)
        await rebalance.rebalance(["T"])
        assert rebalance.table[B0].locked is False
        brokers.routes["T"] = back
        if elsewhere:
            brokers.held_elsewhere.add(B0)
        await rebalance.rebalance(["T"])
        assert {mq: pq.locked for mq, pq in rebalance.table.items()} == table, elsewhere


async def test_an_orderly_consumer_waits_for_the_lock_of_a_masterless_set() -> None:
    rebalance, brokers = consumer(headless_route(), orderly=True)
    assert await rebalance.rebalance(["T"]) is True
    assert set(rebalance.table) == {A0}
    assert brokers.lock_asked == ["broker-a:10911"]


async def test_an_orderly_consumer_gives_up_a_lock_it_could_not_renew_for_30_s() -> None:
    """A master that stays hung: the broker's lock lapses at 60 s and another member may take the queue, so an
    orderly consumer stops at 30 s without a renewal, as Apache's isLockExpired; a concurrent one keeps it."""
    for orderly, kept in ((True, set()), (False, {A0})):
        rebalance, brokers = consumer(route_data({"broker-a": 1}), orderly=orderly)
        await rebalance.rebalance(["T"])
        brokers.hung.add("broker-a:10911")
        await rebalance.rebalance(["T"])
        assert set(rebalance.table) == {A0}  # one renewal unanswered: kept
        rebalance.table[A0].last_lock_ms -= LOCK_MAX_LIVE_MS + 1
        await rebalance.rebalance(["T"])
        assert set(rebalance.table) == kept, orderly


async def test_a_route_the_name_server_forgot_keeps_the_topic_s_queues() -> None:
    """A name server restarted empty answers TOPIC_NOT_EXIST until the brokers register again: the consumer keeps
    its queues (it dropped them all for up to 30 s), as Apache's rebalanceByTopic keeps them without subscribe
    info. A topic never routed still gets no queues."""
    rebalance, brokers = consumer(route_data({"broker-a": 2}))
    await rebalance.rebalance(["T"])
    assert set(rebalance.table) == {A0, A1}
    del brokers.routes["T"]
    await rebalance.rebalance(["T"])
    assert set(rebalance.table) == {A0, A1}
    await rebalance.rebalance(["T", "U"])
    assert set(rebalance.table) == {A0, A1}
