"""`mq admin timer status` against real `mq namesrv` + two `mq broker`s: pending timer messages per set and
topic, delivery progress, the -b and -c selections, and a hung broker (SIGSTOP: still registered, not
answering) making the document partial rather than wrong."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.adminsupport import json_of, mq_here, one_line_error
from support.clientsupport import Cluster, broker_cluster, create_topic, until
from support.presetcluster import wait_for as until_sync
from support.promsupport import exporter, scrape

from mqtools.client.admin import MQAdmin
from mqtools.client.producer import Producer
from mqtools.common import properties as P
from mqtools.common.message import Message

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

DEADLINE = 30.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from broker_cluster(tmp_path_factory.mktemp("timerstatus"), ("broker-a", "broker-b"),
                              brokerClusterName="TimerStatusIT")


async def test_timer_status_counts_pending_and_goes_partial_when_a_set_dies(cluster: Cluster) -> None:
    await create_topic(cluster, "TimerLate", 2)
    await create_topic(cluster, "TimerSoon", 2)
    async with Producer("PG_TIMER_STATUS", namesrv=cluster.namesrv.addr) as producer:
        for i in range(6):
            await producer.send(Message("TimerLate", f"late-{i}".encode(), properties={P.TIMER_DELAY_SEC: "600"}))
        for i in range(3):
            await producer.send(Message("TimerSoon", f"soon-{i}".encode(), properties={P.TIMER_DELAY_SEC: "2"}))

    async with MQAdmin(cluster.namesrv.addr) as admin:
        async def settled() -> bool:  # the 2 s ones delivered, the 600 s ones waiting
            st = await admin.timer.timer_status()
            late = sum((b.pending or {}).get("TimerLate", 0) for b in st.brokers)
            soon = sum((b.pending or {}).get("TimerSoon", 0) for b in st.brokers)
            return late == 6 and soon == 0 and st.pending_total == 6

        await until(settled, DEADLINE, "6 pending timer messages, the short ones delivered")

    doc = json_of(mq_here("admin", "timer", "status", "-o", "json", namesrv=cluster.namesrv.addr), "TimerStatus")
    assert doc["pendingTotal"] == 6 and not doc["partial"]
    assert [b["brokerName"] for b in doc["brokers"]] == ["broker-a", "broker-b"]
    for b in doc["brokers"]:
        assert b["timerEnabled"] is True and b["source"] == "master"
        assert b["lastReadTimeMs"] is not None and abs(b["lastReadTimeMs"] - time.time() * 1000) < 20_000
        assert b["timerQueueOffset"] >= 0 and b["readBehindSeconds"] is not None
    assert sum(b["pending"].get("TimerLate", 0) for b in doc["brokers"]) == 6
    assert sum(b["timerQueueOffset"] for b in doc["brokers"]) == 9  # every timer message went through the wheel

    a_addr = cluster.brokers["broker-a"].addr
    one = json_of(mq_here("admin", "timer", "status", "-b", a_addr, "-o", "json", namesrv=cluster.namesrv.addr),
                  "TimerStatus")
    assert [(b["brokerName"], b["addr"]) for b in one["brokers"]] == [("broker-a", a_addr)]
    by_cluster = json_of(mq_here("admin", "timer", "status", "-c", "TimerStatusIT", "-o", "json",
                            namesrv=cluster.namesrv.addr), "TimerStatus")
    assert by_cluster["pendingTotal"] == 6
    table = mq_here("admin", "timer", "status", namesrv=cluster.namesrv.addr)
    assert table.returncode == 0 and "total: 6 pending timer messages on 2 broker sets" in table.stdout
    assert "most pending: TimerLate 6" in table.stdout
    one_line_error(mq_here("admin", "timer", "status", "-b", "127.0.0.1:1", namesrv=cluster.namesrv.addr), 2,
                   "no broker 127.0.0.1:1")

    # the exporter serves the same figures: pending per broker and topic, the wheel's lag per broker
    with exporter(cluster.namesrv.addr, "--timeout", "2") as addr:
        text = until_sync(lambda: (t := scrape(addr)) and 'mq_exporter_poll_ok{job="timer"} 1.0' in t and t,
                          DEADLINE, "the exporter's timer poll")
    pending = {(s.labels["broker"], s.labels["topic"]): s.value for f in text_string_to_metric_families(text)
               for s in f.samples if s.name == "mq_timer_pending"}
    assert sum(v for (_, topic), v in pending.items() if topic == "TimerLate") == 6
    assert {b for b, _ in pending} == {"broker-a", "broker-b"}
    assert 'mq_timer_read_behind_seconds{broker="broker-a",cluster="TimerStatusIT"}' in text

    b_pending = next(b["pendingTotal"] for b in doc["brokers"] if b["brokerName"] == "broker-b")
    hung = cluster.brokers["broker-b"]
    hung.signal(signal.SIGSTOP)  # registered, connected, silent
    try:
        partial = json_of(mq_here("admin", "timer", "status", "-o", "json", "--timeout", "1",
                             namesrv=cluster.namesrv.addr), "TimerStatus", 4)
        assert partial["partial"] and [u["brokerName"] for u in partial["unreachable"]] == ["broker-b"]
        assert partial["unreachable"][0]["reason"] == "timed out"
        assert [b["brokerName"] for b in partial["brokers"]] == ["broker-a"]
        assert partial["pendingTotal"] == 6 - b_pending
        text = mq_here("admin", "timer", "status", "--timeout", "1", namesrv=cluster.namesrv.addr)
        assert text.returncode == 4 and "partial: could not read broker-b" in text.stdout + text.stderr
        assert f"at least {6 - b_pending} pending" in text.stdout
    finally:
        hung.signal(signal.SIGCONT)
