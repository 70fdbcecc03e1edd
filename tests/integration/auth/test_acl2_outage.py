"""ACL 2.0 administration with broker-a's master gone: a cluster's users and rules are written to every
broker, masters and slaves, as mqadmin's `-c` writes them, so with the master SIGKILLed `user list -c` and
`acl2 list -c` read the set from its slave (whole, exit 0) instead of leaving it out in silence; with the
slave hung as well, the set is named and the answer is partial (exit 4)."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.adminsupport import mq
from support.authprops import AUTH_PROPS, ROOT_ENV
from support.mqproc import MqProcess, start_broker, start_namesrv
from support.presetcluster import wait_for

from mqtools.common.exitcodes import EXIT_OK, EXIT_PARTIAL

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

CLUSTER = "AclOutage"
USER, PASSWORD = "outage1", "outage-XYZZY-pass"


@dataclass
class Set:
    namesrv: str
    master: MqProcess
    slave: MqProcess


def admin(namesrv: str, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = mq("admin", *args, "-n", namesrv, stdin=stdin, env=ROOT_ENV)
    return result.returncode, result.stdout, result.stderr


def registered(namesrv: str) -> dict[str, str]:
    """broker id -> address of broker-a as the name server has it."""
    code, out, err = admin(namesrv, "cluster", "list", "-o", "json")
    assert code in (EXIT_OK, EXIT_PARTIAL), err
    return {str(b["brokerId"]): b["addr"] for b in json.loads(out)["brokers"] if b["brokerName"] == "broker-a"}


@pytest.fixture
def one_set(tmp_path: Path) -> Iterator[Set]:
    namesrv = start_namesrv(tmp_path)
    props = {**AUTH_PROPS, "brokerClusterName": CLUSTER, "brokerName": "broker-a"}
    started: list[MqProcess] = []
    try:
        started.append(start_broker(tmp_path, namesrv.addr, "broker-a", **props))
        started.append(start_broker(tmp_path, namesrv.addr, "broker-a-s", **props, brokerId="1",
                                    brokerRole="SLAVE"))
        wait_for(lambda: set(registered(namesrv.addr)) == {"0", "1"}, 30, "the master and its slave registered")
        yield Set(namesrv.addr, *started)
    finally:
        for proc in started:
            proc.signal(signal.SIGCONT)  # a hung slave must take its SIGTERM
            proc.stop()
        namesrv.stop()


def users_listed(doc: dict) -> set[str]:
    return {u["username"] for b in doc["brokers"] for u in b["users"]}


def test_users_and_rules_are_read_from_the_slave_and_named_when_none_answers(one_set: Set) -> None:
    ns = one_set.namesrv
    code, out, err = admin(ns, "user", "create", USER, "-c", CLUSTER, "-o", "json", stdin=PASSWORD)
    assert code == EXIT_OK, err
    assert sorted(json.loads(out)["changes"][0]["brokers"]) == sorted([one_set.master.addr, one_set.slave.addr])
    code, out, err = admin(ns, "acl2", "create", USER, "-r", "Topic:orders", "-a", "Pub", "-d", "Allow",
                           "-c", CLUSTER)
    assert code == EXIT_OK, err

    one_set.master.kill()
    wait_for(lambda: set(registered(ns)) == {"1"}, 60, "the name server to drop the killed master")

    code, out, err = admin(ns, "user", "list", "-c", CLUSTER, "-o", "json")
    doc = json.loads(out)
    assert (code, doc["partial"]) == (EXIT_OK, False), err
    assert [b["brokerAddr"] for b in doc["brokers"]] == [one_set.slave.addr]
    assert USER in users_listed(doc)
    code, out, err = admin(ns, "acl2", "list", "-c", CLUSTER, "-o", "json")
    doc = json.loads(out)
    assert (code, doc["partial"]) == (EXIT_OK, False), err
    assert [a["subject"] for b in doc["brokers"] for a in b["acls"]] == [f"User:{USER}"]

    one_set.slave.signal(signal.SIGSTOP)
    code, out, err = admin(ns, "user", "list", "-c", CLUSTER, "-o", "json", "--timeout", "1")
    doc = json.loads(out)
    assert (code, doc["partial"]) == (EXIT_PARTIAL, True), err
    assert doc["brokers"] == []
    assert [u["brokerName"] for u in doc["unreachable"]] == ["broker-a"]
    assert "no master registered" in doc["unreachable"][0]["reason"]
    code, out, err = admin(ns, "user", "list", "-c", CLUSTER, "--timeout", "1")
    assert code == EXIT_PARTIAL and "partial: could not read broker-a" in out + err, (out, err)
