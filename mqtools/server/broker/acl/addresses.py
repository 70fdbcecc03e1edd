"""RocketMQ's white remote address patterns (RemoteAddressStrategyFactory), as a sans-IO matcher.

Accepted forms: blank (matches nothing), `*` / `*.*.*.*` (everything), one address (IPv4 or IPv6),
a comma list, `192.168.0.{1,2}`, and IPv4 octet ranges such as `192.168.1.1-10` or `192.168.*.*`
(all four octets, as Apache's AclUtils.verify demands: `192.168.*` is refused with its message). A
malformed pattern is a ValueError where the file or the admin request is read, never at request time.
IPv6 ranges are not supported (exact addresses are).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

Matcher = Callable[[str], bool]
_ANY = ("*", "*.*.*.*", "*:*:*:*:*:*:*:*")


def _canonical(address: str) -> str:
    """The form two spellings of one address share ('::1' and '0:0::1')."""
    try:
        return str(ipaddress.ip_address(address.strip()))
    except ValueError:
        return address.strip()


def _one(address: str) -> str:
    try:
        return str(ipaddress.ip_address(address.strip()))
    except ValueError:
        raise ValueError(f"not an IP address: {address!r}") from None


def _octet_rule(part: str, pattern: str) -> tuple[int, int]:
    part = part.strip()
    if part == "*":
        return 0, 255
    low, sep, high = part.partition("-")
    try:
        start, end = int(low), int(high) if sep else int(low)
    except ValueError:
        raise ValueError(f"bad address pattern {pattern!r}") from None
    if not (0 <= start <= end <= 255):
        raise ValueError(f"bad address range in {pattern!r}")
    return start, end


def _range(pattern: str) -> Matcher:
    parts = pattern.split(".")
    if ":" in pattern:
        raise ValueError(f"bad address pattern {pattern!r} (IPv6 ranges are not supported)")
    if len(parts) != 4:
        raise ValueError(f"Netaddress examine scope Exception netaddress is {pattern}")
    rules = [_octet_rule(p, pattern) for p in parts]

    def match(address: str) -> bool:
        octets = address.split(".")
        if len(octets) != 4 or not all(o.isdigit() for o in octets):
            return False
        return all(lo <= int(o) <= hi for o, (lo, hi) in zip(octets, rules, strict=True))

    return match


def matcher(pattern: str | None) -> Matcher:
    """The predicate for one pattern; `address` given to it is the peer's host (no port)."""
    text = (pattern or "").strip()
    if not text:
        return lambda _address: False
    if text in _ANY:
        return lambda _address: True
    if text.endswith("}"):
        head, brace, tail = text.rpartition("{")
        if not brace or not head.endswith((".", ":")):
            raise ValueError(f"bad address pattern {pattern!r}")
        allowed = {_one(head + item) for item in tail[:-1].split(",")}
        return lambda address: _canonical(address) in allowed
    if "," in text:
        allowed = {_one(item) for item in text.split(",")}
        return lambda address: _canonical(address) in allowed
    if "*" in text or "-" in text:
        return _range(text)
    single = _one(text)
    return lambda address: _canonical(address) == single


def host_of(peer: str) -> str:
    """'127.0.0.1:5555' -> '127.0.0.1' (RocketMQ cuts at the last colon, as here)."""
    host, sep, _port = peer.rpartition(":")
    return host if sep else peer
