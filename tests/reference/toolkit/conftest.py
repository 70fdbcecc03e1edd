"""Fixtures of the toolkit tests: the world on both sides of `pair_2m2s`, and Apache's mqadmin in one JVM."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mqadminbatch import MqadminBatch
from tkworld import World, make_world


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


@pytest.fixture(scope="session")
def mqadmin(ref_root: Path) -> Iterator[MqadminBatch]:
    """Apache's mqadmin 4.9.8, every command in one JVM."""
    batch = MqadminBatch(ref_root)
    yield batch
    batch.close()


@pytest.fixture(scope="session")
def mqadmin5(ref_root: Path) -> Iterator[MqadminBatch]:
    """Apache's mqadmin 5.5.0, whose layout mq's mqadmin dialect follows."""
    batch = MqadminBatch(ref_root, "harness-5")
    yield batch
    batch.close()
