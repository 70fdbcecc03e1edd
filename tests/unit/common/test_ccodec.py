"""The compiled codec (_ccodec) against its pure-Python twins: same answers, same refusals.

The pure forms are loaded as fresh module copies with MQ_PURE_PYTHON set, so both run in one
process; `make test` also runs the unit and store suites with MQ_PURE_PYTHON=1.
"""

from __future__ import annotations

import shutil
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.puresupport import pure_copy

from mqtools.common import codec, entry_check, hashing, ids, properties, speedups
from mqtools.common.codec import CorruptMessageError, encode_batch, encode_stored
from mqtools.common.hashing import tags_code
from mqtools.common.message import Message, MessageExt
from mqtools.common.properties import properties_to_string as properties_string
from mqtools.server.store import index

try:
    from mqtools.common import _ccodec as ccodec
except ImportError:
    ccodec = None
needs_compiled = pytest.mark.skipif(ccodec is None, reason="compiled codec not built here (no C compiler)")


pure_codec = pure_copy(codec)
pure_entry_check = pure_copy(entry_check)
pure_properties = pure_copy(properties)
pure_hashing = pure_copy(hashing)
pure_index = pure_copy(index)
pure_ids = pure_copy(ids)

hosts = st.sampled_from([("127.0.0.1", 10911), ("10.1.2.3", 0), ("::1", 8080), ("fe80::1:2", 65535)])
text = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x01\x02"), max_size=12)
props = st.dictionaries(text.filter(bool), text, max_size=5)


def damage(raw: bytes, flips: list[tuple[int, int]], cut: int) -> bytes:
    """`raw` with the bytes at the flips' offsets replaced, cut after `cut` bytes."""
    out = bytearray(raw)
    for at, value in flips:
        if at < len(out):
            out[at] = value
    return bytes(out[:cut])


def test_the_compiled_codec_is_built_where_a_compiler_is() -> None:
    """A machine with a C compiler gets the compiled path (the install fetches Cython into its build
    environment), else this suite would test one path twice without saying so."""
    if speedups.pure_python_forced():
        assert speedups.compiled() is None
        return
    if shutil.which("cc") is None:
        pytest.skip("no C compiler: the pure path is the only one here")
    assert ccodec is not None and speedups.compiled() is ccodec and codec.decode_stored is ccodec.decode_stored


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(topic=st.text(min_size=1, max_size=200), body=st.binary(max_size=64), flag=st.integers(-2**31, 2**31 - 1),
       properties=props, born=hosts, store=hosts, qoff=st.integers(0, 2**63 - 1), phys=st.integers(0, 2**63 - 1),
       reconsume=st.integers(-2**31, 2**31 - 1), read_body=st.booleans())
def test_decode_stored_matches(topic, body, flag, properties, born, store, qoff, phys, reconsume, read_body) -> None:
    msg = MessageExt(topic=topic, body=body, flag=flag, properties=properties, queue_id=3, queue_offset=qoff,
                     born_host=born, store_host=store, commit_log_offset=phys, born_timestamp=-5,
                     store_timestamp=2**40, reconsume_times=reconsume, prepared_transaction_offset=7)
    raw = b"\0" * 3 + encode_stored(msg) + b"tail"
    got = ccodec.decode_stored(raw, 3, True, read_body)
    assert got == pure_codec.decode_stored(raw, 3, True, read_body)
    assert got.msg_id == pure_codec.decode_stored(raw, 3).msg_id
    assert ccodec.decode_entries(raw[3:-4] * 2) == pure_codec.decode_entries(raw[3:-4] * 2)


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(topic=st.text(min_size=1, max_size=200), body=st.binary(max_size=64), flag=st.integers(-2**31, 2**31 - 1),
       properties=props, born=hosts, store=hosts, qoff=st.integers(0, 2**63 - 1), phys=st.integers(0, 2**63 - 1),
       reconsume=st.integers(-2**31, 2**31 - 1), at=st.integers(0, 9))
