"""A gRPC proxy's sends with one of two masters hung (SIGSTOP), then running again (SIGCONT): what the client saw,
for `mq proxy` alone (tests/integration/proxy/test_proxy_send_latency.py) and beside Apache's proxy as the oracle
(tests/reference/test_proxy_send_latency_on_apache.py). Raw gRPC sends, one at a time, so every send's status and
time are the proxy's own (the 5.x clients retry)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass

import grpc

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.apis.apache.rocketmq.v2 import service_pb2 as spb
from mqtools.remoting.codes import RequestCode
from support.clientsupport import call
from support.grpcstub import MessagingServiceStub
from support.presetcluster import wait_for

TOPIC = "PxLatency"
QUEUES = 2
"""Queues of TOPIC on each of the two brokers (the proxy takes them in turn: two sends a broker)."""
WHILE_HUNG = 12
FAST_S = 0.5
"""A send answered within this leaves its broker available at once in both proxies' tables (Apache 5's: isolation
starts at 550 ms of latency)."""
WARM_MAX = 40
BACK_WITHIN_S = 30.0
LATENCY_ON = {"sendLatencyEnable": True, "startDetectorEnable": True, "detectInterval": 1000}
"""rmq-proxy.json keys of both proxies' runs: the detector asks a broker at most once a second."""
META = [("x-mq-client-id", "latency-test")]


@dataclass(frozen=True)
class Outcome:
    """What the sends met: the status codes of those that failed or took over a second while the broker was hung,
    how many of them the live broker stored, and whether a send reached the hung broker again within
    BACK_WITHIN_S of its SIGCONT (after the send it held was stored)."""

    slow_while_hung: tuple[int, ...]
    live_stored_while_hung: int
    back: bool


#: With LATENCY_ON, Apache's proxy as the oracle and mq's: only the send that found the broker hung waited out the
#: proxy's 3 s (half of them do with the keys off), and a send reached the broker again after its 10 s out, once
#: the detector had its answer (never without it).
EXPECTED = Outcome((pb.PROXY_TIMEOUT,), WHILE_HUNG - 1, back=True)


def stored(addr: str) -> int:
    """Messages of TOPIC on the broker at `addr` (its queues' max offsets)."""
    async def total() -> int:
        answers = [await call(addr, RequestCode.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": str(q)})
                   for q in range(QUEUES)]
        return sum(int(a.ext_fields["offset"]) for a in answers)
    return asyncio.run(total())


def timed_send(stub: MessagingServiceStub, n: int) -> tuple[int, float]:
    """One send through the proxy: its status code and how long it took."""
    message = pb.Message(topic=pb.Resource(name=TOPIC), body=f"m{n}".encode())
    message.system_properties.message_id = f"LATENCY{n:08d}"
    started = time.monotonic()
    answer = stub.SendMessage(spb.SendMessageRequest(messages=[message]), metadata=META, timeout=20)
    return answer.status.code, time.monotonic() - started


def warm_up(stub: MessagingServiceStub, hung_addr: str, live: str) -> int:
    """Sends with both brokers up until the last four were each answered within FAST_S, two by each broker (the
    proxy takes the queues in turn): whatever a slow first send (a cold JVM's first connection, on a loaded
    machine) made the proxy think of a broker is undone, and the hang starts from that state in both proxies (CI
    once saw Apache's send three of its first four to one broker). Returns the sends made."""
    last: list[tuple[str, float]] = []
    on_hung, on_live = stored(hung_addr), stored(live)
    for n in range(WARM_MAX):
        code, took = timed_send(stub, n)
        assert code == pb.OK
        # a broker's max offset follows its consume queue, which Apache's fills a moment after the answer
        total = on_hung + on_live + 1
        wait_for(lambda total=total: stored(hung_addr) + stored(live) == total, 10, "the send in a consume queue")
        went = "hung" if stored(hung_addr) > on_hung else "live"
        on_hung, on_live = stored(hung_addr), stored(live)
        last = [*last, (went, took)][-2 * QUEUES:]
        brokers = [b for b, _ in last]
        if brokers.count("hung") == brokers.count("live") == QUEUES and all(t < FAST_S for _, t in last):
            return n + 1
    raise AssertionError(f"{WARM_MAX} sends and never {2 * QUEUES} fast ones in turn: {last}")


def hang_one_of_two(proxy: str, hung: tuple[str, int], live: str) -> Outcome:
    """Sends with both brokers up until they go in turn and fast (warm_up), WHILE_HUNG with the broker at `hung`
    (address, pid) SIGSTOPped, then sends until one reaches it again after its SIGCONT."""
    hung_addr, hung_pid = hung
    with grpc.insecure_channel(proxy) as channel:
        stub = MessagingServiceStub(channel)
        warm = warm_up(stub, hung_addr, live)
        hung_before, live_before = stored(hung_addr), stored(live)
        os.kill(hung_pid, signal.SIGSTOP)
        try:
            sends = [timed_send(stub, n) for n in range(warm, warm + WHILE_HUNG)]
        finally:
            os.kill(hung_pid, signal.SIGCONT)
        slow = tuple(code for code, took in sends if code != pb.OK or took > 1.0)
        answered = sum(1 for code, _ in sends if code == pb.OK)  # by the live broker: the hung one answers nothing
        wait_for(lambda: stored(live) - live_before >= answered, 10, "the answered sends in the live broker's queues")
        live_stored = stored(live) - live_before
        # the sends that met the hung broker waited in its socket: it stores them once it runs again (the client
        # was told they failed: at least once)
        wait_for(lambda: stored(hung_addr) == hung_before + len(slow), 15, "the hung broker to store the sends it held")
        before = stored(hung_addr)
        deadline, n = time.monotonic() + BACK_WITHIN_S, warm + WHILE_HUNG
        while stored(hung_addr) == before and time.monotonic() < deadline:
            assert timed_send(stub, n)[0] == pb.OK
            n += 1
            time.sleep(0.2)
        return Outcome(slow, live_stored, stored(hung_addr) > before)
