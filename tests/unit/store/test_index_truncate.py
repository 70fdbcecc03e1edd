"""An index cut at a commitlog offset is the index of the messages before it alone, byte for byte (so Apache reads
it as its own), and it goes on indexing the messages written from there as that index would."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqtools.server.store.index import IndexService, Unit

#: Five puts of ten messages, a second apart: a UNIQ_KEY each and, but for the first of a put, two keys, one of
#: them shared by a third of the messages. 4 slots make long chains; 56 entries a file hold two puts, so the
#: third file's first entry counts its time from the second's end, not from its own begin.
RUNS: list[list[Unit]] = [[(100 * m, 10, 0, f"k{m} s{m % 3}" if m % 10 else None, f"u{m}")
                           for m in range(10 * r, 10 * r + 10)] for r in range(5)]


def _ts(run: int) -> int:
    return 1_700_000_000_000 + 1_000 * run


def _index(root: Path, below: int = 1 << 62, from_: int = 0) -> IndexService:
    """An index of the messages at offsets in [from_, below), put run by run."""
    index = IndexService(root, 4, 57, clock=lambda: 1.0)
    index_more(index, below, from_)
    return index


def index_more(index: IndexService, below: int, from_: int) -> None:
    for r, units in enumerate(RUNS):
        part = [u for u in units if from_ <= u[0] < below]
        if part:
            index.build_many("T", part, _ts(r))


def _files(index: IndexService) -> dict[str, bytes]:
    """Each file's bytes, headers written; the directory holds these files alone."""
    for f in index.files:
        f._write_header()
    on_disk = sorted(p.name for p in index.dir.iterdir()) if index.dir.is_dir() else []
    assert on_disk == [f.path.name for f in index.files]
    return {f.path.name: bytes(f.mm) for f in index.files}


@pytest.mark.parametrize("cut", [0, 1, 2, 5, 19, 20, 21, 22, 27, 38, 40, 41, 49, 50])
def test_a_cut_index_is_the_index_of_what_precedes_the_cut(tmp_path: Path, cut: int) -> None:
    point = 100 * cut
    index = _index(tmp_path / "cut")
    index.truncate_beyond(point)
    for m in range(50):
        assert index.query("T", f"k{m}", 64, 0, 2**62) == ([100 * m] if m < cut and m % 10 else []), m
        assert index.query("T", f"u{m}", 64, 0, 2**62) == ([100 * m] if m < cut else []), m
    assert sorted(index.query("T", "s1", 64, 0, 2**62)) == [100 * m for m in range(1, cut, 3) if m % 10]
    alone = _index(tmp_path / "alone", point)
    assert _files(index) == _files(alone)
    index_more(index, 1 << 62, point)
    index_more(alone, 1 << 62, point)
    assert _files(index) == _files(alone)
    for m in range(50):
        assert index.query("T", f"u{m}", 64, 0, 2**62) == [100 * m], m
    index.close()
    alone.close()
