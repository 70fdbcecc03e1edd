"""Cluster C1 in memory for the cluster-wide writes' tests: two masters and two name servers standing in for an
admin session's requests (AdminBase.call, cluster_info, ClientInstance.invoke_each_namesrv), each with the failure it
answers and every write it took."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mqtools.client.admin.base import AdminBase
from mqtools.client.errors import ConnectFailedError, RequestTimeoutError
from mqtools.client.instance import ClientInstance
from mqtools.remoting.bodies import BrokerData, ClusterInfo
from mqtools.remoting.codes import ResponseCode
from mqtools.remoting.command import RemotingCommand

A, B = "10.0.0.1:10911", "10.0.0.2:10911"
NS0, NS1 = "10.0.0.9:9876", "10.0.0.8:9876"
HUNG = RequestTimeoutError(f"request code 0 to {B} timed out after 3.000s")
DOWN = ConnectFailedError(f"connect to {NS0} failed: connection refused", "connection refused")


class Cluster:
    """Cluster C1 of broker-a (A) and broker-b (B), and two name servers: each one's failure (None: it applies
    what it is sent) and every write each took, by request code. Its bound methods stand in for the admin's."""

    def __init__(self) -> None:
        self.fails: dict[str, Exception | None] = {A: None, B: None, NS0: None, NS1: None}
        self.sets = {"broker-a": {0: A}, "broker-b": {0: B}}
        self.took: list[tuple[str, int]] = []

    async def call(self, addr: str | None, code: int, *_args: object, **_kw: object) -> RemotingCommand:
        request = RemotingCommand.request(code)
        if addr is None:  # one name server's read: no order layout recorded
            return request.response(ResponseCode.QUERY_NOT_FOUND)
        failure = self.fails[addr]
        if failure is not None:
            raise failure
        self.took.append((addr, code))
        return request.response(ResponseCode.SUCCESS)

    async def cluster_info(self) -> ClusterInfo:
        return ClusterInfo({n: BrokerData("C1", n, addrs) for n, addrs in self.sets.items()}, {"C1": set(self.sets)})

    async def each_namesrv(self, make_cmd: Callable[[], RemotingCommand],
                           _timeout: float | None = None) -> dict[str, object]:
        answers: dict[str, object] = {}
        for ns in (NS0, NS1):
            cmd = make_cmd()
            failure = self.fails[ns]
            if failure is None:
                self.took.append((ns, cmd.code))
            answers[ns] = failure or cmd.response(ResponseCode.SUCCESS)
        return answers


def in_memory(monkeypatch: pytest.MonkeyPatch) -> Cluster:
    """A Cluster whose answers every admin session of the test gets."""
    c = Cluster()
    monkeypatch.setattr(AdminBase, "call", c.call)
    monkeypatch.setattr(AdminBase, "cluster_info", c.cluster_info)
    monkeypatch.setattr(ClientInstance, "invoke_each_namesrv", c.each_namesrv)
    return c
