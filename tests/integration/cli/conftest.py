"""`mq admin` against one name server and two brokers (real processes) shared by a test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.clientsupport import Cluster, two_broker_cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from two_broker_cluster(tmp_path_factory.mktemp("admin"))
