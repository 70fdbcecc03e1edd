"""The shape of every `-o json` document is what it was when the goldens were taken (architecture pass 2).

One name server and two brokers with a topic, a group, a KV entry and a few messages; each command of
jsongolden.COMMANDS runs with `-o json`, and its document's shape (jsongolden.shape: keys in order and
value types) must equal the golden. MQ_JSON_GOLDEN=write rewrites the goldens instead, on purpose only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from support.adminsupport import mq_here as mq
from support.clientsupport import Cluster, two_broker_cluster
from support.jsongolden import COMMANDS, GROUP, TOPIC, load, shape, write

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from two_broker_cluster(tmp_path_factory.mktemp("golden"))


def setup(cluster: Cluster) -> dict[str, str]:
    ns = cluster.namesrv.addr
    fill = {"ns": ns, "addr": cluster.brokers["broker-a"].addr, "cluster": "ClientIT"}
    for args in (["topic", "create", TOPIC, "-c", "ClientIT", "-r", "2", "-w", "2"],
                 ["group", "create", GROUP, "-c", "ClientIT"], ["kv", "set", "GOLDEN", "k1", "v1"]):
        result = mq("admin", *args, namesrv=ns)
        assert result.returncode == 0, result.stderr
    sent = None
    for i in range(4):
        result = mq("admin", "msg", "send", TOPIC, f"golden {i}", "--keys", "golden-key", "-o", "json", namesrv=ns)
        assert result.returncode == 0, result.stderr
        sent = json.loads(result.stdout)
    assert sent is not None
    fill["msg"], fill["uniq"] = sent["offsetMsgId"], sent["msgId"]
    return fill


def test_every_json_document_keeps_its_shape(cluster: Cluster) -> None:
    fill = setup(cluster)
    shapes: dict[str, Any] = {}
    failed = []
    for name, template in COMMANDS.items():
        result = mq(*(a.format(**fill) for a in template), "-o", "json")
        if result.returncode != 0:
            failed.append(f"{name}: exit {result.returncode} {result.stderr.strip()}")
            continue
        shapes[name] = shape(json.loads(result.stdout))
    assert not failed, failed
    if os.environ.get("MQ_JSON_GOLDEN") == "write":
        write(shapes)
        pytest.fail("goldens rewritten (MQ_JSON_GOLDEN=write): check the diff and commit it")
    golden = load()
    assert sorted(shapes) == sorted(golden)
    changed = [name for name in golden if shapes[name] != golden[name]]
    assert not changed, f"-o json shape changed for {changed}: {json.dumps(shapes[changed[0]])[:2000]}"
