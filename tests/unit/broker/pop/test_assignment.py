"""Server-side load balancing (QueryAssignmentProcessor's rules) and messageRequestMode.json, without a broker."""

from __future__ import annotations

import json
from pathlib import Path

from mqtools.remoting.assignment import (
    MODE_POP,
    MODE_PULL,
    MessageQueueAssignment,
    PollingInfoRequestHeader,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from mqtools.remoting.bodies import BrokerData, MessageQueue, QueueData, TopicRouteData
from mqtools.server.broker.pop.assignment import (
    allocate,
    allocate_averagely,
    allocate_by_circle,
    subscribe_queues,
)
from mqtools.server.broker.pop.request_mode import MessageRequestModeManager


def queues(n: int, broker: str = "broker-a", topic: str = "T") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def ids(mqs: list[MessageQueue]) -> list[tuple[str, int]]:
    return [(q.broker_name, q.queue_id) for q in mqs]


def test_averagely_gives_the_first_consumers_the_extra_queue() -> None:
    mqs, cids = queues(5), ["c1", "c2"]
    assert ids(allocate_averagely("c1", mqs, cids)) == [("broker-a", 0), ("broker-a", 1), ("broker-a", 2)]
    assert ids(allocate_averagely("c2", mqs, cids)) == [("broker-a", 3), ("broker-a", 4)]
    assert allocate_averagely("stranger", mqs, cids) == []


def test_by_circle_deals_queues_round_robin() -> None:
    mqs, cids = queues(5), ["c1", "c2"]
    assert [q.queue_id for q in allocate_by_circle("c1", mqs, cids)] == [0, 2, 4]
    assert [q.queue_id for q in allocate_by_circle("c2", mqs, cids)] == [1, 3]


def test_pull_mode_sorts_inputs_as_apache_does() -> None:
    mixed = queues(2, "broker-b") + queues(2, "broker-a")
    got = allocate(allocate_averagely, "c1", mixed, ["c2", "c1", "c1"], pop=False, share=0)
    assert ids(got) == [("broker-a", 0), ("broker-a", 1)]


def test_pop_without_sharing_reads_every_broker_as_queue_minus_one() -> None:
    mqs = queues(4, "broker-a") + queues(4, "broker-b")
    for share in (-1, 0, 2, 5):  # <= 0, or >= the other consumers (3 - 1)
        got = allocate(allocate_averagely, "c2", mqs, ["c1", "c2", "c3"], pop=True, share=share)
        assert ids(got) == [("broker-a", -1), ("broker-b", -1)], share


def test_pop_share_adds_the_next_consumers_slices() -> None:
    got = allocate(allocate_averagely, "c1", queues(6), ["c1", "c2", "c3"], pop=True, share=1)
    assert [q.queue_id for q in got] == [0, 1, 2, 3]
    last = allocate(allocate_averagely, "c3", queues(6), ["c1", "c2", "c3"], pop=True, share=1)
    assert [q.queue_id for q in last] == [4, 5, 0, 1]  # wraps to the first consumer


def test_pop_with_more_consumers_than_queues_leaves_none_idle() -> None:
    cids = ["c1", "c2", "c3", "c4"]
    got = {c: [q.queue_id for q in allocate(allocate_averagely, c, queues(2), cids, pop=True, share=1)] for c in cids}
    assert got == {"c1": [0], "c2": [1], "c3": [0], "c4": [1]}


def test_subscribe_info_takes_the_readable_queues_of_every_broker() -> None:
    route = TopicRouteData(
        [QueueData("broker-a", 2, 2, 6), QueueData("broker-b", 3, 3, 2), QueueData("broker-c", 1, 1, 4)],
        [BrokerData("C", "broker-a", {0: "x:1"})],
    )
    got = subscribe_queues("T", route)
    assert sorted(ids(list(got))) == [("broker-a", 0), ("broker-a", 1), ("broker-c", 0)]  # b is write-only


def test_bodies_have_apaches_json_names() -> None:
    raw = b'{"topic":"T","consumerGroup":"G","clientId":"1.2.3.4@1","strategyName":"AVG","messageModel":"CLUSTERING"}'
    body = QueryAssignmentRequestBody.from_json(raw)
    assert (body.topic, body.consumer_group, body.client_id, body.strategy_name) == ("T", "G", "1.2.3.4@1", "AVG")
    out = json.loads(QueryAssignmentResponseBody([MessageQueueAssignment(MessageQueue("T", "b", -1), MODE_POP)]).to_json())
    assert out == {"messageQueueAssignments": [{"messageQueue": {"topic": "T", "brokerName": "b", "queueId": -1},
                                                "mode": "POP"}]}
    assert json.loads(QueryAssignmentResponseBody(None).to_json()) == {}  # "keep what you have"
    assert PollingInfoRequestHeader("G", "T", -1).to_ext() == {"consumerGroup": "G", "topic": "T", "queueId": "-1"}


def test_request_modes_default_and_retry_topics_stay_pull(tmp_path: Path) -> None:
    modes = MessageRequestModeManager.from_config(tmp_path, {"defaultMessageRequestMode": "POP",
                                                             "defaultPopShareQueueNum": "2"})
    assert (modes.effective("T", "G").mode, modes.effective("T", "G").pop_share_queue_num) == (MODE_POP, 2)
    retry = modes.effective("%RETRY%G", "G")
    assert (retry.mode, retry.pop_share_queue_num) == (MODE_PULL, 0)
    plain = MessageRequestModeManager.from_config(tmp_path, {"defaultMessageRequestMode": "bogus"})
    assert plain.effective("T", "G").mode == MODE_PULL and plain.get("T", "G") is None


def test_request_modes_persist_in_apaches_file_shape(tmp_path: Path) -> None:
    modes = MessageRequestModeManager(tmp_path)
    modes.set(SetMessageRequestModeRequestBody("T", "G", MODE_POP, 1))  # outside a loop: written now
    on_disk = json.loads((tmp_path / "messageRequestMode.json").read_bytes())
    assert on_disk == {"messageRequestModeMap": {"T": {"G": {"topic": "T", "consumerGroup": "G", "mode": "POP",
                                                              "popShareQueueNum": 1}}}}
    again = MessageRequestModeManager(tmp_path)
    assert again.load() and again.effective("T", "G") == SetMessageRequestModeRequestBody("T", "G", MODE_POP, 1)


def test_request_modes_read_a_fastjson_file(tmp_path: Path) -> None:
    (tmp_path / "messageRequestMode.json").write_text(
        '{"messageRequestModeMap":{"T":{"G":{"consumerGroup":"G","mode":"POP","popShareQueueNum":0,"topic":"T"}},'
        '"U":{}}}')
    modes = MessageRequestModeManager(tmp_path)
    assert modes.load()
    assert modes.get("T", "G") == SetMessageRequestModeRequestBody("T", "G", MODE_POP, 0)
    assert "U" not in modes.table
