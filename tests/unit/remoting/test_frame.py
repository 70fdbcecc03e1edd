"""Sans-IO frame decoder: any split of a valid stream gives the same commands; garbage only ever
raises ProtocolError."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mqtools.remoting import frame
from mqtools.remoting.codes import SerializeType
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.errors import ProtocolError
from mqtools.remoting.frame import DEFAULT_MAX_FRAME, LARGE_BODY, PEEK_SIZE, SCRATCH_SIZE, FrameDecoder

text = st.text(max_size=20)
commands = st.builds(
    RemotingCommand,
    code=st.integers(-32768, 32767),
    ext_fields=st.dictionaries(st.text(min_size=1, max_size=10), text, max_size=4),
    body=st.one_of(st.none(), st.binary(min_size=1, max_size=64)),
    remark=st.one_of(st.none(), st.text(min_size=1, max_size=20)),
    opaque=st.integers(0, 2**31 - 1),
    flag=st.integers(0, 3),
    language=st.integers(0, 13),
    version=st.integers(0, 32767),
    serialize_type=st.sampled_from(list(SerializeType)),
)


def _same(a: RemotingCommand, b: RemotingCommand) -> None:
    assert (a.code, a.ext_fields, a.remark, a.opaque, a.flag, a.serialize_type) == (
        b.code,
        b.ext_fields,
        b.remark,
        b.opaque,
        b.flag,
        b.serialize_type,
    )
    assert (bytes(a.body) if a.body else None) == (bytes(b.body) if b.body else None)
    assert a.version == b.version and a.language == b.language


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cmds=st.lists(commands, min_size=1, max_size=6), data=st.data())
def test_random_splits_give_the_same_commands(cmds: list[RemotingCommand], data: st.DataObject) -> None:
    stream = b"".join(c.encode() for c in cmds)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    decoder = FrameDecoder()
    out: list[RemotingCommand] = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        out += decoder.feed(stream[prev:cut])
        prev = cut
    assert len(out) == len(cmds)
    for got, want in zip(out, cmds, strict=True):
        _same(got, want)
    assert decoder.buffered == 0


def test_one_byte_at_a_time_and_many_frames_per_read() -> None:
    cmds = [RemotingCommand.request(i, {"k": str(i)}, b"x" * i) for i in range(1, 30)]
    stream = b"".join(c.encode() for c in cmds)
    decoder = FrameDecoder()
    one_by_one = [cmd for i in range(len(stream)) for cmd in decoder.feed(stream[i : i + 1])]
    assert [c.code for c in one_by_one] == list(range(1, 30))
    assert [c.code for c in FrameDecoder().feed(stream)] == list(range(1, 30))


@settings(max_examples=300, deadline=None)
@given(garbage=st.binary(max_size=200), split=st.integers(1, 50))
def test_random_garbage_raises_only_protocol_error(garbage: bytes, split: int) -> None:
    decoder = FrameDecoder(max_frame=1024)
    try:
        for i in range(0, len(garbage), split):
            decoder.feed(garbage[i : i + split])
    except ProtocolError:
        with pytest.raises(ProtocolError):
            decoder.feed(b"more")


@settings(max_examples=200, deadline=None)
@given(header=st.binary(max_size=80), serialize_type=st.sampled_from([0, 1]), body=st.binary(max_size=8))
def test_garbage_headers_inside_valid_frames_raise_only_protocol_error(
    header: bytes, serialize_type: int, body: bytes
) -> None:
    frame = struct.pack(">ii", 4 + len(header) + len(body), (serialize_type << 24) | len(header)) + header + body
    try:
        FrameDecoder().feed(frame)
    except ProtocolError:
        pass


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (struct.pack(">i", -5), "too small"),
        (struct.pack(">i", 2), "too small"),
        (struct.pack(">i", DEFAULT_MAX_FRAME + 1), "exceeds"),
        (struct.pack(">ii", 8, 100) + b"\0" * 4, "header length"),
        (struct.pack(">ii", 6, (7 << 24) | 2) + b"{}", "serialize type"),
        (struct.pack(">ii", 7, 3) + b"{x}", "JSON"),
        (struct.pack(">ii", 6, 2) + b"[]", "not an object"),
        (struct.pack(">ii", 4 + 16, 16) + b'{"code":"text"} ', "integer"),
        (struct.pack(">ii", 4 + 5, (1 << 24) | 5) + b"\0" * 5, "truncated"),
    ],
)
def test_each_bad_frame_kind_is_a_protocol_error(frame: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        FrameDecoder().feed(frame)


def test_max_frame_is_configurable() -> None:
    cmd = RemotingCommand.request(10, body=b"x" * 100)
    with pytest.raises(ProtocolError):
        FrameDecoder(max_frame=64).feed(cmd.encode())
    assert len(FrameDecoder(max_frame=400).feed(cmd.encode())) == 1


def test_oversized_length_fails_before_the_frame_arrives() -> None:
    """The length prefix alone is enough to refuse: no 16 MiB buffering first."""
    with pytest.raises(ProtocolError):
        FrameDecoder(max_frame=1000).feed(struct.pack(">i", 5000))


# Reads straight into the decoder (get_buffer / buffer_updated, as asyncio.BufferedProtocol calls them) ----------

large_commands = st.builds(
    RemotingCommand.request,
    code=st.integers(0, 500),
    ext_fields=st.dictionaries(st.sampled_from("abcdef"), text, max_size=3),
    body=st.one_of(st.none(), st.binary(max_size=64),
                   st.integers(LARGE_BODY - 8, 3 * LARGE_BODY).map(lambda n: bytes(range(256)) * (n // 256) + b"z")),
)


@pytest.fixture(params=["compiled", "pure"])
def flavour(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The compiled frame loop and body (a bytes object filled in place) and the pure one (a bytearray made bytes)."""
    if request.param == "pure":
        monkeypatch.setattr(frame, "_compiled", None)
    elif frame._compiled is None:
        pytest.skip("the compiled frame module was not built")
    return str(request.param)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.function_scoped_fixture])
