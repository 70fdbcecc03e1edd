"""Golden bytes of the stored layout, ids, Java hash and the batch body codec."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mqtools.common import codec, entry_check
from mqtools.common import properties as P
from mqtools.common.codec import CorruptMessageError, decode_stored, encode_stored
from mqtools.common.hashing import index_key_hash, java_hash, tags_code
from mqtools.common.ids import UniqueKeyGenerator, create_offset_msg_id, decode_offset_msg_id
from mqtools.common.message import Message, MessageExt
from mqtools.common.properties import properties_to_string, string_to_properties


def _sample(**kw) -> MessageExt:
    base = {"topic": "TopicTest", "body": b"Hello RocketMQ", "flag": 7,
                "properties": {"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "AC11"},
                "queue_id": 3, "queue_offset": 42, "sys_flag": 0, "born_timestamp": 1_700_000_000_123,
                "born_host": ("192.168.0.10", 54321), "store_timestamp": 1_700_000_000_456,
                "store_host": ("10.1.2.3", 10911), "commit_log_offset": 123456789, "reconsume_times": 2,
                "prepared_transaction_offset": 99}
    base.update(kw)
    return MessageExt(**base)


def test_golden_bytes_ipv4_field_by_field():
    msg = _sample()
    raw = encode_stored(msg)
    props = properties_to_string(msg.properties).encode()
    expected_len = 91 + len(msg.body) + len(b"TopicTest") + len(props)
    assert len(raw) == expected_len
    u = lambda fmt, at: struct.unpack_from(">" + fmt, raw, at)[0]
    assert u("i", 0) == expected_len
    assert raw[4:8] == bytes.fromhex("DAA320A7")
    assert u("i", 8) == zlib.crc32(b"Hello RocketMQ") & 0x7FFFFFFF
    assert u("i", 12) == 3
    assert u("i", 16) == 7
    assert u("q", 20) == 42
    assert u("q", 28) == 123456789
    assert u("i", 36) == 0
    assert u("q", 40) == 1_700_000_000_123
    assert raw[48:52] == bytes([192, 168, 0, 10]) and u("i", 52) == 54321
    assert u("q", 56) == 1_700_000_000_456
    assert raw[64:68] == bytes([10, 1, 2, 3]) and u("i", 68) == 10911
    assert u("i", 72) == 2
    assert u("q", 76) == 99
    assert u("i", 84) == len(msg.body)
    assert raw[88:88 + 14] == b"Hello RocketMQ"
    p = 88 + 14
    assert raw[p] == 9 and raw[p + 1:p + 10] == b"TopicTest"
    assert u("h", p + 10) == len(props)
    assert raw[p + 12:] == props


def test_ipv6_hosts_set_flags_and_widen_fields():
    msg = _sample(born_host=("::1", 1), store_host=("fe80::2", 2))
    raw = encode_stored(msg)
    assert len(raw) == len(encode_stored(_sample())) + 24
    flag = struct.unpack_from(">i", raw, 36)[0]
    assert flag & 0x30 == 0x30
    back = decode_stored(raw, check_crc=True)
    assert back.born_host == ("::1", 1) and back.store_host == ("fe80::2", 2)
    assert len(back.msg_id) == 56


def test_long_topic_uses_v2_magic_and_short_length():
    raw = encode_stored(_sample(topic="t" * 200))
    assert raw[4:8] == bytes.fromhex("DAA320AB")
    assert decode_stored(raw).topic == "t" * 200


def test_empty_body_crc_is_zero():
    raw = encode_stored(_sample(body=b""))
    assert struct.unpack_from(">i", raw, 8)[0] == 0
    assert decode_stored(raw, check_crc=True).body == b""


def test_decode_roundtrip_on_memoryview_at_offset():
    raw = encode_stored(_sample())
    buf = memoryview(b"\0" * 13 + raw + b"\0" * 5)
    m = decode_stored(buf, 13, check_crc=True)
    assert (m.topic, m.queue_offset, m.commit_log_offset, m.tags) == ("TopicTest", 42, 123456789, "TagA")
    assert m.keys == ["k1", "k2"]
    assert m.msg_id == create_offset_msg_id(("10.1.2.3", 10911), 123456789)


@pytest.mark.parametrize("mutate", ["magic", "size_big", "size_small", "crc", "truncate", "zeros"])
def test_decode_rejects_corruption(mutate):
    raw = bytearray(encode_stored(_sample()))
    if mutate == "magic":
        raw[4] ^= 0xFF
    elif mutate == "size_big":
        struct.pack_into(">i", raw, 0, len(raw) + 10)
    elif mutate == "size_small":
        struct.pack_into(">i", raw, 0, len(raw) - 1)
    elif mutate == "crc":
        raw[90] ^= 1
    elif mutate == "truncate":
        raw = raw[:50]
    else:
        raw = bytearray(len(raw))
    with pytest.raises(CorruptMessageError):
        decode_stored(bytes(raw), check_crc=True)
    assert entry_check.check_entry(bytes(raw), 0, True) == -1


def test_crc_mismatch_only_rejected_when_checked():
    raw = bytearray(encode_stored(_sample()))
    raw[90] ^= 1
    assert decode_stored(bytes(raw)).body != b"Hello RocketMQ"


def test_blank_record_is_recognised():
    blank = struct.pack(">ii", 100, codec.BLANK_MAGIC)
    assert entry_check.check_entry(blank, 0, True) == 0


def test_java_hash_matches_jvm_values():
    assert java_hash("") == 0
    assert java_hash("a") == 97
    assert java_hash("TagA") == 2598919
    assert java_hash("hello world") == 1794106052
    assert java_hash("polygenelubricants") == -2147483648
    assert java_hash("中文") == 0x4E2D * 31 + 0x6587  # UTF-16 code units
    assert java_hash("😀") == 0xD83D * 31 + 0xDE00  # surrogate pair: two code units
    assert tags_code(None) == 0
    assert index_key_hash("polygenelubricants") == 0
    assert index_key_hash("x" * 40) == abs(java_hash("x" * 40))


@given(st.text(max_size=60))
def test_java_hash_equals_reference_loop(s):
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    assert java_hash(s) == (h - (1 << 32) if h >= 1 << 31 else h)


def test_properties_codec():
    props = {"TAGS": "a", "KEYS": "x y", "EMPTY": ""}
    text = properties_to_string(props)
    assert text == "TAGS\x01a\x02KEYS\x01x y\x02EMPTY\x01\x02"
    assert string_to_properties(text) == {"TAGS": "a", "KEYS": "x y", "EMPTY": ""}
    assert string_to_properties("junk\x02A\x01b\x02") == {"A": "b"}


def test_offset_msg_id_roundtrip():
    mid = create_offset_msg_id(("10.0.0.5", 10911), 0x1234)
    assert mid == "0A00000500002A9F0000000000001234"
    assert decode_offset_msg_id(mid) == (("10.0.0.5", 10911), 0x1234)
    with pytest.raises(ValueError):
        decode_offset_msg_id("ABCD")
    with pytest.raises(ValueError, match="port 259529407"):  # a client msgId: pid and loader hash read as a port
        decode_offset_msg_id("C0000202" + "0F781ABF" + "0000000000000000")


def test_unique_key_layout():
    gen = UniqueKeyGenerator("192.168.1.2", clock=lambda: 1_700_000_000.0, pid=0x12345)
    a, b = gen.next(), gen.next()
    assert len(a) == 32 and a[:8] == "C0A80102" and a[8:12] == "2345"
    assert a[:-4] == b[:-4] and int(b[-4:], 16) == int(a[-4:], 16) + 1


@settings(max_examples=50)
@given(st.lists(st.tuples(st.binary(max_size=64), st.integers(-2**31, 2**31 - 1),
                          st.dictionaries(st.text("abcXYZ", min_size=3, max_size=5),
                                          st.text("xyz ", max_size=5), max_size=3)), min_size=1, max_size=8))
def test_batch_body_roundtrip(items):
    msgs = [Message("", body, flag, props) for body, flag, props in items]
    decoded = codec.decode_batch(codec.encode_batch(msgs))
    assert [(m.body, m.flag, m.properties) for m in decoded] == [(m.body, m.flag, m.properties) for m in msgs]


def test_batch_body_rejects_garbage():
    body = codec.encode_batch([Message("", b"abc", 0, {"A": "b"})])
    with pytest.raises(ValueError):
        codec.decode_batch(body[:-3])
    with pytest.raises(ValueError):
        codec.decode_batch(b"\x00\x00\x00\x05" + body[4:])


@given(st.text(max_size=20), st.text(max_size=40))
def test_index_hash_with_cached_prefix_equals_whole_key(prefix, suffix):
    from mqtools.common.hashing import index_key_hash_parts

    assert index_key_hash_parts(prefix, suffix) == index_key_hash(prefix + suffix)


@given(st.text(max_size=12), st.lists(st.text(max_size=40), max_size=6))
def test_index_hashes_of_many_keys(prefix, suffixes):
    from mqtools.common.hashing import index_key_hashes

    expected = [index_key_hash(prefix + s) for s in suffixes]
    assert index_key_hashes(prefix, suffixes, [False] * len(suffixes)) == expected
    assert index_key_hashes(prefix, suffixes, [True] * len(suffixes)) == expected


@given(st.dictionaries(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "XTAGS", "A"]),
                       st.text("abc \x01", max_size=6), max_size=5), st.booleans())
def test_dispatch_values_match_full_parse(props, trailing):
    from mqtools.common.properties import dispatch_values

    text = properties_to_string(props)
    if not trailing:
        text = text[:-1]
    full = string_to_properties(text)
    encoded = text.encode()
    assert dispatch_values(encoded) == (full.get("TAGS"), full.get("KEYS"),
                                        full.get("UNIQ_KEY"))


@settings(max_examples=60)
@given(st.binary(min_size=0, max_size=300), st.text(min_size=1, max_size=200),
       st.sampled_from([("1.2.3.4", 1), ("::1", 2)]), st.integers(0, 2**40))
def test_check_entry_agrees_with_decode(body, topic, host, phys):
    raw = encode_stored(_sample(body=body, topic=topic, born_host=host, commit_log_offset=phys))
    info = entry_check.check_entry(raw, 0, True)
    msg = decode_stored(raw, check_crc=True)
    assert (info.size, info.topic, info.queue_offset, info.phys_offset, info.store_timestamp) == (
        msg.store_size, msg.topic, msg.queue_offset, msg.commit_log_offset, msg.store_timestamp)
    assert info.tags_code == java_hash("TagA") and info.keys == "k1 k2"


@settings(max_examples=200)
@given(st.binary(max_size=200), st.integers(0, 150))
def test_garbage_never_crashes_the_decoders(noise, cut):
    raw = bytearray(encode_stored(_sample()))
    raw[cut:cut + len(noise)] = noise
    info = entry_check.check_entry(bytes(raw), 0, True)
    assert info in (-1, 0) or isinstance(info, entry_check.EntryInfo)
    assert entry_check.entry_size(bytes(raw), 0, True) == (info.size if isinstance(info, entry_check.EntryInfo) else info)
    try:
        decode_stored(bytes(raw), check_crc=True)
    except CorruptMessageError:
        pass


@given(st.dictionaries(st.text(alphabet="ABCWAIT_xyz", min_size=1, max_size=6),
                       st.text(alphabet="truefalsx", min_size=1, max_size=5), max_size=5),
       st.sampled_from(["true", "false"]), st.integers(0, 5))
def test_drop_property_leaves_the_rest_as_decoded(props, wait, at):
    """WAIT goes wherever it stands in the string; every other item decodes as before."""
    items = list(props.items())
    items.insert(min(at, len(items)), (P.WAIT, wait))
    text = P.properties_to_string(dict(items))
    expected = P.string_to_properties(text)
    expected.pop(P.WAIT)
    assert P.string_to_properties(P.drop_property(text, P.WAIT, wait)) == expected


def test_a_negative_v2_topic_length_is_invalid_even_where_the_lengths_would_add_up():
    """A topic length of -3 makes the properties' length the body's last byte and the length's own 0xFF: 0x01FF
    when the body ends in 0x01, which the bytes after it can be made to match; entry_size (and the compiled check)
    refused such an entry, and check_entry must too, or a slave would dispatch garbage."""
    props = {"p": "x" * 375}  # 378 bytes encoded: 1 + 130 + 2 + 378 bytes follow the body's end + 1
    raw = bytearray(encode_stored(_sample(body=b"ab\x01", topic="T" * 130, properties=props)))  # v2: a long topic
    assert struct.unpack_from(">i", raw, 4)[0] == codec.MAGIC_V2
    body_end = raw.index(b"ab\x01") + 3
    assert len(raw) - (body_end + 1) == 0x01FF
    struct.pack_into(">h", raw, body_end, -3)
    assert entry_check.entry_size(bytes(raw), 0, False) == -1
    assert entry_check.check_entry(bytes(raw), 0, False) == -1
    assert entry_check.check_entries(bytes(raw), 0, len(raw), False, 4) == ([], 0, -1)
