"""A front worker's records of plain sends (front/send_record.py, _csplit.split_sends, _csend.send_record): the store
answers and stores a record exactly as it does the frame the client sent, whichever path takes it; the worker
cuts any stream at its frames without losing or reordering a byte (issue 46: work off the store's loop).

Two brokers in this process (tests/unit/broker/test_csend.py's: a store each, no socket, one fixed clock) take
the same sends, one as the worker's records through the relay's store side (WorkerLink.send), one as frames
through a connection; their answers (to the byte), commitlogs and put statistics must be equal.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from unit.broker.test_csend import CASES, WaitsForSlave, broker, entries, fields, specials_in, vars_of
from unit.broker.test_csend import Wire as _Wire

from mqtools.common.brokerrole import BrokerRole
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import FLAG_RESPONSE, RemotingCommand
from mqtools.remoting.frame import FrameDecoder
from mqtools.server.broker.front import send_record as R
from mqtools.server.broker.front.relay import WorkerLink
from mqtools.server.broker.processors import send
from mqtools.server.store.results import PutMessageStatus

pytestmark = pytest.mark.skipif(send._compiled is None, reason="the compiled send is not built here (no C compiler "
                                "at install, or MQ_PURE_PYTHON set): workers relay bytes, no record is made")

MAX_FRAME = 16 * 1024 * 1024
#: test_csend's brokers' cluster, which a worker's records store.
CLUSTER = "C1"
#: CASES whose header the worker does not make a record of (a number that does not parse or fit, a field
#: missing, maxReconsumeTimes given), besides those whose properties ask more than a plain put: they go as bytes.
NOT_RECORDED = {"flag over an int", "sys flag not a number", "born over a long", "reconsume not a number",
                "max reconsume given", "no group", "no default queue count", "bad default queue count", "a bare minus",
                "characters next to the digits", "a digit past a sign", "under an int", "an int of 25 digits"}


class Wire(_Wire):
    """A server connection's transport (a large read pauses it until the loop turns)."""

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def frame_of(ext: dict[str, str], body: bytes, opaque: int = 7, code: int = RequestCode.SEND_MESSAGE_V2,
             flag: int = 0) -> bytes:
    req = RemotingCommand.request(code, dict(ext), body)
    req.opaque, req.flag = opaque, flag
    return req.encode()


def split(data: bytes) -> list[tuple[str, bytes]]:
    events, taken, broken = R._compiled().split_sends(data, MAX_FRAME, CLUSTER)
    assert taken == len(data) and not broken
    return events


def test_a_record_holds_the_frames_fields_where_the_store_reads_them() -> None:
    ext = fields(j="5")
    data = frame_of(ext, b"body!", opaque=-12)
    [(kind, record)] = split(data)
    assert kind == R.SendSplitter.SEND
    opaque, flag, queue_id, sys_flag, msg_flag, born, times, *_ = R.FIXED.unpack_from(record)
    assert (opaque, flag, queue_id, sys_flag, msg_flag, born, times) == (
        -12, 0, int(ext["e"]), int(ext["f"]), int(ext["h"]), int(ext["g"]), 5)
    assert R.frame(record) == data
    assert R.command_of(record) == FrameDecoder().feed(data)[0]


def test_the_worker_cuts_any_stream_at_its_frames_and_loses_or_reorders_nothing() -> None:
    """Plain sends become records; other requests, responses and sends it does not parse (maxReconsumeTimes, a
    delay) go as bytes; cut
    anywhere, the DATA runs and the records' frames put back together are the stream."""
    frames = [frame_of(fields(), b"a", 1), frame_of({"x": "1"}, b"", 2, code=RequestCode.HEART_BEAT),
              frame_of(fields(), b"", 3, flag=FLAG_RESPONSE), frame_of(fields(l="1"), b"c", 4),
              frame_of(fields(props="DELAY\x012\x02"), b"d", 5), frame_of(fields(), b"e" * 3000, 6)]
    stream = b"".join(frames)
    rng = random.Random(46)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(stream)), rng.randint(1, 12)))
        splitter, out = R.SendSplitter(MAX_FRAME, CLUSTER), []
        for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
            out += splitter.feed(stream[start:end])
        assert b"".join(p if k == R.SendSplitter.DATA else R.frame(p) for k, p in out) == stream
        assert [R.command_of(p).opaque for k, p in out if k == R.SendSplitter.SEND] == [1, 6]


