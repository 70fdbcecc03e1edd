"""Group and offset models of the admin API: reset targets, a Java client's running info, version names."""

from __future__ import annotations

import pytest

from mqtools.client.admin.models.groups import (
    ConsumerRunningInfo,
    OffsetReset,
    ResetTarget,
    rebalance_ok,
    same_subscriptions,
    unpushed_warning,
)
from mqtools.common.mqversion import version_desc
from mqtools.remoting.bodies import MessageQueue

# What a Java consumer answers to GET_CONSUMER_RUNNING_INFO: fastjson, with MessageQueue objects as map keys.
RUNNING_INFO = (b'{"jstack":"","mqTable":{{"brokerName":"broker-b","queueId":1,"topic":"T"}:{"cachedMsgCount":0},'
                b'{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"cachedMsgCount":3}},'
                b'"properties":{"consumeType":"CONSUME_PASSIVELY","PROP_CLIENT_VERSION":"V5_1_0"},'
                b'"statusTable":{},"subscriptionSet":[{"subString":"TagA || TagB","topic":"T"},'
                b'{"subString":"*","topic":"%RETRY%G"}]}')


def test_running_info_of_a_java_client_parses_its_object_keyed_queue_table() -> None:
    info = ConsumerRunningInfo.from_json("10.0.0.1@1", RUNNING_INFO)
    assert info.queues == [MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-b", 1)]
    assert info.subscriptions == {"T": "TagA || TagB", "%RETRY%G": "*"}
    assert info.properties["PROP_CLIENT_VERSION"] == "V5_1_0"
    assert '"T@broker-a@0": {\n' in info.raw and '"cachedMsgCount": 3' in info.raw


def test_subscriptions_and_rebalance_are_compared_across_clients() -> None:
    one = ConsumerRunningInfo.from_json("a", RUNNING_INFO)
    other = ConsumerRunningInfo("b", {}, dict(one.subscriptions), [MessageQueue("T", "broker-b", 0)], "{}")
    assert same_subscriptions([one, other]) and rebalance_ok([one, other])
    twice = ConsumerRunningInfo("c", {}, {"T": "*"}, [MessageQueue("T", "broker-a", 0)], "{}")
    assert not same_subscriptions([one, twice]) and not rebalance_ok([one, twice])


def test_reset_targets_say_what_they_need() -> None:
    assert ResetTarget("offset", 5, "broker-a", 2).describe() == "offset 5 on broker-a:2"
    assert ResetTarget("latest").describe() == "latest" and not ResetTarget("shift", -3).single_queue
    for bad in (("time",), ("earliest", 0), ("offset", 1, "broker-a"), ("rewind", 1)):
        with pytest.raises(ValueError):
            ResetTarget(*bad)  # type: ignore[arg-type]


def test_client_versions_are_named_as_mqadmin_names_them() -> None:
    assert [version_desc(v) for v in (0, 15, 16, 212, 407, 412)] == [
        "V3_0_0_SNAPSHOT", "V3_0_0_FINAL", "V3_0_1_SNAPSHOT", "V4_0_0_SNAPSHOT", "V4_9_7", "V5_0_0_SNAPSHOT"]
    assert version_desc(10_000) == "HIGHER_VERSION"


def test_a_reset_some_brokers_could_not_push_is_named_with_what_to_do() -> None:
    def row(broker: str, pushed: bool | None) -> OffsetReset:
        return OffsetReset(MessageQueue("T", broker, 0), 5, 2, pushed=pushed)

    warning = unpushed_warning("G", [row("broker-a", True), row("broker-b", False), row("broker-c", False)])
    assert warning is not None and warning.startswith("broker-b, broker-c had no consumer of G registered")
    assert "run the reset again after its next heartbeat" in warning
    assert unpushed_warning("G", [row("broker-a", True), row("broker-b", True)]) is None  # every broker pushed
    assert unpushed_warning("G", [row("broker-a", False), row("broker-b", False)]) is None  # nobody online at all
    assert unpushed_warning("G", [row("broker-a", None)]) is None  # not a reset by time


def test_pop_sums_are_incomplete_when_any_set_gave_none_in_whichever_order() -> None:
    """A slave (which tracks no POP messages) or an Apache broker gives no figures: the sums over the others are
    marked incomplete whether that set comes before or after them; a set not read at all does the same."""
    from mqtools.client.admin.groups import _pop_figures
    from mqtools.remoting.pop_stats import PopInFlightBody, PopQueueInFlight

    body = PopInFlightBody(tracked=True, popped=True, revived=1, queues=[PopQueueInFlight("T", 0, 5, 2)])
    assert _pop_figures([None, None], False) is None
    whole = _pop_figures([body, body], False)
    assert whole is not None and (whole.inflight, whole.revive_due, whole.revived, whole.complete) == (14, 4, 2, True)
    for answers in ([None, body], [body, None]):
        part = _pop_figures(answers, False)
        assert part is not None and (part.inflight, part.complete) == (7, False)
    cut = _pop_figures([body], True)
    assert cut is not None and not cut.complete
