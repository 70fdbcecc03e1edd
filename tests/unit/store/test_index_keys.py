"""The index's batch hashing paths (producer-fixed UNIQ_KEY head, short and non-ASCII keys, space-separated
KEYS) write the same hashes RocketMQ's whole-key hash gives, in buildIndex order."""

from __future__ import annotations

from pathlib import Path

from mqtools.common.hashing import index_key_hash
from mqtools.server.store.index import ENTRY, HEADER_SIZE, IndexService

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