def test_a_frame_of_a_length_out_of_range_ends_the_cutting() -> None:
    """It and all after it go as bytes: the store's decoder refuses it and closes that connection."""
    bad = (3).to_bytes(4, "big") + b"\x00" * 8
    splitter = R.SendSplitter(MAX_FRAME, CLUSTER)
    first = splitter.feed(frame_of(fields(), b"a") + bad)
    assert [k for k, _ in first] == [R.SendSplitter.SEND, R.SendSplitter.DATA] and first[1][1] == bad
    later = frame_of(fields(), b"b")
    assert splitter.feed(later) == [(R.SendSplitter.DATA, later)]


def test_a_large_frame_in_small_reads_is_joined_once() -> None:
    """Found in review: a 16 MiB frame trickled in 2 KB reads cost its worker 8 s of CPU, the held tail joined with
    every read (quadratic). Once the frame's length is known its reads are kept apart and joined when it is whole:
    the split sees about the frame's size, not the sum of every prefix of it."""
    frame = frame_of(fields(), b"z" * (1024 * 1024), 9)
    stream = frame + frame_of(fields(), b"next", 10)
    splitter = R.SendSplitter(MAX_FRAME, CLUSTER)
    split_sends, seen = splitter._split, []

    def counting(buf: bytes, max_frame: int, cluster: str) -> tuple[list[tuple[str, bytes]], int, bool]:
        seen.append(len(buf))
        return split_sends(buf, max_frame, cluster)

    splitter._split = counting
    out = []
    for at in range(0, len(stream), 2048):
        out += splitter.feed(stream[at:at + 2048])
    assert [R.command_of(p).opaque for k, p in out if k == R.SendSplitter.SEND] == [9, 10]
    assert b"".join(p if k == R.SendSplitter.DATA else R.frame(p) for k, p in out) == stream
    assert sum(seen) < 2 * len(stream)


async def answered(wire: Wire) -> bytes:
    """The frame a connection wrote, once it has (an answer that waits for a topic's write takes loop turns)."""
    for _ in range(500):
        if FrameDecoder().feed(wire.written):
            return wire.written
        await asyncio.sleep(0.002)
    raise AssertionError("no answer")


async def both_ways(fast: object, slow: object, data: bytes) -> tuple[bytes, bytes]:
    """What `fast` answers to `data` as a worker hands it over and what `slow` answers to the frame."""
    wire, conn = Wire(), fast.server.new_connection()  # type: ignore[attr-defined]
    conn.connection_made(wire)
    for kind, payload in split(data):
        if kind == R.SendSplitter.SEND:
            WorkerLink(fast.server, lambda: None).send(conn, payload)  # type: ignore[attr-defined]
        else:
            conn.data_received(payload)
    wire2, conn2 = Wire(), slow.server.new_connection()  # type: ignore[attr-defined]
    conn2.connection_made(wire2)
    conn2.data_received(data)
    return await answered(wire), await answered(wire2)


async def test_a_record_made_before_the_cluster_was_renamed_stores_the_new_name(tmp_path: Path) -> None:
    """The worker stored the cluster it was started with: the store sends such a record as its frame."""
    async with broker(tmp_path / "records") as fast, broker(tmp_path / "frames") as slow:
        for controller in (fast, slow):
            controller.config.broker_cluster_name = "C2"
        got, want = await both_ways(fast, slow, frame_of(fields(), b"x"))
        assert got == want and FrameDecoder().feed(got)[0].code == ResponseCode.SUCCESS
        assert entries(fast) == entries(slow)
        assert entries(fast)[0].properties["CLUSTER"] == "C2"


async def test_a_record_the_compiled_put_does_not_take_is_put_by_the_store_as_its_frame(tmp_path: Path) -> None:
    """A full disk: the store's general put refuses it, with the properties the client sent."""
    async with broker(tmp_path / "records") as fast, broker(tmp_path / "frames") as slow:
        for controller in (fast, slow):
            controller.store.cleaner.disk_full = True
        got, want = await both_ways(fast, slow, frame_of(fields(), b"x"))
        assert got == want and FrameDecoder().feed(got)[0].code != ResponseCode.SUCCESS