@given(cmds=st.lists(large_commands, min_size=1, max_size=5), data=st.data())
def test_reads_into_the_decoder_give_the_same_commands(flavour: str, cmds: list[RemotingCommand],
                                                        data: st.DataObject) -> None:
    """Any mix of socket reads of any size into get_buffer's buffers and bytes handed to feed gives the commands
    that were sent, each body bytes, nothing left over, whether large bodies are read in place or not."""
    in_place = data.draw(st.booleans())
    stream = b"".join(c.encode() for c in cmds)
    decoder = FrameDecoder(large_in_place=in_place)
    out: list[RemotingCommand] = []
    pos = 0
    while pos < len(stream):
        if data.draw(st.booleans()):
            buf = decoder.get_buffer()
            take = min(len(buf), len(stream) - pos, data.draw(st.integers(1, 2 * LARGE_BODY)))
            buf[:take] = stream[pos:pos + take]
            out += decoder.buffer_updated(take)
        else:
            take = min(len(stream) - pos, data.draw(st.integers(1, 2 * LARGE_BODY)))
            out += decoder.feed(stream[pos:pos + take])
        pos += take
    assert len(out) == len(cmds)
    for got, want in zip(out, cmds, strict=True):
        _same(got, want)
        assert got.body is None or type(got.body) is bytes
    assert decoder.buffered == 0


def test_a_large_body_is_read_where_it_stays(flavour: str) -> None:
    """Once a frame's header is in and much of its body is still to come, the next read goes into the body itself,
    and the read after it takes only a header's worth, so that the next large body is read in place too."""
    body = b"b" * (4 * LARGE_BODY)
    stream = RemotingCommand.request(11, {"k": "v"}, body).encode() * 2
    decoder = FrameDecoder(large_in_place=True)
    first = decoder.get_buffer()
    assert len(first) == SCRATCH_SIZE
    first[:1000] = stream[:1000]
    assert decoder.buffer_updated(1000) == []
    header_and_start = 1000
    rest = decoder.get_buffer()
    assert len(rest) == len(stream) // 2 - header_and_start  # exactly the body's remainder
    rest[:] = stream[header_and_start:len(stream) // 2]
    (cmd,) = decoder.buffer_updated(len(rest))
    assert cmd.body == body and type(cmd.body) is bytes
    assert len(decoder.get_buffer()) == PEEK_SIZE


def test_a_server_reads_large_requests_through_its_scratch() -> None:
    """A server's decoder (large_in_place off) reads every frame out of the scratch buffer, a large one too."""
    stream = RemotingCommand.request(11, {"k": "v"}, b"b" * (4 * LARGE_BODY)).encode()
    decoder = FrameDecoder()
    pos, out = 0, []
    while pos < len(stream):
        buf = decoder.get_buffer()
        assert len(buf) == SCRATCH_SIZE
        take = min(1000, len(stream) - pos)
        buf[:take] = stream[pos:pos + take]
        out += decoder.buffer_updated(take)
        pos += take
    assert [c.body for c in out] == [b"b" * (4 * LARGE_BODY)]


def test_a_large_frame_with_a_bad_header_fails_when_its_header_arrives() -> None:
    header = b"{not json"
    frame_start = struct.pack(">ii", 4 + len(header) + 10 * LARGE_BODY, len(header)) + header + b"x" * 100
    decoder = FrameDecoder(large_in_place=True)
    with pytest.raises(ProtocolError):
        decoder.feed(frame_start)
    with pytest.raises(ProtocolError):
        decoder.feed(b"more")


def test_connections_share_one_scratch_and_keep_their_own_frames() -> None:
    """The scratch is one per thread: what one decoder keeps of a read (an incomplete tail) is its own copy, so
    another decoder's read into the same scratch changes nothing of it."""
    a_stream = b"".join(RemotingCommand.request(1, {"i": str(i)}, b"a" * 300).encode() for i in range(20))
    b_stream = b"".join(RemotingCommand.request(2, {"i": str(i)}, b"b" * 500).encode() for i in range(20))
    decoders = {"a": FrameDecoder(), "b": FrameDecoder()}
    streams, got = {"a": a_stream, "b": b_stream}, {"a": [], "b": []}
    pos = {"a": 0, "b": 0}
    while any(pos[k] < len(streams[k]) for k in streams):
        for k, decoder in decoders.items():
            buf = decoder.get_buffer()
            take = min(len(buf), len(streams[k]) - pos[k], 777)
            buf[:take] = streams[k][pos[k]:pos[k] + take]
            got[k] += decoder.buffer_updated(take)
            pos[k] += take
    assert decoders["a"].get_buffer().obj is decoders["b"].get_buffer().obj
    assert [c.body for c in got["a"]] == [b"a" * 300] * 20 and [c.body for c in got["b"]] == [b"b" * 500] * 20
