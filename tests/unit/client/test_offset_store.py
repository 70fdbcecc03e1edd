"""LocalOffsetStore (broadcasting): atomic, ordered writes of the offset file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson

from mqtools.client.offset_store import LocalOffsetStore
from mqtools.remoting.bodies import MessageQueue

MQ = MessageQueue("T", "broker-a", 0)


def saved(path: Path) -> dict[str, int]:
    return orjson.loads(path.read_bytes())["offsetTable"]


async def test_round_trip_through_a_new_store(tmp_path: Path) -> None:
    path = tmp_path / "c" / "g" / "offsets.json"
    store = LocalOffsetStore(path)
    store.update(MQ, 7)
    await store.persist([MQ])
    again = LocalOffsetStore(path)
    assert await again.read(MQ) == 7 and again.table[MQ] == 7
    assert not list(path.parent.glob("*.tmp"))


def test_an_older_table_never_replaces_a_newer_one(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    store = LocalOffsetStore(path)
    store._write(2, orjson.dumps({"offsetTable": {"k": 2}}))
    store._write(1, orjson.dumps({"offsetTable": {"k": 1}}))
    assert saved(path) == {"k": 2}


async def test_a_persist_cancelled_at_shutdown_does_not_race_the_final_one(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    store = LocalOffsetStore(path)
    for i in range(50):
        store.update(MQ, i)
        task = asyncio.create_task(store.persist([MQ]))
        await asyncio.sleep(0)
        task.cancel()
        store.update(MQ, i + 1000)
        await store.persist([MQ])
    await asyncio.sleep(0.2)  # let any cancelled write's thread finish
    assert saved(path) == {"T@broker-a@0": 1049}
