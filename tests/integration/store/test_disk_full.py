"""A store whose filesystem fills up: appends are refused, the process lives.

The commitlog's files are sparse, and a write through the mapping into a hole the filesystem has no block for is
a SIGBUS, which ended the broker: found by filling a small tmpfs beside a running store. The store runs in a
process of its own here (a SIGBUS would end it, not the test), on a tmpfs mounted for the test (root only, as
the partition tests), filled by another file while the store is running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from mqtools.server.store.commitlog import KEEP_FREE

pytestmark = pytest.mark.integration
FS_SIZE = KEEP_FREE + (16 << 20)

#: The scripts' filler: another process takes every block of the filesystem but `leave` bytes.
FILL = textwrap.dedent("""
    import os

    def fill(path, leave):
        with open(path, "wb") as f:
            size = 0
            for step in (1 << 20, 4096):
                try:
                    while True:
                        os.posix_fallocate(f.fileno(), size, step)
                        size += step
                except OSError:
                    pass
            os.ftruncate(f.fileno(), size - leave)
""")

STORE = FILL + textwrap.dedent("""
    import asyncio, json, os, sys
    from mqtools.common.message import MessageExtBrokerInner
    from mqtools.server.store.config import MessageStoreConfig
    from mqtools.server.store.message_store import MessageStore

    ROOT, BALLAST = sys.argv[1], sys.argv[2]

    def message(i):
        return MessageExtBrokerInner(topic="T", body=b"x" * 1024, queue_id=i % 4, properties={"KEYS": f"k{i}"},
                                     born_host=("10.0.0.1", 4000), store_host=("10.0.0.2", 10911),
                                     born_timestamp=1)

    async def main():
        store = MessageStore(MessageStoreConfig(store_path_root_dir=ROOT, mapped_file_size_commit_log=8 << 20,
                                                mapped_file_size_consume_queue=20 * 4096, max_hash_slot_num=64,
                                                max_index_num=4096))
        await store.start()
        out = {"before": 0}
        for i in range(100):
            out["before"] += (await store.put_message(message(i))).ok
        fill(BALLAST, 1 << 20)  # another process takes the filesystem but a megabyte
        refused = [await store.put_message(message(100 + i)) for i in range(12000)]
        out["accepted"] = sum(r.ok for r in refused)
        out["statuses"] = sorted({r.status.value for r in refused if not r.ok})
        out["remark"] = next((r.remark for r in refused if not r.ok), None)
        os.unlink(BALLAST)
        out["after"] = (await store.put_message(message(3000))).ok
        out["readable"] = store.get_max_offset_in_queue("T", 0)
        await store.shutdown()
        print(json.dumps(out))

    asyncio.run(main())
""")


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "fs"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_SIZE}", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_filesystem_refuses_appends_and_the_store_lives(small_fs: Path) -> None:
    done = subprocess.run([sys.executable, "-c", STORE, str(small_fs / "store"), str(small_fs / "ballast")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["before"] == 100
    # what was allocated before the fill may still be written; then every append is refused, by name
    assert out["accepted"] < 12000 and out["statuses"] == ["CREATE_MAPPED_FILE_FAILED"], out
    assert "No space left on device" in out["remark"]
    assert out["after"] is True  # room again: appends go on
    assert out["readable"] >= 25


INDEX = FILL + textwrap.dedent("""
    import json, os, sys, time
    from pathlib import Path
    from mqtools.server.store.index import IndexService

    ROOT, BALLAST = Path(sys.argv[1]), sys.argv[2]
    index = IndexService(ROOT / "index", 1024, 200_000, time.time)
    def keys(first, n):
        for i in range(first, first + n):
            index.build("T", f"k{i}", None, 1000 + i * 100, 1_700_000_000_000)
    keys(0, 10)
    index.write_header()  # the first file
    fill(BALLAST, 0)  # every block of the filesystem taken
    keys(10, 60_000)  # past the blocks the first file has for its entries
    index.write_header()
    out = {"during": [len(index.query("T", k, 4, 0, 1 << 62)) for k in ("k1", "k59000")]}
    os.unlink(BALLAST)
    out["after"] = [len(index.query("T", k, 4, 0, 1 << 62)) for k in ("k1", "k59000")]
    index.close()
    print(json.dumps(out))
""")


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_index_entries_on_a_full_filesystem_wait_and_the_process_lives(small_fs: Path) -> None:
    """The index's slots and entries are written through its mapping too: with no block left, its keys wait (and
    are indexed once there is room) instead of a SIGBUS."""
    (small_fs / "store").mkdir()
    done = subprocess.run([sys.executable, "-c", INDEX, str(small_fs / "store"), str(small_fs / "ballast")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"during": [1, 0], "after": [1, 1]}


def test_a_cut_back_file_allocates_its_tail_again(tmp_path: Path) -> None:
    """set_position frees the blocks past the new end (recovery, a slave cut back in controller mode): what was
    allocated there is allocated again before the next write."""
    from mqtools.server.store.mapped_file import MappedFile

    mf = MappedFile(tmp_path / "00000000000000000000", 0, 1 << 20, create=True)
    try:
        mf.ensure(4096, 1 << 20, 0)
        assert mf.reserved == 1 << 20
        mf.set_position(8192)
        assert mf.reserved == 8192 and os.stat(mf.path).st_blocks * 512 < 1 << 20
        mf.ensure(8192 + 100, 1 << 20, 0)
        assert mf.reserved == 1 << 20 and os.stat(mf.path).st_blocks * 512 >= 1 << 20
    finally:
        mf.close()


def test_a_loaded_file_counts_its_data_as_allocated(tmp_path: Path) -> None:
    """A restarted store's last file: its data is allocated, so the first append does not count it as space to
    allocate (with keep_free, a broker on a fairly full disk would refuse appends it has room for)."""
    from mqtools.server.store.mapped_file import MappedFile

    path = tmp_path / "00000000000000000000"
    MappedFile(path, 0, 1 << 20, create=True).close()
    mf = MappedFile(path, 0, 1 << 20, create=False)
    try:
        assert mf.reserved == 1 << 20
        mf.set_position(300_000)  # recovery: the data's end
        assert mf.reserved == 300_000
    finally:
        mf.close()
