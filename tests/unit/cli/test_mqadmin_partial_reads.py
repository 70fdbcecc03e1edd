"""The mqadmin dialect's reads with part of a cluster down (found on a 2m-2s-sync cluster in review):
brokerStatus -c shows every broker that answers and names the ones that do not (it stopped at the first, and
left out every broker of a set with no master); queryMsgByKey and queryMsgByUniqueKey fail as Apache's
queryMessage does when nothing is found, and name the sets not read (they printed a bare header, exit 0);
statsAll prints n/a, and `broker stats` "at least", for a sum that leaves a set out (they printed the other
set's sums as the totals)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner, Result

from mqtools.cli.main import app
from mqtools.client.admin.base import AdminBase
from mqtools.client.admin.brokers import BrokerAdmin
from mqtools.client.admin.groups import GroupAdmin
from mqtools.client.admin.messages import MessageAdmin
from mqtools.client.admin.models.brokers import BrokerRuntime
from mqtools.client.admin.models.groups import ConsumerProgress
from mqtools.client.admin.models.messages import MessageHits, MessageTracks
from mqtools.client.admin.models.topics import TopicConsumers
from mqtools.client.admin.topics import TopicAdmin
from mqtools.client.admin.tracking import TrackingAdmin
from mqtools.client.errors import ConnectFailedError, RequestTimeoutError
from mqtools.common.exitcodes import EXIT_OK, EXIT_PARTIAL, EXIT_REFUSED, EXIT_UNREACHABLE
from mqtools.common.message import MessageExt
from mqtools.common.presentation import Unreachable
from mqtools.remoting.bodies import BrokerData, BrokerStatsData, BrokerStatsItem, ClusterInfo

A0, A1, B1 = "10.0.0.1:10911", "10.0.0.2:10911", "10.0.0.4:10911"
"""broker-a's master and slave; broker-b's slave (its master is gone)."""
NO_MESSAGE = "query message by key finished, but no message."
LOST_B = Unreachable("broker-b", B1, "no master registered; slave: timed out")


def mq(*args: str) -> Result:
    return CliRunner().invoke(app, ["admin", *args, "-n", "127.0.0.1:1"], prog_name="mq")


# -- brokerStatus -c ---------------------------------------------------------------------------------


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> dict[str, Exception | None]:
    """Each broker's answer to GET_BROKER_RUNTIME_INFO (None: its table), in cluster C1 of broker-a (A0, A1) and
    broker-b (B1 only: no master)."""
    answers: dict[str, Exception | None] = {A0: None, A1: None, B1: None}
    info = ClusterInfo({"broker-a": BrokerData("C1", "broker-a", {0: A0, 1: A1}),
                        "broker-b": BrokerData("C1", "broker-b", {1: B1})}, {"C1": {"broker-a", "broker-b"}})

    async def cluster_info(_self: object) -> ClusterInfo:
        return info

    async def broker_runtime_info(_self: object, addr: str) -> BrokerRuntime:
        failure = answers[addr]
        if failure is not None:
            raise failure
        return BrokerRuntime.from_table({"brokerActive": "true", "runtime": addr})

    monkeypatch.setattr(AdminBase, "cluster_info", cluster_info)
    monkeypatch.setattr(BrokerAdmin, "broker_runtime_info", broker_runtime_info)
    return answers


def test_broker_status_of_a_cluster_shows_every_broker_that_answers(runtime: dict[str, Exception | None]) -> None:
    """A hung master no longer stops the listing, and the slave of a set with no master is shown."""
    runtime[A0] = RequestTimeoutError(f"request code 28 to {A0} timed out after 3.000s")
    result = mq("brokerStatus", "-c", "C1")
    assert result.exit_code == EXIT_PARTIAL, result.output  # as every read that leaves a broker out
    shown = {line[:24].rstrip() for line in result.stdout.splitlines()}
    assert shown == {A1, B1}
    assert f"{B1:<24} {'brokerActive':<32}: true" in result.stdout.splitlines()
    [error] = result.stderr.splitlines()
    assert A0 in error and "timed out" in error


def test_broker_status_of_a_cluster_none_answering_fails(runtime: dict[str, Exception | None]) -> None:
    runtime.update({a: ConnectFailedError(f"connect to {a} failed", "connection refused") for a in runtime})
    result = mq("brokerStatus", "-c", "C1")
    assert result.exit_code == EXIT_UNREACHABLE, result.output
    assert result.stdout == ""
    errors = result.stderr.splitlines()
    assert len(errors) == 3 and all(a in line for a, line in zip((A0, A1, B1), errors, strict=True)), errors


def test_broker_config_of_a_cluster_shows_every_broker_that_answers_and_the_masterless_sets_slaves(
        runtime: dict[str, Exception | None], monkeypatch: pytest.MonkeyPatch) -> None:
    """getBrokerConfig -c stopped at the first broker that failed and left out a set with no master."""
    async def broker_config(_self: object, addr: str) -> dict[str, str]:
        failure = runtime[addr]
        if failure is not None:
            raise failure
        return {"brokerName": addr}

    monkeypatch.setattr(BrokerAdmin, "broker_config", broker_config)
    whole = mq("getBrokerConfig", "-c", "C1")
    assert whole.exit_code == EXIT_OK, whole.output
    assert [line for line in whole.stdout.splitlines() if line.startswith("====")] == [
        f"============Master: {A0}============", f"============My Master: {A0}=====Slave: {A1}============",
        f"============My Master: null=====Slave: {B1}============"]
    assert whole.stderr == "broker-b: no master registered; its slaves are shown\n"
    runtime[A0] = RequestTimeoutError(f"request code 26 to {A0} timed out after 3.000s")
    partial = mq("getBrokerConfig", "-c", "C1")
    assert partial.exit_code == EXIT_PARTIAL, partial.output
    assert f"============My Master: {A0}=====Slave: {A1}============" in partial.stdout.splitlines()
    assert f"getBrokerConfig of {A0} failed" in partial.stderr


def test_update_broker_config_of_a_cluster_with_a_masterless_set_writes_nothing(
        runtime: dict[str, Exception | None], monkeypatch: pytest.MonkeyPatch) -> None:
    """updateBrokerConfig -c skipped a set with no master without a word: its master came back with the old value."""
    written: list[str] = []

    async def update_broker_config(_self: object, addr: str, values: dict[str, str]) -> None:
        written.append(addr)

    monkeypatch.setattr(BrokerAdmin, "update_broker_config", update_broker_config)
    for extra in ((), ("-a", "true")):
        refused = mq("updateBrokerConfig", "-c", "C1", "-k", "maxMessageSize", "-v", "1024", *extra)
        assert (refused.exit_code, refused.stdout, written) == (EXIT_REFUSED, "", []), refused.output
        assert "broker set broker-b has no master registered" in refused.stderr


# -- queryMsgByKey / queryMsgByUniqueKey --------------------------------------------------------------


def _message() -> MessageExt:
    return MessageExt("RT", b"x", properties={"KEYS": "key1", "UNIQ_KEY": "C0A8010A00002A9F0000000000000001"},
                      queue_id=3, queue_offset=7, store_host=("10.0.0.1", 10911),
                      msg_id="0A00000100002A9F0000000000000400")


@pytest.fixture
def hits(monkeypatch: pytest.MonkeyPatch) -> list[MessageHits]:
    """What the index query answers (the one hits set in the list), by key and by unique key alike."""
    answer: list[MessageHits] = []

    async def query(_self: object, topic: str, key: str, **_kw: object) -> MessageHits:
        return answer[0]

    async def message_tracks(_self: object, msg: MessageExt) -> MessageTracks:
        return MessageTracks([], [])

    monkeypatch.setattr(MessageAdmin, "query_by_key", query)
    monkeypatch.setattr(MessageAdmin, "query_by_unique_key", query)
    monkeypatch.setattr(TrackingAdmin, "message_tracks", message_tracks)
    return answer


BY_KEY = ("queryMsgByKey", "-t", "RT", "-k", "key1")
BY_UNIQUE = ("queryMsgByUniqueKey", "-t", "RT", "-i", "C0A8010A00002A9F0000000000000001")


@pytest.mark.parametrize("args", [BY_KEY, BY_UNIQUE], ids=["key", "unique"])
def test_a_key_found_nowhere_fails_as_apache_does(hits: list[MessageHits], args: tuple[str, ...]) -> None:
    hits.append(MessageHits([], []))
    result = mq(*args)
    assert result.exit_code == EXIT_REFUSED, result.output
    assert result.stdout == ""
    [error] = result.stderr.splitlines()
    assert NO_MESSAGE in error and "NO_MESSAGE" in error


@pytest.mark.parametrize("args", [BY_KEY, BY_UNIQUE], ids=["key", "unique"])
def test_a_key_not_found_on_the_sets_read_is_not_known(hits: list[MessageHits], args: tuple[str, ...]) -> None:
    hits.append(MessageHits([], [LOST_B]))
    result = mq(*args)
    assert result.exit_code == EXIT_UNREACHABLE, result.output
    assert result.stdout == ""
    [error] = result.stderr.splitlines()
    assert "broker-b" in error and "timed out" in error


@pytest.mark.parametrize("args", [BY_KEY, BY_UNIQUE], ids=["key", "unique"])
def test_hits_that_leave_a_set_out_name_it(hits: list[MessageHits], args: tuple[str, ...]) -> None:
    hits.append(MessageHits([_message()], [LOST_B]))
    result = mq(*args)
    assert result.exit_code == EXIT_OK, result.output
    assert "C0A8010A00002A9F0000000000000001" in result.stdout
    [note] = result.stderr.splitlines()
    assert "broker-b" in note and "timed out" in note


def test_hits_from_every_set_print_no_note(hits: list[MessageHits]) -> None:
    hits.append(MessageHits([_message()], []))
    result = mq(*BY_KEY)
    assert result.exit_code == EXIT_OK and result.stderr == "", result.output
    assert len(result.stdout.splitlines()) == 2


# -- statsAll / broker stats -------------------------------------------------------------------------


@pytest.fixture
def lost_offsets(monkeypatch: pytest.MonkeyPatch) -> list[Unreachable]:
    """Topic RT on broker-a (A0, A1: 40 puts and gets today) and broker-b (B1 only: its master killed), consumed
    by RG with a backlog of 40 read; the sets whose offsets of RG could not be read go in the list."""
    lost: list[Unreachable] = []

    async def topic_sets(_self: object, topic: str, cluster: str | None = None) -> dict[str, dict[int, str]]:
        return {"broker-a": {0: A0, 1: A1}, "broker-b": {1: B1}}

    async def topic_consumed_by(_self: object, topic: str) -> TopicConsumers:
        return TopicConsumers(["RG"], [])

    async def broker_stats(_self: object, addr: str, stats_name: str, stats_key: str) -> BrokerStatsData:
        assert addr == A0
        return BrokerStatsData(stats_day=BrokerStatsItem(40))

    async def consumer_progress(_self: object, group: str, topic: str | None = None,
                                **_kw: object) -> ConsumerProgress:
        return ConsumerProgress(group, unreachable=list(lost))

    monkeypatch.setattr(TopicAdmin, "topic_sets", topic_sets)
    monkeypatch.setattr(TopicAdmin, "topic_consumed_by", topic_consumed_by)
    monkeypatch.setattr(BrokerAdmin, "broker_stats", broker_stats)
    monkeypatch.setattr(GroupAdmin, "consumer_progress", consumer_progress)
    return lost


def test_stats_all_prints_na_for_sums_without_a_set(lost_offsets: list[Unreachable]) -> None:
    """broker-b's counters are its dead master's: the 24-hour and TPS sums leave it out, so they are n/a (as for a
    hung master); the backlog, read from the slave, is whole."""
    result = mq("statsAll", "-t", "RT")
    assert result.exit_code == EXIT_OK, result.output
    assert result.stdout.splitlines()[1].split() == ["RT", "RG", "0", "n/a", "n/a", "n/a", "n/a"]


def test_stats_all_prints_na_for_a_backlog_without_a_set(lost_offsets: list[Unreachable]) -> None:
    lost_offsets.append(LOST_B)
    result = mq("statsAll", "-t", "RT")
    assert result.exit_code == EXIT_OK, result.output
    assert result.stdout.splitlines()[1].split()[:3] == ["RT", "RG", "n/a"]


def test_broker_stats_says_at_least_for_sums_without_a_set(lost_offsets: list[Unreachable]) -> None:
    lost_offsets.append(LOST_B)
    result = mq("broker", "stats", "-t", "RT")
    assert result.exit_code == EXIT_PARTIAL, result.output
    row = result.stdout.splitlines()[1]
    assert "at least 0" in row and row.count("at least 40") == 2 and row.count("at least 0.00") == 2, row
    assert "partial: could not read broker-b" in result.stdout


def test_broker_stats_json_keeps_the_figures_read(lost_offsets: list[Unreachable]) -> None:
    import json

    result = mq("broker", "stats", "-t", "RT", "-o", "json")
    doc = json.loads(result.stdout)
    assert doc["partial"] and doc["rows"][0]["inMsg24Hour"] == 40 and doc["rows"][0]["accumulation"] == 0