def test_write_stored_writes_the_same_bytes(topic, body, flag, properties, born, store, qoff, phys, reconsume,
                                            at) -> None:
    """The append path's entry writer, with IPv6 hosts, topics over 127 bytes (2-byte length) and empty bodies."""
    msg = MessageExt(topic=topic, body=body, flag=flag, queue_id=5, born_host=born, born_timestamp=-9,
                     reconsume_times=reconsume, prepared_transaction_offset=3)
    topic_b, props_b = topic.encode(), properties_string(properties).encode()
    sys_flag = 8 | codec.host_flags(born, store)
    total = codec.stored_size(sys_flag, len(body), len(topic_b), len(props_b))
    outs = []
    for write in (ccodec.write_stored, pure_codec.write_stored):
        buf = bytearray(at + total + 7)
        write(buf, at, msg, total=total, sys_flag=sys_flag, queue_offset=qoff, phys_offset=phys,
              store_timestamp=2**41, store_host=store, topic=topic_b, properties=props_b)
        outs.append(bytes(buf))
    assert outs[0] == outs[1]
    got = pure_codec.decode_stored(outs[0], at, True)
    assert (got.body, got.topic, got.queue_offset, got.store_host) == (body, topic, qoff, store)


@needs_compiled
@settings(max_examples=200, deadline=None)
@given(host=hosts, offsets=st.lists(st.integers(0, 2**63 - 1), max_size=40))
def test_create_offset_msg_ids_match(host: tuple[str, int], offsets: list[int]) -> None:
    got = ccodec.create_offset_msg_ids(host, offsets)
    assert got == pure_ids.create_offset_msg_ids(host, offsets)
    assert got == [pure_ids.create_offset_msg_id(host, o) for o in offsets]


@needs_compiled
def test_write_stored_refuses_a_target_too_small_rather_than_writing_past_it() -> None:
    msg = MessageExt(topic="T", body=b"x" * 100, born_host=("127.0.0.1", 1))
    total = codec.stored_size(0, 100, 1, 0)
    for write in (ccodec.write_stored, pure_codec.write_stored):
        with pytest.raises((ValueError, struct.error)):
            write(memoryview(bytearray(total - 1)), 0, msg, total=total, sys_flag=0, queue_offset=0, phys_offset=0,
                  store_timestamp=0, store_host=("127.0.0.1", 2), topic=b"T", properties=b"")


@needs_compiled
@settings(max_examples=400, deadline=None)
@given(cut=st.integers(0, 200), flips=st.lists(st.tuples(st.integers(0, 199), st.integers(0, 255)), max_size=4))
def test_damaged_entries_are_refused_alike(cut: int, flips: list[tuple[int, int]]) -> None:
    msg = MessageExt(topic="T", body=b"abcdef", properties={"TAGS": "x", "KEYS": "k1 k2"},
                     born_host=("1.2.3.4", 5), store_host=("5.6.7.8", 9))
    raw = damage(encode_stored(msg), flips, cut)
    outcomes = []
    for decode in (ccodec.decode_stored, pure_codec.decode_stored):
        try:
            outcomes.append(decode(raw, 0, True))
        except (CorruptMessageError, pure_codec.CorruptMessageError):
            outcomes.append("corrupt")
    assert outcomes[0] == outcomes[1]


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(pairs=st.lists(st.tuples(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "TAG", "XKEYS", ""]),
                                st.text(max_size=6)), max_size=6),
       raw_tail=st.binary(max_size=6))
def test_dispatch_values_and_properties_match(pairs: list[tuple[str, str]], raw_tail: bytes) -> None:
    encoded = "".join(f"{k}\x01{v}\x02" for k, v in pairs).encode() + raw_tail
    outcomes = []
    for dispatch in (ccodec.dispatch_values, pure_properties.dispatch_values):
        try:
            outcomes.append(dispatch(encoded))
        except UnicodeDecodeError:
            outcomes.append("undecodable")
    assert outcomes[0] == outcomes[1]
    entry = encode_stored(MessageExt(topic="T", properties={}), encoded.decode(errors="replace"))
    decoded = ccodec.decode_stored(entry).properties
    assert decoded == pure_properties.string_to_properties(encoded.decode(errors="replace"))


