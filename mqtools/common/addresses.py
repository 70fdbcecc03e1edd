"""host:port addresses and RocketMQ's 'h1:9876;h2:9876' name-server lists, checked before use."""

from __future__ import annotations


def parse_addr(addr: str) -> tuple[str, int]:
    host, sep, port = addr.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"invalid address {addr!r}: expected host:port")
    return host.strip("[]"), int(port)


def parse_namesrv_list(value: str) -> list[str]:
    """'h1:9876;h2:9876' -> ['h1:9876', 'h2:9876'], refusing anything malformed."""
    addrs = [a.strip() for a in value.split(";") if a.strip()]
    if not addrs:
        raise ValueError(f"invalid name server address list {value!r}: expected 'host:port;host:port'")
    for addr in addrs:
        try:
            parse_addr(addr)
        except ValueError:
            raise ValueError(
                f"invalid name server address {addr!r} in {value!r}: expected 'host:port;host:port'"
            ) from None
    return addrs
