"""The reference suite's clusters, one of each per test session: Apache RocketMQ beside mq.

`pair` gives the name server address of an Apache 4.9.7 single broker and of an mq single broker,
both with the same settings (ASYNC_MASTER, ASYNC_FLUSH, refsupport.BROKER_PROPS, auto-created topics,
TLS permissive: Apache's servers make a throwaway certificate, mq's are given one); a scenario runs on
both and Apache's outcome is the oracle. `proxy_worlds` puts Apache's proxy and `mq proxy` in front of Apache
5.5.0 and of mq (proxyworlds.py), for the gRPC clients' modules. Every JVM started here is SIGKILLed when
the session ends, whatever happened (apache.kill_all), and each dies with pytest anyway.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apache
import pytest
from proxyworlds import World, start_worlds
from refsupport import (
    ACL_ACCOUNT,
    ACL_CLUSTER,
    BROKER_PROPS,
    CLUSTER,
    PLAIN_ACL,
    Clusters2m2s,
    make_topic,
    name,
    slaves_in_sync,
)
from support.mqproc import start_broker, start_mq
from support.presetcluster import preset_cluster

from mqtools.cluster.certs import make_local_certificates
from mqtools.common.security import ClientSecurity, SessionCredentials


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    apache.kill_all()


@pytest.fixture(scope="session")
def ref_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reference")


#: Apache 5's broker gives each thread that writes to its commit log a direct buffer of maxMessageSize + 64 KiB
#: (4 MiB: MessageExtEncoder, a thread local kept for the thread's life), and apache.py caps direct memory at
#: 256 MiB. With the default pools (20 pull threads, which write POP checkpoints; 16 admin threads; 12
#: end-transaction threads) a session of POP and transactions through the proxies reached the cap: every put from
#: a thread new to it failed with OutOfMemoryError (POP, EndTransaction), and the clients timed out. Smaller pools
#: keep the broker well under it; they bound only how many requests of a kind it serves at once.
APACHE5_POOLS = {"pullMessageThreadPoolNums": "4", "adminBrokerThreadPoolNums": "4",
                 "endTransactionThreadPoolNums": "4"}


def _apache_single(root: Path, version: str, **props: str) -> Iterator[str]:
    """An Apache name server and ASYNC_MASTER broker of `version` with BROKER_PROPS; yields the name server."""
    namesrv = apache.start_namesrv(root, version)
    broker = apache.start_broker(root, namesrv.addr, version, cluster=CLUSTER, **BROKER_PROPS, **props)
    yield namesrv.addr
    broker.kill()
    namesrv.kill()


@pytest.fixture(scope="session")
def apache4(ref_root: Path) -> Iterator[str]:
    """Apache 4.9.7: the oracle of every pair."""
    yield from _apache_single(ref_root / "apache4", "apache-4")


@pytest.fixture(scope="session")
def apache5(ref_root: Path) -> Iterator[str]:
    """Apache 5.5.0, for our own clients, the 5.x Java client, and the proxies' worlds."""
    yield from _apache_single(ref_root / "apache5", "apache-5", **APACHE5_POOLS)


@pytest.fixture(scope="session")
def mq_single(ref_root: Path) -> Iterator[str]:
    """An mq name server and ASYNC_MASTER broker with the Apache broker's settings."""
    work = ref_root / "mq"
    work.mkdir()
    certs = make_local_certificates(work / "certs")
    tls = {"tls.server.mode": "permissive", "tls.server.certPath": str(certs.cert), "tls.server.keyPath": str(certs.key)}
    conf = work / "namesrv.properties"
    conf.write_text("".join(f"{k}={v}\n" for k, v in tls.items()))
    namesrv = start_mq(["namesrv", "start", "-c", str(conf), "--listen-port", "0", "--store-dir", str(work / "namesrv")])
    broker = start_broker(work, namesrv.addr, "broker-a", brokerClusterName=CLUSTER,
                          mappedFileSizeCommitLog=apache.COMMITLOG_FILE_SIZE, **BROKER_PROPS, **tls)
    yield namesrv.addr
    broker.stop()
    namesrv.stop()


@pytest.fixture(scope="session", params=["apache-4", "apache-5", "mq"])
def any_side(request: pytest.FixtureRequest, apache4: str, apache5: str, mq_single: str) -> str:
    """Each side in turn, for our own clients, which must behave the same against all three; the name
    server address. All three are arguments, so each world is known to be needed until the last of these."""
    return {"apache-4": apache4, "apache-5": apache5, "mq": mq_single}[request.param]


