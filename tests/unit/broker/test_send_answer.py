"""The send processor's per-message shortcuts agree with the general paths they bypass: the range check of
the header's numbers, and the PUT_OK answer built without the status table (issue 46, less work per request)."""

from __future__ import annotations

import asyncio
import itertools
from types import SimpleNamespace

import orjson
import pytest

from mqtools.remoting.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.headers import SendMessageRequestHeader
from mqtools.remoting.server import reply
from mqtools.server.broker.processors import send
from mqtools.server.broker.processors.send import _FIELD_RANGES, SendProcessor, _in_ranges
from mqtools.server.broker.stats import BrokerStats
from mqtools.server.store.results import AppendMessageResult, PutMessageResult, PutMessageStatus

INT_EDGES = (-(2**31) - 1, -(2**31), 0, 2**31 - 1, 2**31)
LONG_EDGES = (-(2**63) - 1, -(2**63), 0, 2**63 - 1, 2**63)


def header(**fields: object) -> SendMessageRequestHeader:
    h = SendMessageRequestHeader("PG", "T", "TBW102", 4, 0, 0, 1, 0)
    for name, value in fields.items():
        setattr(h, name, value)
    return h


def loop_verdict(h: SendMessageRequestHeader) -> bool:
    """What the per-field loop (the general path, which names the field) says."""
    return all(getattr(h, name) is None or getattr(h, name) in allowed for name, allowed in _FIELD_RANGES)


@pytest.mark.parametrize("name", [name for name, _ in _FIELD_RANGES])
def test_the_chained_range_check_agrees_with_the_per_field_loop_at_every_edge(name: str) -> None:
    edges = LONG_EDGES if name == "born_timestamp" else INT_EDGES
    optional = name in ("reconsume_times", "max_reconsume_times")
    for value in (*edges, *((None,) if optional else ())):
        h = header(**{name: value})
        assert _in_ranges(h) == loop_verdict(h), (name, value)
    assert _in_ranges(header(**{name: edges[1]})) and not _in_ranges(header(**{name: edges[-1]}))


def test_a_missing_required_number_goes_to_the_loop_instead_of_raising() -> None:
    assert _in_ranges(header(flag=None)) is False  # the loop then decides, and names the field if it must


def processor() -> SendProcessor:
    now = itertools.count(1_700_000_000)
    return SendProcessor(SimpleNamespace(stats=BrokerStats(lambda: float(next(now)))))  # type: ignore[arg-type]


def request(serialize_type: SerializeType) -> RemotingCommand:
    req = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"b": "T"}, b"x", serialize_type=serialize_type)
    req.opaque = 4242
    return req


@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_the_put_ok_answer_is_byte_for_byte_the_one_clients_always_got(serialize_type: SerializeType) -> None:
    proc = processor()
    append = AppendMessageResult(4096, 1200, "7F00000100002A9F0000000000001000", 1, 17)
    resp = proc._response(request(serialize_type), "T", PutMessageResult(PutMessageStatus.PUT_OK, append), 3)
    # what the status table path built, with RemotingCommand's keywords, before the shortcut
    before = RemotingCommand(code=0, ext_fields={"msgId": append.msg_id, "queueId": "3", "queueOffset": "17"},
                             remark=None, opaque=4242, flag=1, language=LanguageCode.JAVA, version=resp.version,
                             serialize_type=serialize_type)
    assert resp.encode() == before.encode()
    if serialize_type == SerializeType.JSON:
        head = resp.encode()[8:]
        assert orjson.loads(head) == {"code": 0, "language": "JAVA", "version": resp.version, "opaque": 4242, "flag": 1,
                                      "serializeTypeCurrentRPC": "JSON",
                                      "extFields": {"msgId": append.msg_id, "queueId": "3", "queueOffset": "17"}}
    stats = proc.c.stats
    assert stats.put_msgs.total == 1 and stats.topic_put_bytes["T"] == 1200


def test_other_statuses_and_batches_still_go_through_the_table() -> None:
    proc = processor()
    batch = AppendMessageResult(0, 300, "ID0", 1, 5, 2, [0, 150], ("127.0.0.1", 10911))
    resp = proc._response(request(SerializeType.JSON), "T", PutMessageResult(PutMessageStatus.PUT_OK, batch), 1)
    assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["msgId"] == ",".join(batch.msg_ids)
    assert len(resp.ext_fields["msgId"].split(",")) == 2
    single = AppendMessageResult(0, 100, "ID1", 1, 6)
    resp = proc._response(request(SerializeType.JSON), "T",
                          PutMessageResult(PutMessageStatus.FLUSH_DISK_TIMEOUT, single), 1)
    assert resp.code == ResponseCode.FLUSH_DISK_TIMEOUT and resp.ext_fields["msgId"] == "ID1"
    resp = proc._response(request(SerializeType.JSON), "T",
                          PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, None), 1)
    assert resp.code == ResponseCode.SERVICE_NOT_AVAILABLE and not resp.ext_fields


class Sink:
    """A connection: the frames the processor writes itself, and the answers the server would send."""

    def __init__(self) -> None:
        self.wire: list[bytes] = []

    def send_frame(self, frame: bytes) -> None:
        self.wire.append(frame)

    def send(self, resp: RemotingCommand) -> None:
        self.wire.append(resp.encode())


@pytest.mark.parametrize("serialize_type", [SerializeType.JSON, SerializeType.ROCKETMQ])
async def test_a_send_that_waited_for_its_slave_is_answered_byte_for_byte_as_one_that_did_not(
        serialize_type: SerializeType) -> None:
    """A SYNC_MASTER put answers by a future: the processor answers from a callback on it (the compiled path's
    frame, where it is built), and the wire holds what the general response makes."""
    proc, general = processor(), processor()
    proc.c.topics = SimpleNamespace(unwritten=None)
    append = AppendMessageResult(4096, 1200, "7F00000100002A9F0000000000001000", 1, 17)
    put: asyncio.Future[PutMessageResult] = asyncio.get_running_loop().create_future()
    conn = Sink()
    answer = proc._later(conn, request(serialize_type), "T", put, 3, None)  # type: ignore[arg-type]
    await asyncio.sleep(0)
    assert isinstance(answer, asyncio.Future) and not answer.done() and conn.wire == []
    put.set_result(PutMessageResult(PutMessageStatus.PUT_OK, append))
    resp = await answer
    # None: the processor wrote the compiled path's frame itself (built for JSON requests only)
    assert (resp is None) == (send._answer_frame is not None and serialize_type is SerializeType.JSON)
    reply(conn, request(serialize_type), resp)  # type: ignore[arg-type]
    expected = general._response(request(serialize_type), "T", PutMessageResult(PutMessageStatus.PUT_OK, append), 3)
    assert conn.wire == [expected.encode()]
    assert proc.c.stats.put_msgs.total == 1 and proc.c.stats.topic_put_bytes["T"] == 1200


async def test_a_waited_put_that_failed_or_was_cancelled_settles_the_answer_so() -> None:
    proc = processor()
    proc.c.topics = SimpleNamespace(unwritten=None)
    loop = asyncio.get_running_loop()
    failed, cancelled = loop.create_future(), loop.create_future()
    answers = [proc._later(Sink(), request(SerializeType.JSON), "T", put, 3, None)  # type: ignore[arg-type]
               for put in (failed, cancelled)]
    failed.set_exception(OSError("disk gone"))
    cancelled.cancel()
    with pytest.raises(OSError, match="disk gone"):
        await answers[0]
    with pytest.raises(asyncio.CancelledError):
        await answers[1]