key_text = st.text(alphabet=st.sampled_from("ab \x80é#"), max_size=12)


@needs_compiled
@given(prefix=st.sampled_from(["T#", "tópic#", ""]), end_phy=st.integers(-1, 40),
       units=st.lists(st.tuples(st.integers(0, 50), st.none() | key_text, st.none() | key_text), max_size=8))
def test_unit_key_hashes_match(prefix: str, end_phy: int, units: list[tuple[int, str | None, str | None]]) -> None:
    """Keys split on single spaces (blanks dropped), UNIQ_KEY first, non-ASCII keys and prefixes, units before
    the index's end skipped."""
    rows = [(phys, 0, 0, keys, uniq) for phys, keys, uniq in units]
    got = ccodec.unit_key_hashes(prefix, rows, end_phy)
    assert got == pure_index.unit_key_hashes(prefix, rows, end_phy)
    expected = [(phys, k) for phys, _, _, keys, uniq in rows if phys >= end_phy
                for k in ([uniq] if uniq else []) + [k for k in (keys or "").split(" ") if k]]
    assert got == ([pure_hashing.index_key_hash(prefix + k) for _, k in expected], [phys for phys, _ in expected])


def raw_batch(messages: list[tuple[bytes, bytes]]) -> bytes:
    """A batch body of (body, properties bytes) as given, so properties need not end with a separator."""
    return b"".join(codec.BATCH_HEAD.pack(codec.BATCH_ENTRY_FIXED + len(b) + len(p), 0, 0, i, len(b)) + b
                    + codec.SHORT.pack(len(p)) + p for i, (b, p) in enumerate(messages))


#: A message's own properties as a batch carries them: empty, encoded, or encoded without the last
#: separator (not every client ends them with one); TAGS, KEYS and UNIQ_KEY among them at times.
own_props = st.tuples(st.dictionaries(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "a", "bé"]), text, max_size=4),
                      st.booleans()).map(lambda t: properties_string(t[0]).encode()[:-1 if t[1] else None])
#: A batch's own properties (the header's with CLUSTER), sometimes with a TAGS, KEYS or UNIQ_KEY that
#: then wins over the message's.
batch_props = st.dictionaries(st.sampled_from(["CLUSTER", "WAIT", "TAGS", "KEYS", "UNIQ_KEY", "x"]), text,
                              max_size=4).map(lambda d: properties_string(d).encode())


def stored_props(own: bytes, extra: bytes) -> bytes:
    """What Apache's CommitLog stores as a batch message's properties."""
    if own and extra and not own.endswith(b"\x02"):
        return own + b"\x02" + extra
    return own + extra


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(messages=st.lists(st.tuples(st.binary(max_size=40), own_props), min_size=1, max_size=6),
       extra=batch_props, topic=st.sampled_from(["T", "t" * 130]))
