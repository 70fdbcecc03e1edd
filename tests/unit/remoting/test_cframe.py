"""The compiled frame loop and encoder (remoting/_cframe.pyx) against frame.py's and command.py's Python forms:
the same commands from the same bytes, however split, the same errors for broken frames, the same bytes out
(issue 46: less work per request)."""

from __future__ import annotations

import itertools
import struct

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqtools.remoting import frame as F
from mqtools.remoting.codes import LanguageCode, SerializeType
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import ProtocolError

C = F._compiled
pytestmark = pytest.mark.skipif(C is None, reason="the compiled frame loop is not built here (no C compiler at "
                                "install, or MQ_PURE_PYTHON set): nothing to compare")


def raw_frame(header: bytes, body: bytes = b"", serialize: int = 0) -> bytes:
    return struct.pack(">ii", 4 + len(header) + len(body), (serialize << 24) | len(header)) + header + body


def json_frame(obj: object, body: bytes = b"") -> bytes:
    return raw_frame(orjson.dumps(obj), body)


#: Headers a peer may send: the usual ones, and every shape command.py's decoder treats apart.
HEADERS = [
    {"code": 310, "language": "JAVA", "version": 453, "opaque": 7, "flag": 0, "extFields": {"a": "PG", "b": "T"}},
    {"code": 0, "opaque": 1, "flag": 1, "remark": "r", "serializeTypeCurrentRPC": "JSON"},
    {"code": 11, "language": "PYTHON", "opaque": -5, "flag": 2, "remark": 12},
    {"code": 11, "language": "NOPE", "opaque": 1},
    {"code": 11, "language": 3, "opaque": 1},
    {"code": 11, "language": None, "opaque": 1},
    {"code": "11", "opaque": 1},
    {"code": None, "opaque": 1},
    {"code": True, "opaque": 1},
    {"code": 2**31, "opaque": 1},
    {"code": 1, "opaque": -(2**31) - 1},
    {"code": 1, "extFields": {"n": 5, "b": True, "x": None, "l": [1], "d": {"k": 1}}},
    {"code": 1, "extFields": []},
    {"code": 1, "extFields": None},
    {},
    [],
    "text",
]


def python_feed(decoder: F.FrameDecoder, data: bytes, monkeypatch: pytest.MonkeyPatch) -> object:
    monkeypatch.setattr(F, "_compiled", None)
    try:
        return outcome(decoder, data)
    finally:
        monkeypatch.undo()


def outcome(decoder: F.FrameDecoder, data: bytes) -> object:
    try:
        return decoder.feed(data), decoder.buffered
    except ProtocolError as exc:
        return "ProtocolError", str(exc)


@pytest.mark.parametrize("header", HEADERS, ids=range(len(HEADERS)))
def test_every_header_shape_decodes_or_fails_alike(header: object, monkeypatch: pytest.MonkeyPatch) -> None:
    data = json_frame(header, b"body") + json_frame(HEADERS[0])
    assert outcome(F.FrameDecoder(), data) == python_feed(F.FrameDecoder(), data, monkeypatch)


BROKEN = [
    struct.pack(">i", 3) + b"xxx",
    struct.pack(">i", 2**24 + 1),
    struct.pack(">ii", 8, 100) + b"abcd",
    raw_frame(b"{not json"),
    raw_frame(b"\xff\xfe"),
    raw_frame(b"\x00" * 3, serialize=1),
    raw_frame(b"{}", serialize=7),
]


@pytest.mark.parametrize("data", BROKEN, ids=range(len(BROKEN)))
def test_broken_frames_give_the_same_error(data: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    got = outcome(F.FrameDecoder(2**24), json_frame(HEADERS[1]) + data)
    assert got == python_feed(F.FrameDecoder(2**24), json_frame(HEADERS[1]) + data, monkeypatch)
    assert got[0] == "ProtocolError"


def stream() -> bytes:
    rocketmq = RemotingCommand(12, {"k": "v", "n": ""}, b"rb", "hi", 9, 0, int(LanguageCode.CPP), 1,
                               SerializeType.ROCKETMQ).encode()
    return b"".join([json_frame(HEADERS[0], b"x" * 300), rocketmq, json_frame(HEADERS[1]), json_frame(HEADERS[2], b"y")])


@given(st.lists(st.integers(min_value=0, max_value=len(stream())), max_size=6))
def test_split_anywhere_the_commands_are_the_same(cuts: list[int]) -> None:
    data = stream()
    bounds = [0, *sorted(cuts), len(data)]
    fast, slow = F.FrameDecoder(), F.FrameDecoder()
    got: list[RemotingCommand] = []
    want: list[RemotingCommand] = []
    for a, b in itertools.pairwise(bounds):
        got += fast.feed(data[a:b])
        compiled, F._compiled = F._compiled, None
        try:
            want += slow.feed(bytearray(data[a:b]))
        finally:
            F._compiled = compiled
    assert got == want and len(got) == 4 and fast.buffered == slow.buffered == 0
    assert got[1].body == b"rb" and got[1].serialize_type == SerializeType.ROCKETMQ


@pytest.mark.parametrize("cmd", [
    RemotingCommand(0, {"msgId": "7F00", "queueId": "3", "queueOffset": "17"}, None, None, 42, 1, 0, 453),
    RemotingCommand(1, {}, b"body", "remark \"quoted\" \u00e9", 1, 0, 99, 1),
    RemotingCommand(1, {"a": "\x01\x02"}, bytearray(b"b"), None, 1, 2, int(LanguageCode.GO), 1, SerializeType.ROCKETMQ),
    RemotingCommand(5, {}, b"", None, 0, 0),
], ids=range(4))
def test_the_encoder_writes_the_same_bytes(cmd: RemotingCommand) -> None:
    head, body = C.encode_parts(cmd)
    want_head, want_body = cmd.encode_parts()
    assert (head, body) == (want_head, want_body)


java_int = st.integers(min_value=-(2**31), max_value=2**31 - 1)


@given(java_int, java_int, java_int, java_int, st.sampled_from([*LanguageCode, 99]), st.none() | st.text(),
       st.dictionaries(st.text(), st.text(), max_size=4), st.none() | st.binary(max_size=8))
def test_any_json_command_encodes_to_the_same_bytes(code: int, version: int, opaque: int, flag: int, language: int,
                                                    remark: str | None, ext: dict[str, str], body: bytes | None) -> None:
    cmd = RemotingCommand(code, ext, body, remark, opaque, flag, language, version)
    assert C.encode_parts(cmd) == cmd.encode_parts()
