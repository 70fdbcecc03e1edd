"""Fixtures of the toolkit tests: the world on both sides of `pair_2m2s`, and Apache's mqadmin in one JVM."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mqadminbatch import MqadminBatch
from tkworld import World, make_world


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Here, tests that kill processes of the shared 2m-2s clusters (marked `faults`) run after the
    others, which read the world as it was made; then the modules with worlds of their own (Apache 5.5.0's),
    which so run after the 2m-2s clusters have ended (support/session_fixtures.py) rather than beside their
    nine idle processes. The rest of the session keeps its order."""
    here = Path(__file__).parent
    mine = [i for i, item in enumerate(items) if here in item.path.parents]

    def key(item: pytest.Item) -> tuple[bool, bool]:
        shared = "clusters_2m2s" in getattr(item, "fixturenames", ())
        return not shared, shared and item.get_closest_marker("faults") is not None

    ordered = sorted((items[i] for i in mine), key=key)
    for i, item in zip(mine, ordered, strict=True):
        items[i] = item


@pytest.fixture(scope="session")
def worlds(pair_2m2s: dict[str, str]) -> Iterator[dict[str, World]]:
    """The world on each side, Apache's first."""
    made: dict[str, World] = {}
    try:
        for side, namesrv in pair_2m2s.items():
            made[side] = make_world(side, namesrv)
        yield made
    finally:
        for world in made.values():
            world.consumer.close()


@pytest.fixture
def mqadmin(ref_root: Path) -> Iterator[MqadminBatch]:
    """Apache's mqadmin 4.9.8, a test's commands in one JVM, for Apache's cluster (a JVM per test and
    side: see MqadminBatch.java)."""
    with MqadminBatch(ref_root) as batch:
        yield batch


@pytest.fixture
def mqadmin_on_mq(ref_root: Path) -> Iterator[MqadminBatch]:
    """Apache's mqadmin 4.9.8 in a JVM of its own, for mq's cluster."""
    with MqadminBatch(ref_root) as batch:
        yield batch


@pytest.fixture
def mqadmin5(ref_root: Path) -> Iterator[MqadminBatch]:
    """Apache's mqadmin 5.5.0, whose layout mq's mqadmin dialect follows."""
    with MqadminBatch(ref_root, "harness-5") as batch:
        yield batch