async def test_records_are_answered_and_stored_as_their_frames_are(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    general: list[str] = []
    header: Callable = send.SendProcessor._header
    monkeypatch.setattr(send.SendProcessor, "_header", lambda self, req: general.append("") or header(self, req))
    async with broker(tmp_path / "records") as fast, broker(tmp_path / "frames") as slow:
        link = WorkerLink(fast.server, lambda: None)
        for name, ext, body, compiled in CASES:
            data = frame_of(ext, body)
            events = split(data)
            recorded = [k for k, _ in events] == [R.SendSplitter.SEND]
            assert recorded is (name not in NOT_RECORDED and not specials_in(ext.get("i", ""))), name
            general.clear()
            wire, conn = Wire(), fast.server.new_connection()
            conn.connection_made(wire)  # type: ignore[arg-type]
            random.seed(7)  # a negative queue id takes a random writable queue: the same one on both sides
            for kind, payload in events:
                if kind == R.SendSplitter.SEND:
                    link.send(conn, payload)
                else:
                    conn.data_received(payload)
            got = await answered(wire)
            assert bool(general) is not compiled, f"{name}: {'general' if general else 'compiled'} path answered"
            wire2, conn2 = Wire(), slow.server.new_connection()
            conn2.connection_made(wire2)  # type: ignore[arg-type]
            random.seed(7)
            conn2.data_received(data)
            assert got == await answered(wire2), name
        assert fast.store.commitlog.max_offset == slow.store.commitlog.max_offset > 0
        assert entries(fast) == entries(slow)
        assert vars_of(fast.stats) == vars_of(slow.stats)


async def test_with_acl_on_a_record_is_served_as_its_frame(tmp_path: Path) -> None:
    """The access check reads the request's header and signature: the store sends a record through it."""
    async with broker(tmp_path / "acl") as controller:
        asked: list[int] = []

        def check(conn: object, req: RemotingCommand) -> RemotingCommand:
            asked.append(req.opaque)
            return req.response(ResponseCode.NO_PERMISSION, "no")

        controller.server.access_check = check
        wire, conn = Wire(), controller.server.new_connection()
        conn.connection_made(wire)  # type: ignore[arg-type]
        [(_, record)] = split(frame_of(fields(), b"x", opaque=31))
        WorkerLink(controller.server, lambda: None).send(conn, record)
        [answer] = FrameDecoder().feed(await answered(wire))
        assert (answer.code, answer.opaque, asked) == (ResponseCode.NO_PERMISSION, 31, [31])
        assert controller.store.commitlog.max_offset == 0


async def test_records_count_towards_their_connections_fair_share_of_a_loop_turn(tmp_path: Path) -> None:
    """As its frames would: a client whose records pass 128 KiB in one loop turn is paused (the relay holds what
    the worker sends for it meanwhile) until the loop turns."""
    calls: list[tuple[str, int]] = []
    sent = 0

    class Counted(Wire):
        def pause_reading(self) -> None:
            calls.append(("pause", sent))

        def resume_reading(self) -> None:
            calls.append(("resume", sent))

    async with broker(tmp_path / "records") as controller:
        wire, conn = Counted(), controller.server.new_connection()
        conn.connection_made(wire)  # type: ignore[arg-type]
        link = WorkerLink(controller.server, lambda: None)
        size = 0
        while not calls and sent < 100:  # sends of 4 KiB
            [(_, record)] = split(frame_of(fields(), b"x" * 4096, opaque=sent))
            size += len(record)
            link.send(conn, record)
            sent += 1
        assert size >= 128 * 1024 > size - len(record)  # paused by the record that passed 128 KiB
        await asyncio.sleep(0)
        assert calls == [("pause", sent - 1), ("resume", sent)]
        assert len(FrameDecoder().feed(await answered(wire))) == sent


@pytest.mark.parametrize("status", [PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_SLAVE_TIMEOUT])
async def test_a_sync_master_answers_a_record_when_its_wait_ends_as_it_answers_the_frame(
        tmp_path: Path, status: PutMessageStatus) -> None:
    async with broker(tmp_path / "records") as fast, broker(tmp_path / "frames") as slow:
        for controller in (fast, slow):
            controller.store.config.broker_role = BrokerRole.SYNC_MASTER
            controller.store.ha_hook = WaitsForSlave()
            await controller.topics.until_written()
        data = frame_of(fields(), b"x")
        ((kind, record),) = split(data)
        assert kind == R.SendSplitter.SEND
        wire, conn = Wire(), fast.server.new_connection()
        conn.connection_made(wire)  # type: ignore[arg-type]
        WorkerLink(fast.server, lambda: None).send(conn, record)
        wire2, conn2 = Wire(), slow.server.new_connection()
        conn2.connection_made(wire2)  # type: ignore[arg-type]
        conn2.data_received(data)
        await asyncio.sleep(0.01)
        assert wire.written == wire2.written == b""  # both wait for the slave
        for controller in (fast, slow):
            ((_, done),) = controller.store.ha_hook.waits
            assert type(done) is send._compiled.ReplicatedAnswer  # the record's wait answers it, as the frame's
            done(status)
        got, want = await answered(wire), await answered(wire2)
        assert got == want
        assert FrameDecoder().feed(got)[0].code == (ResponseCode.SUCCESS if status is PutMessageStatus.PUT_OK
                                                    else ResponseCode.FLUSH_SLAVE_TIMEOUT)
        assert entries(fast) == entries(slow)
