"""A batch send that is the last request of a read is answered before its queue units and index keys are
written, as Apache's broker answers before its ReputMessageService dispatches (issue 46: the producer's next
batch is on its way while the broker dispatches); nothing can read the queue in between, and a request that
follows the batch in the same read sees it dispatched.

One broker in this process (a store, no socket); its connection's transport records, at each write, how far
the batch's queue had been dispatched.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mqtools.common import properties as P
from mqtools.common.codec import encode_batch
from mqtools.common.message import Message
from mqtools.remoting.bodies import TopicConfig
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.frame import FrameDecoder
from mqtools.remoting.headers import send_v2_fields
from mqtools.server.broker import app
from mqtools.server.broker.config import BrokerConfig
from mqtools.server.store import dispatch

QUEUE = 3
COUNT = 32


class Wire:
    """A transport that keeps what is written and the queue's dispatched offset at each write."""

    def __init__(self, controller: app.BrokerController) -> None:
        self.controller = controller
        self.written = b""
        self.dispatched_at_write: list[int] = []

    def _seen(self, data: bytes) -> None:
        self.written += data
        self.dispatched_at_write.append(queue_max(self.controller))

    def write(self, data: bytes) -> None:
        self._seen(data)

    def writelines(self, parts: list[bytes]) -> None:
        self._seen(b"".join(parts))

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("10.0.0.9", 51234) if name == "peername" else default

    def is_closing(self) -> bool:
        return False

    def answers(self) -> list[RemotingCommand]:
        return FrameDecoder().feed(self.written)


def queue_max(controller: app.BrokerController) -> int:
    cq = controller.store.dispatcher.cq("T", QUEUE)
    return 0 if cq is None else cq.max_offset


@contextlib.asynccontextmanager
async def broker(store: Path) -> AsyncIterator[app.BrokerController]:
    cfg = BrokerConfig(listen_port=0, bind_address="127.0.0.1", store_path_root_dir=str(store), broker_name="b1",
                       broker_cluster_name="C1")
    cfg.extra["mappedFileSizeCommitLog"] = str(8 * 1024 * 1024)
    cfg.validate()
    controller = app.BrokerController(cfg)
    await controller.store.start()
    controller.topics.update(TopicConfig("T", 8, 8, 6))
    await controller.topics.until_written()  # else the send waits for the topic file, as a task
    try:
        yield controller
    finally:
        await controller.store.shutdown()


def batch_frame(opaque: int, first_key: int) -> bytes:
    body = encode_batch([Message("T", b"m%d" % i, 0, {P.KEYS: f"k{first_key + i}"}) for i in range(COUNT)])
    ext = send_v2_fields("PG", "T", "TBW102", "4", QUEUE, 0, 1_700_000_000_000, 0, f"{P.WAIT}\x01true\x02")
    req = RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, ext, body)
    req.opaque = opaque
    return req.encode()


def max_offset_frame(opaque: int) -> bytes:
    req = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "T", "queueId": str(QUEUE)})
    req.opaque = opaque
    return req.encode()


def connect(controller: app.BrokerController) -> tuple[Wire, object]:
    wire = Wire(controller)
    conn = controller.server.new_connection()
    conn.connection_made(wire)  # type: ignore[arg-type]
    return wire, conn


def keys_found(controller: app.BrokerController, keys: range) -> int:
    return sum(bool(controller.store.index.query("T", f"k{k}", 4, 0, 2**62)) for k in keys)


async def test_the_last_batch_of_a_read_is_answered_then_dispatched(tmp_path: Path) -> None:
    async with broker(tmp_path) as controller:
        wire, conn = connect(controller)
        conn.data_received(batch_frame(1, 0))
        (answer,) = wire.answers()
        assert answer.code == ResponseCode.SUCCESS and answer.ext_fields["queueOffset"] == "0"
        assert wire.dispatched_at_write == [0]  # the answer went out first
        assert queue_max(controller) == COUNT  # then the units, before data_received returned
        assert keys_found(controller, range(COUNT)) == COUNT
        assert controller.store.dispatcher.reput_offset == controller.store.commitlog.max_offset


async def test_a_request_after_a_batch_in_the_same_read_sees_it_dispatched(tmp_path: Path) -> None:
    async with broker(tmp_path) as controller:
        wire, conn = connect(controller)
        conn.data_received(batch_frame(1, 0) + max_offset_frame(2) + batch_frame(3, COUNT))
        first, offset, last = wire.answers()
        assert (first.ext_fields["queueOffset"], last.ext_fields["queueOffset"]) == ("0", str(COUNT))
        assert offset.ext_fields["offset"] == str(COUNT)  # the first batch was dispatched inline
        assert wire.dispatched_at_write == [COUNT]  # one write of the three answers, before the last batch's units
        assert queue_max(controller) == 2 * COUNT
        assert keys_found(controller, range(2 * COUNT)) == 2 * COUNT


async def test_a_deferred_dispatch_that_fails_is_logged_and_the_next_one_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    async with broker(tmp_path) as controller:
        wire, conn = connect(controller)
        real = dispatch.DispatchService.dispatch_batch
        failures = [RuntimeError("disk gone")]

        def flaky(self: dispatch.DispatchService, *args: object) -> None:
            if failures:
                raise failures.pop()
            real(self, *args)

        monkeypatch.setattr(dispatch.DispatchService, "dispatch_batch", flaky)
        with caplog.at_level(logging.ERROR, logger=dispatch.__name__):
            conn.data_received(batch_frame(1, 0))  # no exception reaches the connection
        assert "dispatch of the batch put ending at" in caplog.text
        conn.data_received(batch_frame(2, COUNT))
        assert [a.code for a in wire.answers()] == [ResponseCode.SUCCESS] * 2
        assert keys_found(controller, range(COUNT, 2 * COUNT)) == COUNT
