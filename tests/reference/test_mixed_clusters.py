"""Mixed clusters: Apache and mq servers in one cluster, used by Apache's Java client.

- an Apache broker registered with mq's name server, and an mq broker with Apache's;
- an Apache SLAVE replicating from an mq SYNC_MASTER, and an mq SLAVE from an Apache SYNC_MASTER: SYNC
  sends succeed, the commitlog bytes are identical on master and slave after the load, and once the
  master is SIGKILLed a consumer reads every message from the slave.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import apache
import pytest
from javaclient import run_java
from refsupport import consume_all, make_topic, name, slaves_in_sync
from support.mqproc import MqProcess, start_broker
from support.ports import free_port
from support.presetcluster import wait_for

from mqtools.client.admin.sync import SyncMQAdmin

pytestmark = pytest.mark.timeout(300)

FILE_SIZE = apache.COMMITLOG_FILE_SIZE


@contextmanager
def stopping(*procs: apache.ApacheProcess | MqProcess) -> Iterator[None]:
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()


def mq_broker(root: Path, namesrv: str, broker: str, cluster: str, **props: str) -> MqProcess:
    root.mkdir(parents=True, exist_ok=True)
    return start_broker(root, namesrv, broker, brokerClusterName=cluster, mappedFileSizeCommitLog=FILE_SIZE,
                        autoCreateTopicEnable="false", **props)


def produce_and_consume(namesrv: str, cluster: str, count: int = 30) -> tuple[list[str], list[str]]:
    topic = name("MIX")
    make_topic(namesrv, topic, cluster=cluster)
    sent = run_java("produce", namesrv, "--topic", topic, "--count", str(count))
    got = consume_all(namesrv, topic, count)
    return [e["status"] for e in sent.of("sent")], sorted(e["body"] for e in got)


def test_apache_broker_behind_mq_namesrv(ref_root, mq_single):
    broker = apache.start_broker(ref_root / "mix-a", mq_single, "apache-4", name="broker-mixa", cluster="MixA",
                                 autoCreateTopicEnable="false")
    with stopping(broker):
        statuses, bodies = produce_and_consume(mq_single, "MixA")
    assert statuses == ["SEND_OK"] * 30
    assert bodies == sorted(f"body-{i}" for i in range(30))


def test_mq_broker_behind_apache_namesrv(ref_root, apache4):
    broker = mq_broker(ref_root / "mix-m", apache4, "broker-mixm", "MixM")
    with stopping(broker):
        statuses, bodies = produce_and_consume(apache4, "MixM")
    assert statuses == ["SEND_OK"] * 30
    assert bodies == sorted(f"body-{i}" for i in range(30))


def commitlog(store: Path, upto: int) -> bytes:
    """The first `upto` bytes of a store's commitlog (its files in order)."""
    data = b"".join(p.read_bytes()[: int(FILE_SIZE)] for p in sorted((store / "commitlog").iterdir()))
    return data[:upto]


def max_offset(namesrv: str, addr: str) -> int:
    with SyncMQAdmin(namesrv) as admin:
        return admin.brokers.broker_runtime_info(addr).commitlog_max_offset or 0


def topics_before_the_slave(namesrv: str, cluster: str) -> tuple[str, str]:
    """The load's topic and a probe topic, made on the master before its slave starts, so the slave takes
    their configs from the master."""
    topic, probe = name("HAMIX"), name("HAPROBE")
    for t in (topic, probe):
        make_topic(namesrv, t, cluster=cluster)
    return topic, probe


def replicate_then_read_from_slave(namesrv: str, broker: str, topic: str, probe: str, master_addr: str,
                                   master_store: Path, slave_store: Path, kill_master: Callable[[], None]) -> None:
    """SYNC sends through the master, the slave's commitlog byte-equal to the master's, then the master
    SIGKILLed and every message read from the slave."""
    slaves_in_sync(namesrv, probe, [broker])
    sent = run_java("produce", namesrv, "--topic", topic, "--count", "200", "--threads", "4", "--body-size", "512")
    assert [e["status"] for e in sent.of("sent")] == ["SEND_OK"] * 200, sent.describe()
    end = max_offset(namesrv, master_addr)
    assert end > 200 * 512
    wait_for(lambda: commitlog(slave_store, end) == commitlog(master_store, end), 30,
             f"the slave's commitlog equal to the master's up to {end}")
    kill_master()
    with SyncMQAdmin(namesrv) as admin:  # the name server drops the master when its connection closes
        wait_for(lambda: 0 not in admin.cluster_info().broker_addr_table[broker].broker_addrs, 30,
                 "the name server to drop the dead master")
    got = consume_all(namesrv, topic, 200, group=name("CGSLAVE"))
    assert {e["msgId"] for e in got} == {e["msgId"] for e in sent.of("sent")}


def test_apache_slave_of_mq_sync_master(ref_root, mq_single):
    root = ref_root / "ha-mq-master"
    # a fixed listenPort, so the mq master serves its VIP channel (listenPort - 2), from which Apache's slave
    # takes the topic configs
    master = mq_broker(root, mq_single, "broker-hm", "HaMixM", brokerRole="SYNC_MASTER",
                       listenPort=str(free_port((-2, 0, 1))))
    topic, probe = topics_before_the_slave(mq_single, "HaMixM")
    slave = apache.start_broker(root, mq_single, "apache-4", name="broker-hm", broker_id=1, cluster="HaMixM",
                                mappedFileSizeCommitLog=FILE_SIZE, autoCreateTopicEnable="false")
    with stopping(slave, master):
        replicate_then_read_from_slave(mq_single, "broker-hm", topic, probe, master.addr, root / "broker-hm",
                                       slave.workdir / "store", master.kill)


def test_mq_slave_of_apache_sync_master(ref_root, apache4):
    root = ref_root / "ha-apache-master"
    master = apache.start_broker(root, apache4, "apache-4", name="broker-ha", cluster="HaMixA",
                                 brokerRole="SYNC_MASTER", mappedFileSizeCommitLog=FILE_SIZE,
                                 autoCreateTopicEnable="false")
    topic, probe = topics_before_the_slave(apache4, "HaMixA")
    slave = mq_broker(root, apache4, "broker-ha", "HaMixA", brokerRole="SLAVE", brokerId="1")
    with stopping(slave, master):
        replicate_then_read_from_slave(apache4, "broker-ha", topic, probe, master.addr, master.workdir / "store",
                                       root / "broker-ha", master.kill)
