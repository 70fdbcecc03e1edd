"""`mq exporter` on Apache's 2m-2s SYNC cluster beside mq's (the same world on each, tkworld): the same metric
families with the same label names, and the same lag for the same group, but for the figures one side does
not give (absent, never 0): ONLY_APACHE and ONLY_MQ say which and why."""

from __future__ import annotations

import re

import pytest
from support.presetcluster import wait_for
from support.promsupport import exporter, scrape
from tkworld import LAG, World

from mqtools.exporter.catalogue import PUT_DISTRIBUTION

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

#: Only mq's cluster gives heartbeat ages (Apache's name server does not answer GET_BROKER_LIVE_TABLE). A young
#: Apache broker gives its 1- and 10-minute TPS only once it has run that long (StoreStatsService answers "").
#: mq's name servers tell heartbeat ages; mq's brokers run a timer wheel (RocketMQ 5's), Apache 4.9's do not; and
#: report the file descriptors they hold against their limit.
ONLY_MQ = {"mq_namesrv_heartbeat_age_seconds", "mq_timer_read_behind_seconds", "mq_timer_offset_behind",
           "mq_broker_open_files", "mq_broker_open_files_limit"}
UPTIME = {f"rocketmq_brokeruntime_{k}_tps{w}" for k in ("put", "getfound", "getmiss", "gettransfered", "gettotal")
          for w in (60, 600)}
#: Runtime figures of Apache's thread pools, transient store pool and put/get timings that mq's broker does not
#: keep (docs/compatibility.md, Differences): its runtime info leaves them out.
#: Its puts' time distribution too, which it reports once it has had puts (the pmdt_* families).
PUT_TIMES = {f"rocketmq_brokeruntime_pmdt_{k}" for k in PUT_DISTRIBUTION}
ONLY_APACHE = {f"rocketmq_brokeruntime_{k}" for k in (
    "dispatch_maxbuffer", "getmessage_entire_time_max", "putmessage_entire_time_max", "put_latency_99",
    "put_latency_999", "query_threadpoolqueue_headwait_timemills", "remain_transientstore_buffer_numbs",
    "start_accept_sendrequest_time")}
SAMPLE = re.compile(r"^([a-z_0-9]+)\{([^}]*)\} (\S+)$")


def families(text: str) -> dict[str, set[tuple[str, ...]]]:
    """Family name -> the label-name tuples its samples carry."""
    out: dict[str, set[tuple[str, ...]]] = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m:
            names = tuple(sorted(part.split("=", 1)[0] for part in re.findall(r'(\w+)="', m.group(2))))
            out.setdefault(m.group(1), set()).add(names)
    return out


def lag_of(text: str, group: str) -> float:
    return sum(float(m.group(3)) for line in text.splitlines() if (m := SAMPLE.match(line))
               and m.group(1) == "rocketmq_group_diff" and f'group="{group}"' in m.group(2))


def settled_scrape(addr: str) -> str:
    """A scrape once every poll of the first rounds has answered (groups and topics are polls of their own)."""

    def full() -> str | None:
        text = scrape(addr)
        return text if all(f in text for f in ("rocketmq_group_diff", "mq_ha_ready", "rocketmq_producer_offset",
                                                "rocketmq_consumer_offset")) else None

    return wait_for(full, 60, "a full scrape")


def test_the_same_families_and_labels_on_apache_as_on_mq(worlds: dict[str, World]) -> None:
    seen = {}
    for side, world in worlds.items():
        with exporter(world.namesrv) as addr:
            text = settled_scrape(addr)
            seen[side] = (families(text), lag_of(text, LAG))
    (apache, apache_lag), (ours, our_lag) = seen["apache"], seen["mq"]
    assert set(apache) - set(ours) - PUT_TIMES == ONLY_APACHE, sorted(set(apache) - set(ours))
    assert set(ours) - set(apache) - UPTIME == ONLY_MQ, sorted(set(ours) - set(apache))
    both = set(apache) & set(ours)
    assert all(apache[name] == ours[name] for name in both), [n for n in both if apache[n] != ours[n]]
    assert apache_lag == our_lag > 0
