"""The reference suite's clusters, one of each per test session: Apache RocketMQ beside mq.

`pair` gives the name server address of an Apache 4.9.7 single broker and of an mq single broker,
both with the same settings (ASYNC_MASTER, ASYNC_FLUSH, one-second delay levels, auto-created topics);
a scenario runs on both and Apache's outcome is the oracle. Every JVM started here is SIGKILLed when
the session ends, whatever happened (apache.kill_all), and each dies with pytest anyway.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apache
import pytest
from mqproc import start_broker, start_namesrv
from refsupport import CLUSTER, FAST_DELAY_LEVELS


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    apache.kill_all()


@pytest.fixture(scope="session")
def ref_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reference")


@pytest.fixture(scope="session")
def apache4(ref_root: Path) -> Iterator[str]:
    """An Apache 4.9.7 name server and ASYNC_MASTER broker; yields the name server address."""
    namesrv = apache.start_namesrv(ref_root / "apache4", "apache-4")
    broker = apache.start_broker(ref_root / "apache4", namesrv.addr, "apache-4", cluster=CLUSTER,
                                 messageDelayLevel=FAST_DELAY_LEVELS)
    yield namesrv.addr
    broker.kill()
    namesrv.kill()


@pytest.fixture(scope="session")
def mq_single(ref_root: Path) -> Iterator[str]:
    """An mq name server and ASYNC_MASTER broker with the Apache broker's settings."""
    work = ref_root / "mq"
    work.mkdir()
    namesrv = start_namesrv(work)
    broker = start_broker(work, namesrv.addr, "broker-a", brokerClusterName=CLUSTER,
                          messageDelayLevel=FAST_DELAY_LEVELS, mappedFileSizeCommitLog=str(64 * 1024 * 1024))
    yield namesrv.addr
    broker.stop()
    namesrv.stop()


@pytest.fixture(scope="session")
def pair(apache4: str, mq_single: str) -> dict[str, str]:
    """Name server addresses by side; Apache first, as the oracle runs first."""
    return {"apache": apache4, "mq": mq_single}
