"""write_rows when sends fail: the task fails with the code once the sends in flight have ended, and never hangs (a
failure seen while more rows waited than the window held kept one permit, and the drain then waited for it forever)."""

from __future__ import annotations

import asyncio
from typing import Any, Self

import pytest

from mqtools.client.errors import NoPermissionError
from mqtools.remoting.codes import ResponseCode
from mqtools.spark import writer


class RefusingProducer:
    """Every send is refused (a read-only topic), the answer arriving on a later turn of the loop."""

    sent = 0

    def __init__(self, *_: Any, **__: Any) -> None:
        pass

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_: object) -> None:
        return None

    def send_async(self, _msg: Any) -> asyncio.Future[Any]:
        RefusingProducer.sent += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.get_loop().call_soon(future.set_exception, NoPermissionError(ResponseCode.NO_PERMISSION, "read only"))
        return future


async def write(rows: int, in_flight: int) -> Any:
    """_write with a bound: before the fix it never returned."""
    body = ({"body": b"x%d" % i} for i in range(rows))
    return await asyncio.wait_for(writer._write("ns:9876", body, "T", 0, 3.0, None, in_flight, False), 5)


@pytest.mark.parametrize(("rows", "in_flight"), [(10, 1), (writer.WRITE_WINDOW + 10, writer.WRITE_WINDOW)])
async def test_a_refused_send_fails_the_task_with_more_rows_than_the_window(
        monkeypatch: pytest.MonkeyPatch, rows: int, in_flight: int) -> None:
    monkeypatch.setattr(writer, "Producer", RefusingProducer)
    RefusingProducer.sent = 0
    with pytest.raises(writer.SendFailed, match=r"send to T failed after 0 sent: CODE 16 "):
        await write(rows, in_flight)
    assert RefusingProducer.sent < rows  # no row is sent once a failure is seen
