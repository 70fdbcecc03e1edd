"""`mq admin proxy`'s reads: which groups and topics each proxy is asked about, a proxy that answers only about
consumers, one that does not answer, and no name server (hand-made answers, no cluster)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support.documents import check

from mqtools.client.admin.models.groups import GroupCatalogue, GroupEntry
from mqtools.client.admin.models.proxies import proxy_clients_view, proxy_status_view
from mqtools.client.admin.proxies import ProxyAdmin
from mqtools.client.errors import ConnectFailedError, MQClientError, broker_error
from mqtools.remoting.bodies import Connection, ConsumerConnection, ProducerConnection
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand

JAVA_508 = 429


class Groups:
    async def group_list(self) -> GroupCatalogue:
        return GroupCatalogue([GroupEntry("G", []), GroupEntry("CID_RMQ_SYS_X", [])])


class Topics:
    def __init__(self, down: bool) -> None:
        self.down = down

    async def topic_list(self) -> list[str]:
        if self.down:
            raise MQClientError("no name server answered")
        return ["Orders", "%RETRY%G", "%DLQ%G", "rmq_sys_wheel_timer", "SCHEDULE_TOPIC_XXXX"]


class Admin:
    """What ProxyAdmin asks of MQAdmin: the cluster's names and one call per (proxy, group or topic)."""

    def __init__(self, *, down: bool = False) -> None:
        self.groups, self.topics = Groups(), Topics(down)
        self.asked: list[tuple[str, int, str]] = []

    async def call(self, addr: str, code: int, ext: dict[str, str], *, ok: tuple[int, ...]) -> RemotingCommand:
        name = ext.get("consumerGroup") or ext.get("producerGroup", "")
        self.asked.append((addr, code, name))
        if addr == "dead:8080":
            raise ConnectFailedError("connection refused")
        if addr == "locked:8080":
            raise broker_error(ResponseCode.NO_PERMISSION, "check signature failed.")
        if code == RequestCode.GET_CONSUMER_CONNECTION_LIST:
            if name != "G":
                return RemotingCommand(ResponseCode.CONSUMER_NOT_ONLINE)
            body = ConsumerConnection([Connection("c-1", "10.0.0.1:1", "JAVA", JAVA_508)],
                                      consume_type="CONSUME_PASSIVELY")
            return RemotingCommand(ResponseCode.SUCCESS, body=body.to_json())
        if addr == "apache:8080":
            return RemotingCommand(ResponseCode.REQUEST_CODE_NOT_SUPPORTED)
        body = ProducerConnection([Connection("p-1", "10.0.0.2:1", "PYTHON", JAVA_508)])
        return RemotingCommand(ResponseCode.SUCCESS, body=body.to_json())


def read(admin: Admin, proxies: list[str], groups: tuple[str, ...] = ()) -> Any:
    return asyncio.run(ProxyAdmin(admin).proxy_clients(proxies, groups))  # type: ignore[arg-type]


def test_every_group_and_topic_of_the_cluster_is_asked_but_the_system_ones() -> None:
    admin = Admin()
    got = read(admin, ["mq:8080", "apache:8080"])
    assert {(a, n) for a, _, n in admin.asked} == {("mq:8080", "G"), ("mq:8080", "Orders"), ("apache:8080", "G"),
                                                   ("apache:8080", "Orders")}
    mq, apache = got.proxies
    assert [(c.kind, c.group, c.version) for c in mq.clients] == [("PUSH", "G", "V5_0_8"), ("PRODUCER", "Orders",
                                                                                              "V5_0_8")]
    assert (mq.producers, apache.producers, apache.consumers, apache.languages) == (1, None, 1, {"JAVA": 1})
    status = check(proxy_status_view(got))
    assert [p["producers"] for p in status["proxies"]] == [1, None] and not status["partial"]
    assert any("n/a producers" in line for line in proxy_status_view(got).footer)
    assert len(check(proxy_clients_view(got))["clients"]) == 3


def test_a_proxy_that_does_not_answer_or_refuses_makes_it_partial() -> None:
    got = read(Admin(), ["mq:8080", "dead:8080", "locked:8080"])
    doc = check(proxy_clients_view(got))
    assert doc["partial"] and doc["unreachable"] == [
        {"brokerName": None, "addr": "dead:8080", "reason": "connection refused"},
        {"brokerName": None, "addr": "locked:8080", "reason": "refused: check signature failed."}]
    assert {c["proxy"] for c in doc["clients"]} == {"mq:8080"}
    status = proxy_status_view(got)
    assert [r["addr"] for r in check(status)["proxies"]] == ["mq:8080"]
    assert [row[:4] for row in status.rows[1:]] == [["dead:8080", None, None, None], ["locked:8080", None, None, None]]
    assert status.rows[1][4] == "not answering: connection refused"


def test_without_a_name_server_only_the_groups_given_are_asked() -> None:
    admin = Admin(down=True)
    got = read(admin, ["mq:8080"], ("G",))
    assert [n for _, _, n in admin.asked] == ["G"]
    doc = check(proxy_status_view(got))
    assert doc["listingError"] == "no name server answered" and (doc["groupsAsked"], doc["topicsAsked"]) == (1, 0)
    assert "could not be listed" in proxy_status_view(got).footer[0]
    # the figures leave out every group and topic not given: the document is partial and says why
    assert doc["partial"] and doc["unreachable"] == [
        {"brokerName": None, "addr": None, "reason": "the cluster's groups and topics: no name server answered"}]


def test_no_proxy_is_a_clear_error() -> None:
    with pytest.raises(MQClientError, match="no proxy to ask"):
        read(Admin(), [])
