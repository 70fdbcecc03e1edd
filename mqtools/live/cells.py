"""The cells and notes every live view builds from: a figure or n/a, blanks, how stale a slot's figures are."""

from __future__ import annotations

from typing import Any

from mqtools.live.state import Slot
from mqtools.live.tables import NA, OK, Cell, age


def since(slot: Slot, mono: float) -> float:
    """ms since the slot's value was read."""
    return 0.0 if slot.ok_mono is None else max(0.0, (mono - slot.ok_mono) * 1000)


def stale_note(what: str, slot: Slot, mono: float) -> list[str]:
    if not slot.stale:
        return []
    held = f"; figures from {age(since(slot, mono))} ago" if slot.ok_mono is not None else ""
    return [f"{what}: {slot.error}{held}"]


def cell(value: Any, fmt: Any = None, level: int = OK) -> Cell:
    """A figure formatted by `fmt`, or n/a."""
    if value is None:
        return Cell(None, NA, level)
    return Cell(value, fmt(value) if fmt else str(value), level)


def blank(n: int) -> list[Cell]:
    return [Cell(None, NA) for _ in range(n)]
