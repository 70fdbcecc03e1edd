"""The commitlog warmer: pages ahead of the write position become resident, contents never change."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import pytest

from mqtools.server.store import libc
from mqtools.server.store.mapped_file import OS_PAGE_SIZE, MappedFile
from mqtools.server.store.warmer import MappedFileWarmer

pytestmark = pytest.mark.skipif(libc.madvise_populate() is None, reason="MADV_POPULATE_WRITE needs Linux 5.14+")

MIB = 1 << 20


def smaps_kib(mf: MappedFile, *fields: str) -> int:
    """The sum of `fields` (KiB) of the file's mapping in /proc/self/smaps."""
    view = ctypes.c_char.from_buffer(mf.mm)
    addr = ctypes.addressof(view)
    del view
    inside, found, total = False, False, 0
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and ":" not in head:
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= addr < hi
        elif inside and head.rstrip(":") in fields:
            found = True
            total += int(line.split()[1])
    assert found, "the mapping is not in /proc/self/smaps"
    return total


def mapped_kib(mf: MappedFile) -> int:
    """Resident size of the file's mapping in this process's page tables (Rss): what a write finds
    already faulted in."""
    return smaps_kib(mf, "Rss")


def dirty_kib(mf: MappedFile) -> int:
    return smaps_kib(mf, "Private_Dirty", "Shared_Dirty")


@pytest.fixture
def warmer():
    w = MappedFileWarmer.start_if_supported(lead=2 * MIB, chunk=256 * 1024)
    yield w
    w.stop()


def test_pages_ahead_of_the_write_position_become_resident_and_keep_their_bytes(tmp_path, warmer) -> None:
    mf = MappedFile(tmp_path / "00000000000000000000", 0, 8 * MIB, create=True)
    mf.mm[0:5] = b"hello"
    mf.wrote = 5
    assert mapped_kib(mf) <= 64
    warmer.request(mf, 5)
    assert warmer.caught_up.wait(5)
    assert warmer.warmed == 2 * MIB + OS_PAGE_SIZE and warmer.due == MIB + 5  # through the page of pos + lead
    assert 2 * 1024 <= mapped_kib(mf) <= 2 * 1024 + 64
    assert mf.mm[0:5] == b"hello" and mf.mm[5:2 * MIB] == bytes(2 * MIB - 5)
    mf.close()


def test_a_new_file_starts_over_from_its_page_and_a_closed_one_is_let_go(tmp_path, warmer) -> None:
    first = MappedFile(tmp_path / "00000000000000000000", 0, 4 * MIB, create=True)
    warmer.request(first, 0)
    first.close()  # whether or not the thread got to it, nothing breaks
    assert warmer.caught_up.wait(5)
    second = MappedFile(tmp_path / "00000000000004194304", 4 * MIB, 8 * MIB, create=True)
    warmer.request(second, 3 * MIB + 123)
    assert warmer.file is second and warmer.caught_up.wait(5)
    assert warmer.warmed == 5 * MIB + OS_PAGE_SIZE
    assert 2 * 1024 <= mapped_kib(second) <= 2 * 1024 + 64  # from the page of the write position only
    second.close()


def test_a_flush_leaves_the_populated_pages_past_the_data_alone(tmp_path, warmer) -> None:
    """Populated pages are dirty: a flush of the whole file would write them out as zeros, and again
    once their data comes. A flush syncs the written range only."""
    mf = MappedFile(tmp_path / "00000000000000000000", 0, 8 * MIB, create=True)
    warmer.request(mf, 0)
    assert warmer.caught_up.wait(5)
    populated = dirty_kib(mf)
    assert populated >= 2 * 1024
    mf.mm[0:10] = b"x" * 10
    mf.wrote = 10
    assert mf.flush() == 10
    assert dirty_kib(mf) == populated - OS_PAGE_SIZE // 1024, "only the data's page was written back"
    mf.wrote = 4 * MIB  # the appends reach the populated pages: the next flush writes them, once
    mf.flush()
    assert dirty_kib(mf) == 0
    mf.close()


def test_a_failed_call_stops_the_warmer_and_the_appender_asks_no_more(tmp_path) -> None:
    calls = []

    def refusing(addr: int, length: int, advice: int) -> int:
        calls.append((addr % OS_PAGE_SIZE, length, advice))
        return -1

    w = MappedFileWarmer(refusing, lead=MIB, chunk=MIB)
    w.start()
    mf = MappedFile(tmp_path / "00000000000000000000", 0, 4 * MIB, create=True)
    w.request(mf, 0)
    assert w.caught_up.wait(5)
    w.stop()
    assert calls == [(0, MIB, 23)] and w.due == sys.maxsize
    mf.close()


async def test_the_store_warms_unless_warm_maped_file_enable_is_false(tmp_path) -> None:
    from unit.store.store_helpers import inner, tiny_config

    from mqtools.server.store.config import MessageStoreConfig
    from mqtools.server.store.message_store import MessageStore

    assert MessageStoreConfig.from_properties({}).warm_mapped_file_enable is True
    assert MessageStoreConfig.from_properties({"warmMapedFileEnable": "false"}).warm_mapped_file_enable is False
    for enabled in (False, True):
        store = MessageStore(tiny_config(tmp_path / str(enabled), mapped_file_size_commit_log=MIB,
                                         warm_mapped_file_enable=enabled))
        await store.start()
        assert (await store.put_message(inner())).ok
        warmer = store.commitlog.warmer
        assert (warmer is not None) is enabled
        if warmer is not None:
            assert warmer.caught_up.wait(5) and warmer.warmed == MIB  # the window is capped by the file
        await store.shutdown()
        assert store.commitlog.warmer is None


async def test_a_slaves_replicated_appends_are_warmed_ahead_as_a_masters_are(tmp_path) -> None:
    """A slave writes through append_to_commit_log, not the put path: without the warmer there, every page it
    writes is faulted in (allocated and zeroed) on its event loop."""
    from unit.store.store_helpers import inner, tiny_config

    from mqtools.server.store.message_store import MessageStore

    master = MessageStore(tiny_config(tmp_path / "m", mapped_file_size_commit_log=4 * MIB, warm_mapped_file_enable=False))
    slave = MessageStore(tiny_config(tmp_path / "s", mapped_file_size_commit_log=4 * MIB, broker_role="SLAVE"))
    await master.start()
    await slave.start()
    assert (await master.put_message(inner())).ok
    warmer = slave.commitlog.warmer
    assert warmer is not None and warmer.file is None
    assert slave.append_to_commit_log(0, bytes(master.get_commit_log_data(0)))
    assert warmer.file is slave.commitlog.queue.files[0] and warmer.caught_up.wait(5)
    assert warmer.warmed == 4 * MIB and mapped_kib(warmer.file) >= 4 * 1024 - 64
    await slave.shutdown()
    await master.shutdown()
