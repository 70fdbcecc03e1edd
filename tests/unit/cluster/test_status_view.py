"""`mq cluster status` tells what it knows from what it does not: a SIGSTOPped broker is `stopped` (alive, not
answering), a broker's replication that could not be read is n/a (a name server's is `-`, nothing to read), and
REGISTERED is n/a when no name server answered, naming those that did not when only some did."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from unit.cluster.procsupport import Procs, processes, save

from mqtools.cli import cluster_cmd
from mqtools.cli.main import main
from mqtools.client.errors import RequestTimeoutError
from mqtools.cluster import health, launcher
from mqtools.cluster.health import ProcHealth
from mqtools.cluster.supervisor import ClusterState, ProcInfo

NS1, NS2 = "127.0.0.1:1", "127.0.0.1:2"
A, B = "127.0.0.1:10911", "127.0.0.1:10921"


@pytest.fixture
def procs() -> Any:
    with processes() as started:
        yield started


def _health(by_name: dict[str, ProcHealth]) -> Any:
    async def collect_once(state: ClusterState) -> dict[str, ProcHealth]:
        return by_name

    return collect_once


def test_a_sigstopped_broker_is_stopped_and_its_replication_not_known(
        tmp_path: Path, procs: Procs, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    namesrv = procs.mq_node(tmp_path, "namesrv-0", kind="namesrv", role="NAMESRV")
    broker = procs.mq_node(tmp_path, "broker-a")
    save(tmp_path, namesrv, broker)
    os.kill(broker.pid, signal.SIGSTOP)
    # the paused broker is still in the name server's table; its HA status did not answer
    monkeypatch.setattr(launcher, "collect_once", _health({"namesrv-0": ProcHealth(True, None),
                                                           "broker-a": ProcHealth(True, None)}))
    assert main(["cluster", "status", "--dir", str(tmp_path), "-o", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["broker-a"]["alive"] is True and rows["broker-a"]["state"] == "stopped"
    assert rows["namesrv-0"]["alive"] is True and rows["namesrv-0"]["state"] == "running"
    assert rows["broker-a"]["ha"] is None  # not read
    assert "ha" not in rows["namesrv-0"]  # nothing to read
    assert main(["cluster", "status", "--dir", str(tmp_path)]) == 0
    table = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:]}
    assert table["broker-a"][5] == "stopped" and table["broker-a"][-1] == "n/a", table
    assert table["namesrv-0"][5] == "yes" and table["namesrv-0"][-1] == "-", table


class Cluster:
    """MQAdmin's cluster service: each name server's live table, None for one that did not answer."""

    def __init__(self, tables: dict[str, list[str] | None]) -> None:
        self.tables = tables

    async def broker_live_tables(self) -> dict[str, Any]:
        return {ns: None if addrs is None else SimpleNamespace(brokers=[SimpleNamespace(broker_addr=a)
                                                                         for a in addrs])
                for ns, addrs in self.tables.items()}


class Brokers:
    async def ha_status(self, addr: str) -> Any:
        raise RequestTimeoutError(f"{addr} timed out")


def _collect(tables: dict[str, list[str] | None]) -> dict[str, ProcHealth]:
    admin = SimpleNamespace(cluster=Cluster(tables), brokers=Brokers())
    state = ClusterState("2m-noslave", f"{NS1};{NS2}", [ProcInfo("namesrv-0", "namesrv", "NAMESRV", 1),
                                                          ProcInfo("broker-a", "broker", "ASYNC_MASTER", 10911),
                                                          ProcInfo("broker-b", "broker", "ASYNC_MASTER", 10921)])
    return asyncio.run(health.collect(admin, state))  # type: ignore[arg-type]


def test_registered_is_not_known_when_no_name_server_answered() -> None:
    seen = _collect({NS1: None, NS2: None})
    assert seen["broker-a"].registered is None and seen["broker-b"].registered is None
    assert seen["broker-a"].unanswered == (NS1, NS2)


def test_registered_counts_the_name_servers_that_answered_and_names_the_others() -> None:
    seen = _collect({NS1: [A], NS2: None})
    assert seen["broker-a"].registered is True and seen["broker-b"].registered is False
    assert seen["broker-a"].unanswered == (NS2,)
    assert _collect({NS1: [A, B], NS2: [A]})["broker-b"].registered is False  # all must list it


def _row(name: str, registered: bool | None, unanswered: tuple[str, ...]) -> launcher.ProcStatus:
    return launcher.ProcStatus(ProcInfo(name, "broker", "ASYNC_MASTER", 10911, pid=5), True, 0.0, 1, None,
                               Path("x.log"), "running", registered, unanswered)


def test_the_table_says_n_a_or_marks_a_partial_registration_and_names_who_did_not_answer() -> None:
    lines = cluster_cmd._table([_row("broker-a", None, (NS1,))]).splitlines()
    assert lines[1].split()[8] == "n/a" and lines[-1] == f"REGISTERED n/a: no name server answered ({NS1})"
    lines = cluster_cmd._table([_row("broker-a", True, (NS2,)), _row("broker-b", False, (NS2,))]).splitlines()
    assert [line.split()[8] for line in lines[1:3]] == ["yes*", "no*"]
    assert lines[-1] == f"* registered with the name servers that answered; not answering: {NS2}"
    doc = _row("broker-a", None, (NS1,)).to_json()
    assert doc["registered"] is None and doc["namesrvNotAnswering"] == [NS1]


def test_the_registration_of_a_broker_no_name_server_could_be_asked_about_is_null(
        tmp_path: Path, procs: Procs, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    broker = procs.mq_node(tmp_path, "broker-a")
    save(tmp_path, broker)
    monkeypatch.setattr(launcher, "collect_once", _health({"broker-a": ProcHealth(None, None, unanswered=(NS1,))}))
    assert main(["cluster", "status", "--dir", str(tmp_path), "-o", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["registered"] is None, row

