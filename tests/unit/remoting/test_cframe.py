"""The compiled frame loop and encoder (remoting/_cframe.pyx) against frame.py's and command.py's Python forms:
the same commands from the same bytes, however split, the same errors for broken frames, the same bytes out
(issue 46: less work per request)."""

from __future__ import annotations

import itertools
import json
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


def both_frames(data: bytes) -> tuple[object, object]:
    """The compiled loop's reading of `data` and the Python loop's (commands and bytes taken, or the error)."""
    def read(frames: object) -> object:
        try:
            return frames(data)  # type: ignore[operator]
        except ProtocolError as exc:
            return "ProtocolError", str(exc)
    return read(lambda d: C.frames(d, F.DEFAULT_MAX_FRAME)), read(F.FrameDecoder()._frames)


any_int = java_int | st.integers(min_value=-(2**70), max_value=2**70)
text = st.text(max_size=10)  # any code point but a lone surrogate: controls, escapes, astral ones
HEADER_FIELDS = {"code": any_int | st.booleans() | text, "opaque": any_int, "flag": any_int, "version": any_int,
                 "language": st.sampled_from(["JAVA", "CPP", "GO", "NOPE", ""]) | st.none() | st.integers(0, 9),
                 "remark": st.none() | text | st.integers(),
                 "extFields": st.none() | st.dictionaries(text, text, max_size=5)
                 | st.dictionaries(text, text | st.integers() | st.none(), max_size=3) | st.lists(text, max_size=2),
                 "serializeTypeCurrentRPC": st.just("JSON"),
                 "other": text | any_int | st.floats(allow_nan=False) | st.booleans() | st.none()
                 | st.lists(st.integers(), max_size=2)}


@given(st.fixed_dictionaries({}, optional=HEADER_FIELDS), st.sampled_from(["compact", "ascii", "spaced"]))
def test_any_json_header_reads_as_orjson_reads_it(header: dict, style: str) -> None:
    """The compiled loop reads the usual headers itself (no orjson): every JSON header, written compactly, with
    every non-ASCII character escaped (astral ones as surrogate pairs) or spread over lines, reads the same."""
    layout = {"compact": {"separators": (",", ":")}, "ascii": {"ensure_ascii": True}, "spaced": {"indent": 1}}
    raw = json.dumps(header, **{"ensure_ascii": False, **layout[style]}).encode()  # type: ignore[arg-type]
    got, want = both_frames(raw_frame(raw, b"body") + json_frame(HEADERS[0]))
    assert got == want


@given(st.sampled_from(HEADERS[:3]), st.integers(min_value=0, max_value=200), st.binary(min_size=1, max_size=3),
       st.integers(min_value=0, max_value=2))
def test_a_damaged_json_header_reads_or_fails_alike(header: object, at: int, junk: bytes, how: int) -> None:
    """Bytes put in, over or out of a header anywhere: the compiled reader takes what orjson takes, the same way,
    and leaves the rest to it."""
    raw = orjson.dumps(header)
    at = at % (len(raw) + 1)
    raw = [raw[:at] + junk + raw[at:], raw[:at] + junk + raw[at + len(junk):], raw[:at] + raw[at + len(junk):]][how]
    got, want = both_frames(raw_frame(raw))
    assert got == want
