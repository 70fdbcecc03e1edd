"""Topic/broker permission bits (RocketMQ PermName)."""

from __future__ import annotations

PERM_PRIORITY = 0x8
PERM_READ = 0x4
PERM_WRITE = 0x2
PERM_INHERIT = 0x1
PERM_RW = PERM_READ | PERM_WRITE
PERM_BY_NAME = {"rw": PERM_RW, "r": PERM_READ, "w": PERM_WRITE, "6": PERM_RW, "4": PERM_READ, "2": PERM_WRITE}
"""The spellings a tool accepts for a topic's permission: rw/r/w, or mqadmin's 6/4/2."""


def is_readable(perm: int) -> bool:
    return bool(perm & PERM_READ)


def is_writeable(perm: int) -> bool:
    return bool(perm & PERM_WRITE)


def is_inherited(perm: int) -> bool:
    return bool(perm & PERM_INHERIT)


def perm_to_string(perm: int) -> str:
    """'RW-', 'R--' ... as mqadmin prints permissions."""
    return ("R" if is_readable(perm) else "-") + ("W" if is_writeable(perm) else "-") + (
        "X" if is_inherited(perm) else "-"
    )

#: Every permission bit set: a topic's perm outside [0, PERM_MAX] is not a permission.
PERM_MAX = PERM_PRIORITY | PERM_RW | PERM_INHERIT
