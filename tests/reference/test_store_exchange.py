"""The store formats, proven by the other side: an Apache 4.9.7 broker started on a store that mq wrote
(after a clean stop and after SIGKILL) serves every message at its queue and offset, and finds it by key;
and an mq broker on a store Apache wrote does the same. The Java client writes and reads on both sides.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apache
import pytest
from javaclient import run_java
from refsupport import consume_all, make_topic, name
from support.mqproc import start_broker

pytestmark = pytest.mark.timeout(300)

FILE_SIZE = apache.COMMITLOG_FILE_SIZE
COUNT = 60


def write(namesrv: str, cluster: str) -> tuple[str, dict[str, tuple[int, int]]]:
    """A topic with COUNT keyed messages (some compressed); each message's (queueId, queueOffset) by msgId."""
    topic = name("STORE")
    make_topic(namesrv, topic, cluster=cluster)
    sent = run_java("produce", namesrv, "--topic", topic, "--count", str(COUNT // 2), "--keys-prefix", "sk-")
    big = run_java("produce", namesrv, "--topic", topic, "--count", str(COUNT // 2), "--keys-prefix", "big-",
                   "--body-size", "6000")
    return topic, {e["msgId"]: (e["queueId"], e["queueOffset"]) for e in [*sent.of("sent"), *big.of("sent")]}


def read(namesrv: str, topic: str) -> dict[str, Any]:
    got = consume_all(namesrv, topic, COUNT)
    found = run_java("query", namesrv, "--topic", topic, "--key", "sk-7").of("found")
    return {"placed": {e["msgId"]: (e["queueId"], e["queueOffset"]) for e in got},
            "lens": sorted({e["bodyLen"] for e in got}), "by_key": [e["keys"] for e in found]}


def check(read_back: dict[str, Any], placed: dict[str, tuple[int, int]]) -> None:
    assert read_back["placed"] == placed
    assert read_back["lens"] == sorted({len("body-0"), len("body-10"), 6000})
    assert read_back["by_key"] == ["sk-7"]


@pytest.mark.parametrize("stop", ["clean", pytest.param("sigkill", marks=pytest.mark.soak)])
def test_apache_serves_a_store_mq_wrote(ref_root: Path, mq_single: str, apache4: str, stop: str) -> None:
    root = ref_root / f"store-by-mq-{stop}"
    root.mkdir()
    cluster, broker = f"StoreMq{stop}", f"broker-sm-{stop}"
    writer = start_broker(root, mq_single, broker, brokerClusterName=cluster, mappedFileSizeCommitLog=FILE_SIZE)
    store = root / broker
    try:
        topic, placed = write(mq_single, cluster)
    finally:
        writer.stop() if stop == "clean" else writer.kill()
    reader = apache.start_broker(root, apache4, "apache-4", name=broker, cluster=cluster,
                                 storePathRootDir=str(store), storePathCommitLog=str(store / "commitlog"),
                                 mappedFileSizeCommitLog=FILE_SIZE)
    try:
        check(read(apache4, topic), placed)
    finally:
        reader.kill()


@pytest.mark.parametrize("stop", ["clean", pytest.param("sigkill", marks=pytest.mark.soak)])
def test_mq_serves_a_store_apache_wrote(ref_root: Path, mq_single: str, apache4: str, stop: str) -> None:
    root = ref_root / f"store-by-apache-{stop}"
    cluster, broker = f"StoreAp{stop}", f"broker-sa-{stop}"
    writer = apache.start_broker(root, apache4, "apache-4", name=broker, cluster=cluster,
                                 mappedFileSizeCommitLog=FILE_SIZE)
    store = writer.workdir / "store"
    try:
        topic, placed = write(apache4, cluster)
    finally:
        writer.stop() if stop == "clean" else writer.kill()
    reader = start_broker(root, mq_single, broker, brokerClusterName=cluster, mappedFileSizeCommitLog=FILE_SIZE,
                          storePathRootDir=str(store))
    try:
        check(read(mq_single, topic), placed)
    finally:
        reader.kill()
