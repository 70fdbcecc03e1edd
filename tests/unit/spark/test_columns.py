"""The compiled Columns (_columns.pyx) against the pure reference (columns.py): equal batches, equal refusals.

Pull answers are built from stored entries as the broker writes them, with what a reader can meet:
unicode and repeated properties, compressed bodies, retry topics, IPv6 hosts, entries outside the
range and tags filtered on the client.
"""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.puresupport import pure_copy

pa = pytest.importorskip("pyarrow")

from mqtools.common import properties as P
from mqtools.common import speedups
from mqtools.common.codec import CorruptMessageError, encode_stored
from mqtools.common.message import MessageExt
from mqtools.spark import columns

try:
    from mqtools.spark import _columns as compiled
except ImportError:
    compiled = None
needs_compiled = pytest.mark.skipif(compiled is None, reason="compiled columns not built here (no C compiler)")


pure = pure_copy(columns)
hosts = st.sampled_from([("127.0.0.1", 10911), ("10.1.2.3", 0), ("::1", 8080), ("fe80::1:2", 65535)])
text = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x01\x02"), max_size=8)
names = st.sampled_from([P.TAGS, P.KEYS, P.UNIQ_KEY, P.RETRY_TOPIC, "WAIT", "a", "é", ""])
tag_values = st.sampled_from(["", "TagA", "TagB", "tä"])


@st.composite
def entries(draw: st.DrawFn, offset: int) -> bytes:
    pairs = draw(st.lists(st.tuples(names, text | tag_values), max_size=6))
    raw_props = "".join(f"{k}\x01{v}\x02" for k, v in pairs) + draw(st.sampled_from(["", "x", "a\x01", "\x02"]))
    body = draw(st.binary(max_size=48))
    compressed = draw(st.booleans())
    msg = MessageExt(topic=draw(st.sampled_from(["T", "%RETRY%G", "tö"])), body=zlib.compress(body) if compressed else body,
                     flag=draw(st.integers(-5, 5)), queue_id=draw(st.integers(0, 7)), queue_offset=offset,
                     sys_flag=1 if compressed else 0, born_timestamp=draw(st.integers(0, 2**41)),
                     born_host=draw(hosts), store_timestamp=draw(st.integers(0, 2**41)), store_host=draw(hosts),
                     commit_log_offset=draw(st.integers(0, 2**62)))
    return encode_stored(msg, raw_props)


@st.composite
def pulls(draw: st.DrawFn) -> tuple[list[bytes], int, int, frozenset[str]]:
    count = draw(st.integers(1, 3))
    answers, offset = [], 0
    for _ in range(count):
        size = draw(st.integers(0, 5))
        answers.append(b"".join(draw(entries(offset + i)) for i in range(size)))
        offset += size
    low = draw(st.integers(0, max(offset, 1)))
    high = draw(st.integers(low, offset + 1))
    tags = frozenset(draw(st.lists(tag_values, max_size=2)))
    return answers, low, high, tags


def _both() -> tuple[object, object]:
    return compiled.Columns("broker-a"), pure.Columns("broker-a")


@needs_compiled
def test_the_reader_uses_the_compiled_columns_where_they_are_built() -> None:
    assert pure.Columns is not compiled.Columns
    assert (columns.Columns is compiled.Columns) is not speedups.pure_python_forced()


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(case=pulls())
def test_compiled_columns_make_the_references_batch(case: tuple[list[bytes], int, int, frozenset[str]]) -> None:
    answers, low, high, tags = case
    fast, ref = _both()
    for body in answers:
        assert fast.add_pull(body, low, high, tags) == ref.add_pull(body, low, high, tags)
        assert (len(fast), fast.nbytes) == (len(ref), ref.nbytes)
    got, want = fast.batch(), ref.batch()
    got.validate(full=True)
    assert got.equals(want), (got.to_pylist(), want.to_pylist())
    assert len(fast) == fast.nbytes == 0, "a batch hands the rows over"
    assert fast.batch().num_rows == 0


@needs_compiled
@settings(max_examples=200, deadline=None)
@given(cut=st.integers(0, 160), flips=st.lists(st.tuples(st.integers(0, 159), st.integers(0, 255)), max_size=3))
def test_a_damaged_answer_is_refused_alike_and_adds_nothing(cut: int, flips: list[tuple[int, int]]) -> None:
    good = encode_stored(MessageExt(topic="T", body=b"kept", properties={"KEYS": "k"}, queue_offset=0,
                                    born_host=("1.2.3.4", 5), store_host=("5.6.7.8", 9)))
    damaged = bytearray(encode_stored(MessageExt(topic="T", body=b"abcdef", properties={"TAGS": "x"},
                                                 queue_offset=1, born_host=("1.2.3.4", 5),
                                                 store_host=("5.6.7.8", 9))))
    for at, value in flips:
        if at < len(damaged):
            damaged[at] = value
    answer = good + bytes(damaged[:cut])
    fast, ref = _both()
    fast.add_pull(good, 0, 10, frozenset())
    ref.add_pull(good, 0, 10, frozenset())
    outcomes = []
    for cols in (fast, ref):
        try:
            outcomes.append(cols.add_pull(answer, 0, 10, frozenset()))
        except (CorruptMessageError, zlib.error):
            outcomes.append("refused")
    assert outcomes[0] == outcomes[1]
    assert fast.batch().equals(ref.batch())


@needs_compiled
def test_hosts_that_differ_only_in_port_or_in_turn_are_each_the_rows_own() -> None:
    """The compiled columns take the host of the row before without a lookup: only when it is the same address
    and port."""
    hosts = [("10.0.0.1", 1), ("10.0.0.1", 2), ("10.0.0.1", 2), ("::1", 2), ("10.0.0.1", 1), ("10.0.0.10", 1)]
    answer = b"".join(encode_stored(MessageExt(topic="T", body=b"b", queue_offset=i, born_host=h,
                                               store_host=hosts[-1 - i])) for i, h in enumerate(hosts))
    fast, ref = _both()
    for cols in (fast, ref):
        cols.add_pull(answer, 0, 10, frozenset())
    got, want = fast.batch(), ref.batch()
    assert got.equals(want)
    assert got.column("born_host").to_pylist()[:3] == ["10.0.0.1:1", "10.0.0.1:2", "10.0.0.1:2"]


@needs_compiled
@settings(max_examples=100, deadline=None)
@given(rounds=st.lists(st.tuples(pulls(), st.booleans()), min_size=2, max_size=6))
def test_batches_kept_stay_whole_while_later_ones_reuse_the_buffers_of_those_let_go(
        rounds: list[tuple[tuple[list[bytes], int, int, frozenset[str]], bool]]) -> None:
    """A batch's buffers go back to a pool for the next batches once Arrow lets go of them: a batch still held keeps
    its own, and a batch built in reused memory holds only its own rows."""
    fast, ref = _both()
    kept = []
    for (answers, low, high, tags), keep in rounds:
        for body in answers:
            fast.add_pull(body, low, high, tags)
            ref.add_pull(body, low, high, tags)
        got, want = fast.batch(), ref.batch()
        got.validate(full=True)
        assert got.equals(want)
        if keep:
            kept.append((got, want))
        del got
    for got, want in kept:
        got.validate(full=True)
        assert got.equals(want)
