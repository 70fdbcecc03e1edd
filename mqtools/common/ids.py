"""Message ids: the offset id (store host + commitlog offset) and the client unique key."""

from __future__ import annotations

import ipaddress
import itertools
import os
import struct
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import lru_cache

from mqtools.common import speedups
from mqtools.common.message import Host


@lru_cache(maxsize=4096)
def host_address_bytes(host: str) -> bytes:
    """4 bytes for an IPv4 address, 16 for IPv6 (names are not resolved: the caller passes IPs)."""
    return ipaddress.ip_address(host.strip("[]")).packed


def host_bytes(host: Host) -> bytes:
    """Address + 4-byte port, the layout of BORNHOST / STOREHOSTADDRESS."""
    return host_address_bytes(host[0]) + struct.pack(">i", host[1])


_U64 = 0xFFFFFFFFFFFFFFFF
"""A commitlog offset is written as Java's long: 16 hex digits of its 64 bits."""


@lru_cache(maxsize=256)
def offset_id_prefix(host: Host) -> str:
    """The store host part of an offset message id: its address and port in upper-case hex."""
    return host_bytes(host).hex().upper()


def create_offset_msg_id(host: Host, commit_log_offset: int) -> str:
    """32 hex chars for an IPv4 store host (56 for IPv6), upper case as RocketMQ prints it."""
    return f"{offset_id_prefix(host)}{commit_log_offset & _U64:016X}"


def create_offset_msg_ids(host: Host, commit_log_offsets: Iterable[int]) -> list[str]:
    """create_offset_msg_id of each offset of one store host (a batch's answer), the host formatted once."""
    prefix = offset_id_prefix(host)
    return [f"{prefix}{offset & _U64:016X}" for offset in commit_log_offsets]


def decode_offset_msg_id(msg_id: str) -> tuple[Host, int]:
    """Inverse of create_offset_msg_id: ((ip, port), commitlog offset). ValueError if malformed."""
    raw = bytes.fromhex(msg_id)
    if len(raw) not in (16, 28):
        raise ValueError(f"not an offset message id: {msg_id!r}")
    addr = ipaddress.ip_address(raw[:-12])
    port, offset = struct.unpack(">iq", raw[-12:])
    if not 0 < port < 65536 or offset < 0:  # a client msgId (UNIQ_KEY) read as an offset msgId
        raise ValueError(f"not an offset message id: {msg_id!r} (port {port}, offset {offset})")
    return (str(addr), port), offset


def is_offset_msg_id(msg_id: str) -> bool:
    """Whether `msg_id` names its storing broker (an offset msgId), so it can be read without its topic."""
    try:
        decode_offset_msg_id(msg_id)
    except ValueError:
        return False
    return True


def _month_start_ms(now_s: float) -> int:
    d = datetime.fromtimestamp(now_s)
    return int(d.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp() * 1000)


class UniqueKeyGenerator:
    """Client-side unique keys (UNIQ_KEY): ip(4) + pid(2) + loader hash(4) + ms since month start(4)
    + counter(2), hex upper. The "class-loader hash" slot carries a per-generator random value."""

    def __init__(self, ip: str = "127.0.0.1", *, clock: Callable[[], float] = time.time,
                 pid: int | None = None) -> None:
        addr = host_address_bytes(ip)
        self._fixed = (addr + struct.pack(">H", (pid if pid is not None else os.getpid()) & 0xFFFF)
                       + os.urandom(4)).hex().upper()
        self._clock = clock
        self._counter = itertools.count()
        self._month_start = 0
        self._next_month = 0
        self._last_ms = -1
        self._prefix = ""
        """Everything but the counter, for the millisecond ``_last_ms``: a busy producer makes many
        keys per millisecond, and formatting only the counter halves the cost of a key."""

    def next(self) -> str:
        now = self._clock()
        now_ms = int(now * 1000)
        if now_ms != self._last_ms:
            if now_ms >= self._next_month or now_ms < self._month_start:
                self._month_start = _month_start_ms(now)
                self._next_month = _month_start_ms(self._month_start / 1000 + 32 * 86400)
            self._prefix = self._fixed + f"{(now_ms - self._month_start) & 0xFFFFFFFF:08X}"
            self._last_ms = now_ms
        return self._prefix + f"{next(self._counter) & 0xFFFF:04X}"


_compiled = speedups.compiled()
if _compiled is not None:
    create_offset_msg_ids = _compiled.create_offset_msg_ids
