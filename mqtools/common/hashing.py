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
def cached_java_hash(s: str) -> int:
    """java_hash of a value that repeats from message to message (tags, topic names), computed once."""
    return java_hash(s)


def tags_code(tags: str | None) -> int:
    """The consume-queue tag code of a message: Java hash of the whole TAGS value, 0 without tags."""
    return cached_java_hash(tags) if tags else 0


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


@lru_cache(maxsize=1024)
def _head_weights(head: str, n: int) -> tuple[int, tuple[int, ...]]:
    """hash(head) * 31**n and the weights of an n-unit tail."""
    return (_prefix_hash(head) * _pow31(n)) & _MASK, _powers(n)


def index_key_hashes(prefix: str, keys: list[str], is_uniq: list[bool]) -> list[int]:
    """index_key_hash(prefix + k) for each key of a batch (one topic), in order; ``is_uniq`` marks
    UNIQ_KEYs. Per key one encode and one C-level dot product: ``prefix``'s hash is cached, and a
    UNIQ_KEY's producer-fixed part is hashed once into its head (it repeats for every message of a
    producer), so a UNIQ_KEY costs a UNIQ_KEY_VARYING-character hash."""
    out = []
    append = out.append
    weights: dict[int, tuple[int, tuple[int, ...]]] = {}
    fixed = None
    uniq_term, uniq_weights = 0, _powers(UNIQ_KEY_VARYING)
    for key, uniq in zip(keys, is_uniq):
        if not key.isascii():
            append(index_key_hash_parts(prefix, key))
            continue
        cut = len(key) - UNIQ_KEY_VARYING
        if uniq and cut > 0:
            if key[:cut] != fixed:
                fixed = key[:cut]
                uniq_term = _head_weights(prefix + fixed, UNIQ_KEY_VARYING)[0]
            h = (uniq_term + sum(map(mul, key[cut:].encode("ascii"), uniq_weights))) & _MASK
        else:
            hw = weights.get(len(key))
            if hw is None:
                hw = weights[len(key)] = _head_weights(prefix, len(key))
            h = (hw[0] + sum(map(mul, key.encode("ascii"), hw[1]))) & _MASK
        if h & 0x80000000:
            h = 0 if h == 0x80000000 else 0x100000000 - h
        append(h)
    return out


#: The varying tail of a RocketMQ UNIQ_KEY: time since the month start (8 hex) and counter (4 hex);
#: the 20 hex digits before it (ip, pid, generator hash) are fixed for one producer process.
UNIQ_KEY_VARYING = 12
