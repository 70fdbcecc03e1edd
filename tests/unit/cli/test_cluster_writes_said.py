"""The cluster-wide writes' commands with a master hung or a name server down (found in review on a 2m-2s-sync
cluster, where each printed the first error only): the mqadmin dialect prints mqadmin's line per master that applied
the write and a line (stderr) per master that did not, then exits 3 when one did not answer; deleteSubGroup -c says
but swallows the error of its %RETRY%/%DLQ% topics' deletion, as Apache's does; `mq admin group delete -c` says
where the group went before the error of its topics (a re-run said "does not exist")."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner, Result
from unit.client.fake_writes import DOWN, HUNG, NS0, NS1, A, B, Cluster, in_memory

from mqtools.cli.main import app
from mqtools.client.admin.groups import GroupAdmin
from mqtools.client.admin.models.groups import GroupEntry, GroupPlacement
from mqtools.common.exitcodes import EXIT_OK, EXIT_UNREACHABLE
from mqtools.remoting.bodies import SubscriptionGroupConfig
from mqtools.remoting.codes import RequestCode


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Cluster:
    """The cluster in memory, where group G is configured on both masters."""

    async def subscription_group(_self: object, group: str) -> GroupEntry:
        config = SubscriptionGroupConfig(group)
        return GroupEntry(group, [GroupPlacement("broker-a", A, config), GroupPlacement("broker-b", B, config)])

    monkeypatch.setattr(GroupAdmin, "subscription_group", subscription_group)
    return in_memory(monkeypatch)


def mq(*args: str) -> Result:
    return CliRunner().invoke(app, ["admin", *args, "-n", f"{NS0};{NS1}"], prog_name="mq")


def test_update_topic_says_each_master_that_applied_and_each_that_did_not(cluster: Cluster) -> None:
    cluster.fails[B] = HUNG
    result = mq("updateTopic", "-c", "C1", "-t", "T")
    assert result.exit_code == EXIT_UNREACHABLE, result.output
    assert result.stdout.splitlines() == [f"create topic to {A} success."]
    assert result.stderr.splitlines() == [f"create topic to {B} failed: no answer, not known to have applied: timed out."]


def test_update_sub_group_says_each_master(cluster: Cluster) -> None:
    cluster.fails[A] = HUNG
    result = mq("updateSubGroup", "-c", "C1", "-g", "G")
    assert result.exit_code == EXIT_UNREACHABLE, result.output
    assert result.stdout.splitlines() == [f"create subscription group to {B} success."]
    assert result.stderr.splitlines() == [
        f"create subscription group to {A} failed: no answer, not known to have applied: timed out."]


def test_delete_sub_group_swallows_its_topics_error_as_mqadmin_does(cluster: Cluster) -> None:
    """The group left both masters: exit 0, the name server that missed its topics' deletion said on stderr."""
    cluster.fails[NS0] = DOWN
    result = mq("deleteSubGroup", "-c", "C1", "-g", "G")
    assert result.exit_code == EXIT_OK, result.output
    assert result.stdout.splitlines() == [
        f"delete subscription group [G] from broker [{a}] in cluster [C1] success." for a in (A, B)]
    assert [line for line in result.stderr.splitlines() if f"name server {NS0} not updated" in line]
    assert (NS1, RequestCode.DELETE_TOPIC_IN_NAMESRV) in cluster.took


def test_delete_sub_group_a_master_did_not_answer(cluster: Cluster) -> None:
    cluster.fails[B] = HUNG
    result = mq("deleteSubGroup", "-c", "C1", "-g", "G")
    assert result.exit_code == EXIT_UNREACHABLE, result.output
    assert result.stdout.splitlines() == [f"delete subscription group [G] from broker [{A}] in cluster [C1] success."]
    failed = f"delete subscription group [G] from broker [{B}] in cluster [C1] failed"
    assert result.stderr.splitlines() == [f"{failed}: no answer, not known to have applied: timed out."]
    assert [code for _, code in cluster.took] == [RequestCode.DELETE_SUBSCRIPTIONGROUP]  # its topics left alone


def test_delete_topic_says_the_name_servers_not_updated(cluster: Cluster) -> None:
    cluster.fails[NS0] = DOWN
    result = mq("deleteTopic", "-c", "C1", "-t", "T")
    assert result.exit_code == EXIT_UNREACHABLE, result.output
    assert result.stdout.splitlines() == ["delete topic [T] from cluster [C1] success."]
    assert result.stderr.splitlines() == [
        f"name server {NS0} not updated: no answer, not applied: connection refused"]


def test_delete_topic_a_master_did_not_answer(cluster: Cluster) -> None:
    cluster.fails[B] = HUNG
    result = mq("deleteTopic", "-c", "C1", "-t", "T")
    assert result.exit_code == EXIT_UNREACHABLE, result.output
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert f"applied on {A}; {B}: no answer, not known to have applied: timed out" in line
    assert f"name servers {NS0}, {NS1} not updated" in line


def test_group_delete_says_where_the_group_went_before_its_topics_error(cluster: Cluster) -> None:
    cluster.fails[NS0] = DOWN
    result = mq("group", "delete", "G", "-c", "C1", "--yes")
    assert result.exit_code == EXIT_UNREACHABLE, result.output
    assert result.stdout.splitlines() == [f"deleted group G from {A}, {B}"]
    [line] = result.stderr.splitlines()
    assert "deleting topic %RETRY%G" in line and "deleting topic %DLQ%G" in line
    assert f"name server {NS0} not updated" in line