def test_pack_batch_writes_the_same_bytes(messages: list[tuple[bytes, bytes]], extra: bytes, topic: str) -> None:
    """Same bytes and dispatch units from both forms, each message's properties followed by the batch's
    (with a separator between when the message's do not end with one), the tag code, KEYS and
    UNIQ_KEY those of the stored properties (the batch's last, so winning)."""
    body = raw_batch(messages)
    entries = codec.batch_entries(body)
    header = codec.HEADERS[0]
    fixed = header.pack(0, codec.magic_for(len(topic)), 0, 0, 0, 0, 0, 0, 123, b"\1\2\3\4", 5, 456,
                        b"\5\6\7\10", 9, 2, 0, 0)
    part = codec.topic_props_tail(topic.encode(), b"")[:-2]
    outs = []
    for pack in (ccodec.pack_batch, pure_codec.pack_batch):
        mm = bytearray(4096)
        units = pack(memoryview(mm), 10, 1000, body, entries, fixed, part, extra, 4, 77, {}, tags_code)
        outs.append((bytes(mm), units))
    assert outs[0] == outs[1]
    mm, units = outs[0]
    growth = ccodec.batch_props_growth(body, entries, len(extra))
    assert growth == pure_codec.batch_props_growth(body, entries, len(extra))
    assert sum(u[1] for u in units) == len(body) + len(entries) * (len(fixed) + len(part) - 20) + growth
    at = 10
    for (b, own), (phys, size, code, keys, uniq), i in zip(messages, units, range(len(messages))):
        got = pure_codec.decode_stored(mm, at, True)
        want = stored_props(own, extra)
        assert mm[at + size - len(want) - 2:at + size] == codec.SHORT.pack(len(want)) + want
        assert (got.body, got.flag, got.queue_offset, got.commit_log_offset, got.store_size) == (b, i, 77 + i, phys,
                                                                                                 size)
        assert got.properties == pure_properties.string_to_properties(want.decode())
        assert (code, keys, uniq) == (tags_code(got.properties.get("TAGS")), got.properties.get("KEYS"),
                                      got.properties.get("UNIQ_KEY"))
        at += size
    assert units[0][0] == 1000


@needs_compiled
def test_batch_properties_too_long_for_a_message_are_refused_alike() -> None:
    """A message's properties with the batch's must fit the 2-byte length; the separator counts."""
    own = b"a\x01" + b"v" * 100
    body = raw_batch([(b"x", b""), (b"y", own)])
    entries = codec.batch_entries(body)
    fixed = codec.HEADERS[0].pack(0, codec.MAGIC_V1, 0, 0, 0, 0, 0, 0, 1, b"\1\2\3\4", 5, 6, b"\5\6\7\10", 9, 0,
                                  0, 0)
    fits = codec.MAX_PROPERTIES_LEN - len(own) - 1
    for growth, pack in ((ccodec.batch_props_growth, ccodec.pack_batch),
                         (pure_codec.batch_props_growth, pure_codec.pack_batch)):
        assert growth(body, entries, fits) == 2 * fits + 1
        assert growth(body, entries, 0) == 0
        with pytest.raises(ValueError):
            growth(body, entries, fits + 1)
        units = pack(memoryview(bytearray(70_000)), 0, 0, body, entries, fixed, b"\1T", b"c" * fits, 0, 0, {},
                     tags_code)
        head = len(fixed) + 2 + 1 + 2  # the fixed part, topic with its length, body, properties length
        assert [u[1] for u in units] == [head + fits, head + codec.MAX_PROPERTIES_LEN]
        with pytest.raises(ValueError):
            pack(memoryview(bytearray(70_000)), 0, 0, body, entries, fixed, b"\1T", b"c" * (fits + 1), 0, 0, {},
                 tags_code)


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(bodies=st.lists(st.binary(max_size=40), min_size=1, max_size=5), properties=props,
       cut=st.integers(0, 400), flips=st.lists(st.tuples(st.integers(0, 399), st.integers(0, 255)), max_size=3))
def test_batch_entries_match_and_refuse_alike(bodies: list[bytes], properties: dict[str, str], cut: int,
                                              flips: list[tuple[int, int]]) -> None:
    damaged = damage(encode_batch([Message("T", b, i, properties) for i, b in enumerate(bodies)]), flips, cut)
    outcomes = []
    for entries in (ccodec.batch_entries, pure_codec.batch_entries):
        try:
            outcomes.append(entries(damaged))
        except ValueError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]


