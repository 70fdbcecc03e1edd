"""Java's ``String.hashCode`` and the consume-queue tag code derived from it.

RocketMQ stores the Java hash of the TAGS property as each consume-queue unit's tag code and
hashes index keys the same way, so both must match the JVM bit for bit: ``h = 31*h + c`` over
UTF-16 code units, wrapped to a signed 32-bit int.
"""

from __future__ import annotations

import sys
from array import array
from functools import lru_cache
from operator import mul

_MASK = 0xFFFFFFFF


@lru_cache(maxsize=512)
def _powers(n: int) -> tuple[int, ...]:
    """31**(n-1-i) mod 2**32 for i in range(n): the weight of each code unit in a length-n hash."""
    out = [1] * n
    for i in range(n - 2, -1, -1):
        out[i] = (out[i + 1] * 31) & _MASK
    return tuple(out)


def _code_units(s: str) -> bytes | array:
    if s.isascii():
        return s.encode("ascii")
    units = array("H", s.encode("utf-16-le"))
    if sys.byteorder == "big":
        units.byteswap()
    return units


def java_hash(s: str) -> int:
    """Java ``String.hashCode()`` as a signed 32-bit int ("" -> 0).

    The polynomial is evaluated as one dot product with cached weights, which runs in C
    (``sum(map(mul, ...))``) instead of a per-character Python loop.
    """
    if not s:
        return 0
    units = _code_units(s)
    h = sum(map(mul, units, _powers(len(units)))) & _MASK
    return h - 0x100000000 if h & 0x80000000 else h


@lru_cache(maxsize=4096)
def _cached_hash(s: str) -> int:
    return java_hash(s)


def tags_code(tags: str | None) -> int:
    """The consume-queue tag code of a message: Java hash of the whole TAGS value, 0 without tags.
    Tag values repeat across messages, so results are cached."""
    return _cached_hash(tags) if tags else 0


def index_key_hash(key: str) -> int:
    """The index file's key hash: ``abs(hashCode)``, with Integer.MIN_VALUE mapped to 0."""
    h = java_hash(key)
    return 0 if h == -0x80000000 else abs(h)


@lru_cache(maxsize=1024)
def _prefix_hash(prefix: str) -> int:
    return java_hash(prefix) & _MASK


def index_key_hash_parts(prefix: str, suffix: str) -> int:
    """index_key_hash(prefix + suffix) with the prefix's hash cached (index keys are
    ``topic#key``: the topic part repeats). Uses h(a+b) = h(a)*31**len(b) + h(b) mod 2**32."""
    if suffix.isascii():
        units: bytes | array = suffix.encode("ascii")
    else:
        units = _code_units(suffix)
    n = len(units)
    h = (_prefix_hash(prefix) * _pow31(n) + sum(map(mul, units, _powers(n)))) & _MASK
    if h & 0x80000000:
        h -= 0x100000000
    return 0 if h == -0x80000000 else abs(h)


@lru_cache(maxsize=512)
def _pow31(n: int) -> int:
    return pow(31, n, 1 << 32)


def index_key_hashes(keys: list[tuple[str, str]]) -> list[int]:
    """index_key_hash(head + tail) for each (head, tail) of a batch, with each head's hash cached:
    the per-key work is one encode and one C-level dot product over the tail only. Heads are
    ``topic#`` for business keys and ``topic#`` plus the fixed part of a UNIQ_KEY (see
    ``uniq_key_split``), which repeats for every message of one producer."""
    out = []
    append = out.append
    for head, tail in keys:
        if not tail.isascii():
            append(index_key_hash_parts(head, tail))
            continue
        units = tail.encode("ascii")
        head_term, weights = _head_weights(head, len(units))
        h = (head_term + sum(map(mul, units, weights))) & _MASK
        if h & 0x80000000:
            h = 0 if h == 0x80000000 else 0x100000000 - h
        append(h)
    return out


@lru_cache(maxsize=1024)
def _head_weights(head: str, n: int) -> tuple[int, tuple[int, ...]]:
    """hash(head) * 31**n and the weights of an n-unit tail: one cache look-up per key."""
    return (_prefix_hash(head) * _pow31(n)) & _MASK, _powers(n)


#: The varying tail of a RocketMQ UNIQ_KEY: time since the month start (8 hex) and counter (4 hex);
#: the 20 hex digits before it (ip, pid, generator hash) are fixed for one producer process.
UNIQ_KEY_VARYING = 12


def uniq_key_split(prefix: str, uniq: str) -> tuple[str, str]:
    """(head, tail) of the index key ``prefix + uniq`` for index_key_hashes: the producer's fixed part
    goes into the cached head, so a message's uniq key costs a 12-character hash."""
    cut = len(uniq) - UNIQ_KEY_VARYING
    return (prefix + uniq[:cut], uniq[cut:]) if cut > 0 else (prefix, uniq)
