"""An in-memory transport for ClientInstance: the seam the client's unit tests fake.

Routes come from a table (what the name server would answer to GET_ROUTEINFO_BY_TOPIC);
every broker request goes to a test-supplied `answer` coroutine. Each request is recorded
with the clock time it started, so tests can check what was sent, where, and with which
timeout. Nothing opens a socket.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mqtools.client.instance import ClientInstance
from mqtools.remoting.bodies import BrokerData, QueueData, TopicRouteData
from mqtools.remoting.client import RemotingClient
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand

Answer = Callable[[str, RemotingCommand, float], Awaitable[RemotingCommand]]


class FakeClock:
    """Seconds, like time.monotonic, moved only by the test."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Sent:
    """One request as the transport saw it; `addr` is None for the name server."""

    addr: str | None
    cmd: RemotingCommand
    timeout: float | None
    at: float


def route_data(brokers: dict[str, int]) -> TopicRouteData:
    """A route over brokers `{name: queue count}`, each a master at `<name>:10911`."""
    return TopicRouteData(
        queue_datas=[QueueData(name, nums, nums) for name, nums in brokers.items()],
        broker_datas=[BrokerData("DefaultCluster", name, {0: f"{name}:10911"}) for name in brokers],
    )


async def not_supported(_addr: str, cmd: RemotingCommand, _timeout: float) -> RemotingCommand:
    return cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "fake broker")


class FakeRemoting(RemotingClient):
    """RemotingClient's request methods answered in memory."""

    def __init__(self, routes: dict[str, TopicRouteData], answer: Answer = not_supported,
                 clock: FakeClock | None = None) -> None:
        super().__init__(["namesrv:9876"])
        self.route_table = routes
        self.answer = answer
        self.clock = clock or FakeClock()
        self.sent: list[Sent] = []

    def broker_requests(self, code: RequestCode) -> list[Sent]:
        return [s for s in self.sent if s.addr is not None and s.cmd.code == code]

    async def invoke_namesrv(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        self.sent.append(Sent(None, cmd, timeout, self.clock()))
        if cmd.code != RequestCode.GET_ROUTEINFO_BY_TOPIC:
            return await not_supported("namesrv:9876", cmd, timeout)
        data = self.route_table.get(cmd.ext_fields["topic"])
        if data is None:
            return cmd.response(ResponseCode.TOPIC_NOT_EXIST, "no route")
        return cmd.response(body=data.to_json())

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        self.sent.append(Sent(addr, cmd, timeout, self.clock()))
        return await self.answer(addr, cmd, timeout)

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None:
        self.sent.append(Sent(addr, cmd, None, self.clock()))


def fake_instance(remoting: FakeRemoting) -> ClientInstance:
    """A real ClientInstance (route cache, broker lookup) over the fake transport."""
    return ClientInstance("namesrv:9876", client_ip="10.0.0.9", instance_name="unit", remoting=remoting)
