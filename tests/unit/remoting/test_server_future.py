"""A processor may answer with a future (a SYNC_MASTER send waiting for its slave): the server answers when it is
done, with no task per request; a future that fails is answered as any processor failure, one that is cancelled
(its broker shutting down) and one settled with None (the processor wrote the answer itself) are not answered."""

from __future__ import annotations

import asyncio

from mqtools.remoting.codes import ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.server import RemotingServer
from mqtools.remoting.transport import RemotingConnection


class Sent:
    """A connection that keeps the answers the server sends on it."""

    def __init__(self) -> None:
        self.answers: list[RemotingCommand] = []

    def send(self, resp: RemotingCommand) -> None:
        self.answers.append(resp)


async def test_a_future_is_answered_when_it_is_done_and_a_failed_one_as_a_processor_failure() -> None:
    server = RemotingServer("127.0.0.1", 0)
    pending: list[asyncio.Future[RemotingCommand]] = []
    both = asyncio.Event()

    def later(conn: RemotingConnection, req: RemotingCommand) -> asyncio.Future[RemotingCommand]:
        pending.append(asyncio.get_running_loop().create_future())
        if len(pending) == 2:
            both.set()
        return pending[-1]

    server.register(1, later)
    await server.start()
    _, client = await asyncio.get_running_loop().create_connection(RemotingConnection, "127.0.0.1", server.port)
    try:
        first = asyncio.ensure_future(client.invoke(RemotingCommand.request(1, {"n": "1"}), 10))
        second = asyncio.ensure_future(client.invoke(RemotingCommand.request(1, {"n": "2"}), 10))
        await asyncio.wait_for(both.wait(), 10)
        assert not first.done() and not second.done() and not server._tasks
        pending[1].set_exception(RuntimeError("the store is closed"))
        failed = await second
        assert failed.code == ResponseCode.SYSTEM_ERROR and failed.remark == "RuntimeError: the store is closed"
        assert not first.done()
        pending[0].set_result(RemotingCommand(code=ResponseCode.SUCCESS, remark="replicated"))
        answered = await first
        assert answered.code == ResponseCode.SUCCESS and answered.remark == "replicated"
    finally:
        client.close()
        await server.shutdown()


async def test_a_cancelled_future_or_one_answered_already_sends_nothing() -> None:
    server = RemotingServer("127.0.0.1", 0)
    conn = Sent()
    loop = asyncio.get_running_loop()
    for settle in (lambda f: f.cancel(), lambda f: f.set_result(None)):
        future: asyncio.Future[RemotingCommand | None] = loop.create_future()
        settle(future)
        server._settled(conn, RemotingCommand.request(1, {}), future)  # type: ignore[arg-type]
    assert conn.answers == []