@pytest.fixture(scope="session")
def proxy_worlds(ref_root: Path, apache5: str, mq_single: str) -> Iterator[dict[str, World]]:
    """The four proxy worlds (proxyworlds.py): Apache's and mq's proxy each over Apache 5.5.0 and over mq, once
    per session for every module that compares a gRPC client's outcomes across them."""
    yield from start_worlds(ref_root / "proxies", apache5, mq_single)


@pytest.fixture(scope="session")
def pair(apache4: str, mq_single: str) -> dict[str, str]:
    """Name server addresses by side; Apache first, as the oracle runs first."""
    return {"apache": apache4, "mq": mq_single}


@pytest.fixture(scope="session")
def pair5(apache5: str, mq_single: str) -> dict[str, str]:
    """Apache 5.5.0 as the oracle, for the 5.x Java client."""
    return {"apache": apache5, "mq": mq_single}


@pytest.fixture(scope="session")
def clusters_2m2s(ref_root: Path) -> Iterator[Clusters2m2s]:
    """Apache's 2m-2s SYNC_MASTER cluster (five JVMs) and `mq cluster up --preset 2m-2s-sync`, both named
    RefCluster with BROKER_PROPS, each master with a slave that acknowledges."""
    apache_cluster = apache.start_cluster(ref_root / "apache4-2m2s", "apache-4", cluster=CLUSTER, **BROKER_PROPS)
    sets = [f"{k}={v}" for k, v in {"brokerClusterName": CLUSTER, **BROKER_PROPS}.items()]
    try:
        with preset_cluster(ref_root / "mq-2m2s", "2m-2s-sync", *sets) as mq_cluster:
            both = Clusters2m2s(apache_cluster, mq_cluster)
            for namesrv in both.namesrvs.values():
                probe = name("PROBE")
                make_topic(namesrv, probe)
                slaves_in_sync(namesrv, probe, ["broker-a", "broker-b"])
            yield both
    finally:
        apache_cluster.kill()


@pytest.fixture(scope="session")
def pair_2m2s(clusters_2m2s: Clusters2m2s) -> dict[str, str]:
    """The 2m-2s clusters' name server addresses by side, Apache first."""
    return clusters_2m2s.namesrvs


@pytest.fixture(scope="session", params=["single", "2m-2s-sync"])
def topology(request: pytest.FixtureRequest, pair: dict[str, str], pair_2m2s: dict[str, str]) -> dict[str, str]:
    """`pair`, then `pair_2m2s`: the Java client's scenarios run on a single broker and on a 2m-2s
    SYNC_MASTER cluster of each side."""
    return pair if request.param == "single" else pair_2m2s



#: The ACL brokers hold no trace topic: they share the name servers, and a trace topic routed to them too
#: would send half the other tests' unsigned trace data (and mqadmin's trace query) to a broker that
#: refuses it.
ACL_BROKER_PROPS = {**BROKER_PROPS, "traceTopicEnable": "false"}


@pytest.fixture(scope="session")
def acl_pair(ref_root: Path, apache4: str, mq_single: str) -> Iterator[dict[str, str]]:
    """A second broker on each side, aclEnable=true with PLAIN_ACL, in cluster AclCluster of the same name
    server (no auto-created topics, so no topic of the other tests lands on it); by side, its name server."""
    root = ref_root / "apache4-acl"
    conf = apache.home(apache.SETS["apache-4"], root) / "conf"
    (conf / "plain_acl.yml").write_text(PLAIN_ACL)
    apache.start_broker(root, apache4, "apache-4", name="broker-acl", cluster=ACL_CLUSTER, aclEnable="true",
                        autoCreateTopicEnable="false", security=ClientSecurity(SessionCredentials(*ACL_ACCOUNT)),
                        **ACL_BROKER_PROPS)
    work = ref_root / "mq-acl"
    work.mkdir()
    (work / "plain_acl.yml").write_text(PLAIN_ACL)
    broker = start_broker(work, mq_single, "broker-acl", brokerClusterName=ACL_CLUSTER, aclEnable="true",
                          aclFilePath=str(work / "plain_acl.yml"), autoCreateTopicEnable="false", **ACL_BROKER_PROPS)
    yield {"apache": apache4, "mq": mq_single}
    broker.stop()
