"""The index's batch hashing paths (producer-fixed UNIQ_KEY head, short and non-ASCII keys, space-separated
KEYS) write the same hashes RocketMQ's whole-key hash gives, in buildIndex order."""

from __future__ import annotations

from pathlib import Path

from mqtools.common.hashing import index_key_hash
from mqtools.server.store.index import ENTRY, HEADER_SIZE, IndexService, unit_key_hashes

UNITS = [
    (100, 10, 0, "a b  c", "0A0000010000000000000000000000AB"),  # RocketMQ-shaped UNIQ_KEY, three keys
    (200, 10, 0, "ключ", "0A0000010000000000000000000000AC"),  # same producer head, non-ASCII key
    (300, 10, 0, None, "u1"),  # a short uniq key
    (400, 10, 0, "k", "ÄÖÜ0000000000000000000000000000"),  # a non-ASCII uniq key
]


def test_batch_hashes_match_whole_key_hashes(tmp_path: Path) -> None:
    index = IndexService(tmp_path, 64, 100, clock=lambda: 1.0)
    index.build_many("T", UNITS, 1_000)
    f = index.files[0]
    expected = []
    for phys, _, _, keys, uniq in UNITS:
        expected.append((index_key_hash(f"T#{uniq}"), phys))
        expected += [(index_key_hash(f"T#{k}"), phys) for k in (keys or "").split(" ") if k]
    base = HEADER_SIZE + f.slots * 4
    written = [ENTRY.unpack_from(f.mm, base + n * ENTRY.size)[:2] for n in range(1, f.index_count)]
    assert written == expected
    for phys, _, _, keys, uniq in UNITS:
        assert phys in index.query("T", uniq, 10, 0, 2**62)
    index.close()


def _units(first: int, count: int) -> list[tuple[int, int, int, str | None, str | None]]:
    return [(100 * i, 10, 0, f"k{i}", None) for i in range(first, first + count)]


def test_a_put_cut_short_by_a_kill_loses_no_earlier_key(tmp_path: Path) -> None:
    """A SIGKILL between a put's entries and its header leaves slots pointing at entries the header does not
    count (the page cache keeps both). After an abnormal load, the earlier keys of those slots are still
    found, before and after recovery indexes the cut put again."""
    index = IndexService(tmp_path, 4, 200, clock=lambda: 1.0)
    index.build_many("T", _units(1, 20), 1_000)
    index.write_header()
    checkpoint = index.flush()
    f = index.files[-1]
    header = bytes(f.mm[:HEADER_SIZE])
    f.put_many(*unit_key_hashes("T#", _units(21, 10), -1), 2_000, 0)
    f.mm[:HEADER_SIZE] = header  # the kill came before the header was written
    f.file.close()

    again = IndexService(tmp_path, 4, 200, clock=lambda: 1.0)
    assert again.load(True, checkpoint) is None
    for phys, _, _, keys, _ in _units(1, 20):
        assert phys in again.query("T", keys, 50, 0, 2**62), keys
    again.build_many("T", _units(21, 10), 2_000)
    for phys, _, _, keys, _ in _units(1, 30):
        assert again.query("T", keys, 50, 0, 2**62).count(phys) == 1, keys
    again.close()
