"""The real C++ RocketMQ client (rocketmq==0.4.4) producing through `mq namesrv` + `mq broker`,
and its PullConsumer reading every queue back.

Each scenario runs the C++ client in a subprocess (SCRIPT below, by cppclient.run_cpp) with a
timeout, so a crash or hang inside librocketmq cannot take pytest down. The script prints one
JSON line per event; the test checks what the C++ client saw and what the broker stored.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.clientsupport import Cluster, broker_cluster, call, create_topic
from support.cppclient import SEND_SYNC, run_cpp
from support.mqproc import MqProcess

from mqtools.remoting.bodies import TopicRouteData
from mqtools.remoting.codes import RequestCode, ResponseCode

pytestmark = [pytest.mark.compat, pytest.mark.timeout(150)]

SCRIPT = SEND_SYNC + r'''
import json, sys
from rocketmq.client import Message, Producer, PullConsumer, SendStatus

def out(**kv):
    print(json.dumps(kv), flush=True)

mode, ns, topic = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "produce":
    producer = Producer("PG_CORE_COMPAT")
    producer.set_namesrv_addr(ns)
    producer.start()
    for i in range(int(sys.argv[4])):
        msg = Message(topic)
        msg.set_keys(f"sync-{i}")
        msg.set_tags("A" if i % 2 == 0 else "B")
        msg.set_body(f"sync-{i}")
        r = send_sync(producer, msg)
        out(kind="sync", body=f"sync-{i}", status=int(r.status), msg_id=r.msg_id, offset=r.offset)
    for i in range(int(sys.argv[5])):
        msg = Message(topic)
        msg.set_tags("C")
        msg.set_body(f"oneway-{i}")
        producer.send_oneway(msg)
        out(kind="oneway", body=f"oneway-{i}")
    for i in range(int(sys.argv[6])):
        key = i % 3
        msg = Message(topic)
        msg.set_keys(f"order-{key}")
        msg.set_tags("D")
        msg.set_body(f"order-{key}-{i}")
        r = producer.send_orderly(msg, key)
        out(kind="orderly", body=f"order-{key}-{i}", status=int(r.status), key=key)
    producer.shutdown()
elif mode == "pull":
    consumer = PullConsumer(sys.argv[4])
    consumer.set_namesrv_addr(ns)
    consumer.start()
    for msg in consumer.pull(topic, expression=sys.argv[5], max_num=32):
        out(body=msg.body.decode(), tags=msg.tags.decode() if isinstance(msg.tags, bytes) else msg.tags,
            queue=msg.queue_id, offset=msg.queue_offset)
    consumer.shutdown()
out(done=True)
'''


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    yield from broker_cluster(tmp_path, ["broker-core"], brokerClusterName="CoreCompat",
                              mappedFileSizeCommitLog="16777216")


async def queue_max_offsets(broker: MqProcess, topic: str, queues: int) -> list[int]:
    out = []
    for q in range(queues):
        resp = await call(broker.addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": str(q)})
        out.append(int(resp.ext_fields["offset"]))
    return out


async def test_cpp_producer_sync_oneway_orderly_then_pull_consumer(cluster) -> None:
    namesrv, broker, home = cluster.namesrv, cluster.broker, cluster.workdir
    topic, queues = "CoreCompatTopic", 4
    await create_topic(cluster, topic, queues)
    n_sync, n_oneway, n_order = 30, 10, 24
    events = run_cpp(SCRIPT, ["produce", namesrv.addr, topic, str(n_sync), str(n_oneway), str(n_order)], home)
    sync = [e for e in events if e.get("kind") == "sync"]
    assert len(sync) == n_sync and all(e["status"] == 0 for e in sync)  # SEND_OK
    assert len({e["msg_id"] for e in sync}) == n_sync
    orderly = [e for e in events if e.get("kind") == "orderly"]
    assert len(orderly) == n_order and all(e["status"] == 0 for e in orderly)

    total = n_sync + n_oneway + n_order
    for _ in range(50):  # oneway sends are not acknowledged: wait until the broker stored them
        if sum(await queue_max_offsets(broker, topic, queues)) >= total:
            break
        await asyncio.sleep(0.1)
    assert sum(await queue_max_offsets(broker, topic, queues)) == total

    pulled = run_cpp(SCRIPT, ["pull", namesrv.addr, topic, "CG_CORE_PULL", "*"], home)
    msgs = [e for e in pulled if "body" in e]
    bodies = [e["body"] for e in msgs]
    assert sorted(bodies) == sorted([e["body"] for e in events if "body" in e])
    assert len(bodies) == total  # every message exactly once over all queues
    assert {e["queue"] for e in msgs} == set(range(queues))

    # orderly: one key -> one queue (key % queues), in send order
    by_key: dict[int, list[dict]] = defaultdict(list)
    for e in msgs:
        if e["body"].startswith("order-"):
            by_key[int(e["body"].split("-")[1])].append(e)
    assert set(by_key) == {0, 1, 2}
    for key, items in by_key.items():
        assert {e["queue"] for e in items} == {key % queues}
        items.sort(key=lambda e: e["offset"])
        seq = [int(e["body"].split("-")[2]) for e in items]
        assert seq == sorted(seq) and len(seq) == n_order // 3


async def test_cpp_pull_consumer_filters_by_tag(cluster) -> None:
    namesrv, home = cluster.namesrv, cluster.workdir
    topic, queues = "CoreCompatTags", 2
    await create_topic(cluster, topic, queues)
    run_cpp(SCRIPT, ["produce", namesrv.addr, topic, "20", "0", "0"], home)
    pulled = run_cpp(SCRIPT, ["pull", namesrv.addr, topic, "CG_CORE_TAGS", "A"], home)
    bodies = sorted(e["body"] for e in pulled if "body" in e)
    assert bodies == sorted(f"sync-{i}" for i in range(0, 20, 2))
    assert {e["tags"] for e in pulled if "body" in e} == {"A"}


async def test_cpp_producer_auto_creates_its_topic(cluster) -> None:
    """No topic created beforehand: the C++ client sends via TBW102's route, the broker creates the
    topic and re-registers at once, and the pull consumer finds the new topic's queues."""
    namesrv, home = cluster.namesrv, cluster.workdir
    topic = "CoreCompatAuto"
    events = run_cpp(SCRIPT, ["produce", namesrv.addr, topic, "8", "0", "0"], home)
    assert [e["status"] for e in events if e.get("kind") == "sync"] == [0] * 8
    resp = await call(namesrv.addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    assert resp.code == ResponseCode.SUCCESS
    assert TopicRouteData.from_json(resp.body).queue_datas[0].write_queue_nums == 4  # the C++ default
    pulled = run_cpp(SCRIPT, ["pull", namesrv.addr, topic, "CG_CORE_AUTO", "*"], home)
    assert sorted(e["body"] for e in pulled if "body" in e) == sorted(f"sync-{i}" for i in range(8))