def test_batch_entries_are_offsets_into_the_body() -> None:
    body = encode_batch([Message("T", b"one", 1, {"A": "b"}), Message("T", b"", 2, {})])
    (f1, b1, p1, e1), (f2, b2, p2, e2) = codec.batch_entries(body)
    assert (f1, body[b1:p1], body[p1 + 2:e1], f2, b2 == p2, e2) == (1, b"one", b"A\x01b\x02", 2, True, len(body))
    assert struct.unpack(">h", body[p1:p1 + 2])[0] == e1 - p1 - 2


@needs_compiled
def test_pack_batch_refuses_a_target_too_small_rather_than_writing_past_it() -> None:
    body = encode_batch([Message("T", b"x" * 100, 0, {"TAGS": "a"})])
    fixed = codec.HEADERS[0].pack(0, codec.MAGIC_V1, 0, 0, 0, 0, 0, 0, 1, b"\1\2\3\4", 5, 6, b"\5\6\7\10", 9, 0,
                                  0, 0)
    for pack in (ccodec.pack_batch, pure_codec.pack_batch):
        with pytest.raises(ValueError):
            pack(memoryview(bytearray(150)), 0, 0, body, codec.batch_entries(body), fixed, b"\1T", b"", 0, 0, {},
                 tags_code)
        with pytest.raises(ValueError):
            pack(memoryview(bytearray(150)), 0, 0, body, codec.batch_entries(body), fixed, b"\1T", b"C\x01c" * 20,
                 0, 0, {}, tags_code)
    with pytest.raises(ValueError):
        ccodec.pack_batch(memoryview(bytearray(4096)), 0, 0, body, [(0, 0, 5000, 5002)], fixed, b"\1T", b"", 0, 0,
                          {}, tags_code)
    with pytest.raises(ValueError):
        ccodec.batch_props_growth(body, [(0, 0, 5000, 5002)], 10)


@needs_compiled
@settings(max_examples=150, deadline=None)
@given(bodies=st.lists(st.binary(max_size=40), min_size=1, max_size=6), properties=props,
       flag=st.integers(-(2**31), 2**31 - 1), as_bytearray=st.booleans())
def test_encode_batch_writes_the_same_bytes(bodies: list[bytes], properties: dict[str, str], flag: int,
                                            as_bytearray: bool) -> None:
    msgs = [Message("T", bytearray(b) if as_bytearray else b, flag,
                    dict(properties, KEYS=f"k{i}", SKIPPED=None)) for i, b in enumerate(bodies)]
    assert ccodec.encode_batch(msgs) == pure_codec.encode_batch(msgs)


@needs_compiled
def test_encode_batch_refuses_properties_over_the_length_field_alike() -> None:
    msgs = [Message("T", b"x", 0, {"K": "v" * 40_000})]
    for encode in (ccodec.encode_batch, pure_codec.encode_batch):
        with pytest.raises(ValueError, match="over 32767"):
            encode(msgs)


@needs_compiled
@settings(max_examples=150, deadline=None)
@given(hashes=st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=40), first=st.integers(1, 30),
       slots=st.integers(1, 16), diff=st.integers(0, 2**31 - 1), rest=st.integers(0, 2**31 - 1),
       start=st.integers(0, 3))
def test_index_put_entries_writes_the_same_bytes(hashes: list[int], first: int, slots: int, diff: int, rest: int,
                                                 start: int) -> None:
    entries_at = index.HEADER_SIZE + slots * 4
    phys = [1000 + 97 * i for i in range(len(hashes))]
    outs = []
    for put in (ccodec.index_put_entries, pure_index.put_entries):
        mm = bytearray(entries_at + 80 * index.ENTRY_SIZE)
        mm[index.HEADER_SIZE:entries_at] = b"\0\0\0\7" * slots  # stale slots: entry 7 may not exist yet
        outs.append((put(memoryview(mm), slots, entries_at, first, hashes, phys, start, len(hashes), diff, rest),
                     bytes(mm)))
    assert outs[0] == outs[1]


