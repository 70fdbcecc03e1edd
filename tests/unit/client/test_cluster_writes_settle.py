"""A write to every master of a cluster (topic create/update/delete, group create/update/delete) settles every
master before it answers, and says in one error where it applied, where not and why, where it is not known (no
answer in time: it may have applied), and the name servers not updated. Found in review on a 2m-2s-sync cluster:
with a master hung or a name server down only the first error was printed; a topic delete applied on both masters
(the hung one once resumed) left the name servers routing it, without a word."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from unit.client.fake_writes import DOWN, HUNG, NS0, NS1, A, B, Cluster, in_memory

from mqtools.client.admin import MQAdmin
from mqtools.client.errors import MQBrokerError, NoMasterError, PartialWriteError, RequestTimeoutError
from mqtools.common.exitcodes import EXIT_REFUSED, EXIT_UNREACHABLE
from mqtools.remoting.bodies import SubscriptionGroupConfig, TopicConfig
from mqtools.remoting.codes import RequestCode, ResponseCode


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Cluster:
    return in_memory(monkeypatch)


@pytest.fixture
async def mq(cluster: Cluster) -> AsyncIterator[MQAdmin]:
    """An admin session on the two name servers, over the cluster in memory."""
    async with MQAdmin(f"{NS0};{NS1}") as admin:
        yield admin


async def test_a_hung_master_is_named_beside_the_one_that_applied(cluster: Cluster, mq: MQAdmin) -> None:
    cluster.fails[B] = HUNG
    with pytest.raises(PartialWriteError) as raised:
        await mq.groups.create_subscription_group(SubscriptionGroupConfig("G"), cluster="C1")
    assert cluster.took == [(A, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)]
    assert raised.value.applied == [A] and list(raised.value.failed) == [B]
    assert raised.value.exit_code == EXIT_UNREACHABLE
    assert str(raised.value) == f"creating group G: applied on {A}; {B}: no answer, not known to have applied: timed out"


async def test_a_refusal_beside_an_applied_write_is_exit_1(cluster: Cluster, mq: MQAdmin) -> None:
    cluster.fails[A] = MQBrokerError(ResponseCode.NO_PERMISSION, "no permission")
    with pytest.raises(PartialWriteError) as raised:
        await mq.groups.delete_subscription_group("G", cluster="C1")
    assert cluster.took == [(B, RequestCode.DELETE_SUBSCRIPTIONGROUP)]
    assert raised.value.exit_code == EXIT_REFUSED
    assert f"{A}: refused, not applied: no permission (CODE 16 NO_PERMISSION)" in str(raised.value)


async def test_a_topic_delete_a_master_did_not_answer_names_the_name_servers_not_updated(cluster: Cluster, mq: MQAdmin) -> None:
    cluster.fails[B] = HUNG
    with pytest.raises(PartialWriteError) as raised:
        await mq.topics.delete_topic("T", "C1")
    assert cluster.took == [(A, RequestCode.DELETE_TOPIC_IN_BROKER)]  # the name servers route it still
    assert raised.value.namesrvs == {NS0: None, NS1: None}
    assert str(raised.value) == (f"deleting topic T: applied on {A}; {B}: no answer, not known to have applied: timed out; "
                                 f"name servers {NS0}, {NS1} not updated: not asked, as not every broker applied it")


async def test_a_topic_delete_a_name_server_missed_says_where_it_applied(cluster: Cluster, mq: MQAdmin) -> None:
    cluster.fails[NS0] = DOWN
    with pytest.raises(PartialWriteError) as raised:
        await mq.topics.delete_topic("T", "C1")
    assert raised.value.applied == [A, B] and raised.value.failed == {}
    assert raised.value.exit_code == EXIT_UNREACHABLE
    assert str(raised.value) == (f"deleting topic T: applied on {A}, {B}; "
                                 f"name server {NS0} not updated: no answer, not applied: connection refused")


async def test_an_ordered_topic_whose_layout_a_name_server_missed_says_so(cluster: Cluster, mq: MQAdmin) -> None:
    cluster.fails[NS0] = DOWN
    with pytest.raises(PartialWriteError) as raised:
        await mq.topics.create_topic(TopicConfig("T", 4, 4, order=True), cluster="C1")
    assert raised.value.applied == [A, B] and list(raised.value.namesrvs) == [NS0]
    assert cluster.took[-1] == (NS1, RequestCode.PUT_KV_CONFIG)


async def test_an_ordered_topic_a_master_missed_records_no_layout(cluster: Cluster, mq: MQAdmin) -> None:
    cluster.fails[A] = HUNG
    with pytest.raises(PartialWriteError) as raised:
        await mq.topics.create_topic(TopicConfig("T", 4, 4, order=True), cluster="C1")
    assert raised.value.namesrvs == {NS0: None, NS1: None}
    assert cluster.took == [(B, RequestCode.UPDATE_AND_CREATE_TOPIC)]


async def test_a_write_to_one_broker_fails_with_its_own_error(cluster: Cluster, mq: MQAdmin) -> None:
    cluster.fails[B] = HUNG
    with pytest.raises(RequestTimeoutError):
        await mq.topics.create_topic(TopicConfig("T", 4, 4), broker_addr=B)


async def test_a_set_without_a_master_still_refuses_before_anything_is_written(cluster: Cluster, mq: MQAdmin) -> None:
    cluster.sets["broker-b"] = {1: "10.0.0.3:10911"}
    with pytest.raises(NoMasterError, match="broker-b"):
        await mq.topics.delete_topic("T", "C1")
    assert cluster.took == []