@needs_compiled
def test_index_put_entries_refuses_entries_past_the_mapping_alike() -> None:
    for put in (ccodec.index_put_entries, pure_index.put_entries):
        with pytest.raises(ValueError):
            put(memoryview(bytearray(index.HEADER_SIZE + 4 + 2 * index.ENTRY_SIZE)), 1, index.HEADER_SIZE + 4, 1,
                [5, 6], [0, 1], 0, 2, 0, 0)


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(bodies=st.lists(st.binary(max_size=40), min_size=1, max_size=5), host=hosts, long_topic=st.booleans(),
       blank_at=st.none() | st.integers(0, 4), cut=st.integers(0, 600),
       flips=st.lists(st.tuples(st.integers(0, 599), st.integers(0, 255)), max_size=3), start=st.integers(0, 3),
       check_crc=st.booleans(), extra=props)
def test_the_walks_stop_where_and_as_the_pure_walks_do(bodies: list[bytes], host: tuple[str, int],
                                                       long_topic: bool, blank_at: int | None, cut: int,
                                                       flips: list[tuple[int, int]], start: int,
                                                       check_crc: bool, extra: dict[str, str]) -> None:
    """Normal recovery's walk and a slave's dispatch walk over a file: whole entries (v1 and v2 topics, IPv4 and
    IPv6 hosts, any properties), a blank record, damage and a torn end; from an entry's start or from inside one."""
    entries = [encode_stored(MessageExt(topic="T" * (130 if long_topic else 1), body=body, born_host=host,
                                        store_host=host, properties={"TAGS": "x", "KEYS": "k1 k2", **extra}))
               for body in bodies]
    if blank_at is not None and blank_at < len(entries):
        entries.insert(blank_at, struct.pack(">ii", 8, codec.BLANK_MAGIC))
    raw = b"".join(entries)
    raw = damage(raw, flips, cut) if flips or cut < len(raw) else raw
    offset = sum(len(e) for e in entries[:start]) if start < len(entries) else start
    offset = min(offset, len(raw))
    assert ccodec.walk_sizes(raw, offset, check_crc) == pure_entry_check.walk_sizes(raw, offset, check_crc)
    assert ccodec.walk_sizes(memoryview(bytearray(raw)), offset, check_crc) == pure_entry_check.walk_sizes(raw, offset,
                                                                                                       check_crc)
    # a slave's dispatch walk over the same bytes: the same entries (fields, properties), the same stop
    assert ccodec.check_entry(raw, offset, check_crc) == pure_entry_check.check_entry(raw, offset, check_crc)
    for limit, max_count in ((len(raw), 10), (len(raw) // 2, 10), (len(raw), 1), (offset, 3)):
        assert ccodec.check_entries(memoryview(bytearray(raw)), offset, limit, check_crc, max_count) == \
            pure_entry_check.check_entries(raw, offset, limit, check_crc, max_count), (limit, max_count)


@needs_compiled
def test_walk_sizes_reaches_every_kind_of_stop() -> None:
    entry = encode_stored(MessageExt(topic="T", body=b"abc", born_host=("::1", 1), store_host=("1.2.3.4", 2)))
    blank = struct.pack(">ii", 8, codec.BLANK_MAGIC)
    cases = {"the end": (entry * 3, (3 * len(entry), -1)), "a blank": (entry + blank + entry, (len(entry), 0)),
             "torn": (entry + entry[:50], (len(entry), -1)), "empty": (b"", (0, -1))}
    for name, (raw, expected) in cases.items():
        for walk in (ccodec.walk_sizes, pure_entry_check.walk_sizes):
            assert walk(raw, 0, True) == expected, name
    damaged = bytearray(entry)
    damaged[damaged.index(b"abc")] ^= 0x01  # the body: only the CRC notices
    for walk in (ccodec.walk_sizes, pure_entry_check.walk_sizes):
        assert walk(bytes(damaged), 0, True) == (0, -1)
        assert walk(bytes(damaged), 0, False) == (len(entry), -1)
