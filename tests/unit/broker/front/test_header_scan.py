"""A front worker reads a send's JSON header in place (front/_csplit.pyx's _scanned_record): for every header, the record it
makes is the one the command's reading makes (or it leaves the header to that reading), byte for byte. Headers as
our clients, Java's fastjson and the C++ client write them, and 3,000 random variations of their forms: key order,
spaces, escapes, extra fields, numbers as text of every shape, non-ASCII text, repeated keys."""

from __future__ import annotations

import json
import random
import struct

import pytest

from mqtools.server.broker.front.send_record import _compiled

SPLIT = _compiled()
pytestmark = pytest.mark.skipif(SPLIT is None, reason="the compiled splitter is not built here")

MAX_FRAME = 16 * 1024 * 1024
CLUSTER = "C1"
BASE_EXT = {"a": "PG", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "3", "f": "0", "g": "1796512653752",
            "h": "0", "i": "UNIQ_KEY\x017F0000014\x02WAIT\x01true\x02TAGS\x01tagA\x02KEYS\x01k1 k2\x02"}


def frame(header: bytes, body: bytes = b"hello") -> bytes:
    return struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body


def both(header: bytes, body: bytes = b"hello") -> tuple[object, bytes | None]:
    """(the scan's record, None or NotImplemented; the command's reading's record or None)."""
    f = frame(header, body)
    return SPLIT.scan_record(f, CLUSTER), SPLIT.command_record(f, MAX_FRAME, CLUSTER)


def header_of(ext: dict, *, fields: list[tuple[str, object]] | None = None, sep: tuple[str, str] = (",", ":"),
              ascii_only: bool = True) -> bytes:
    """A header whose first field is code 310 (what the worker looks at at all), the rest in the given order."""
    rest = fields if fields is not None else [("language", "PYTHON"), ("version", 407), ("opaque", 9), ("flag", 0),
                                              ("serializeTypeCurrentRPC", "JSON"), ("extFields", ext)]
    inner = sep[0].join(f"{json.dumps(k)}{sep[1]}{json.dumps(v, separators=sep, ensure_ascii=ascii_only)}"
                        for k, v in rest)
    return ('{"code":310,' + inner + "}").encode("utf-8", "surrogatepass")  # a lone surrogate: bytes that are not UTF-8


@pytest.mark.parametrize("header", [
    header_of(BASE_EXT),
    # fastjson's order (Java): names sorted, the extFields in the map's order
    header_of(BASE_EXT, fields=[("extFields", BASE_EXT), ("flag", 0), ("language", "JAVA"), ("opaque", 7),
                                ("serializeTypeCurrentRPC", "JSON"), ("version", 453)]),
    header_of(BASE_EXT, fields=[("language", "CPP"), ("version", 401), ("opaque", 1), ("flag", 0), ("remark", None),
                                ("serializeTypeCurrentRPC", "JSON"), ("extFields", BASE_EXT)]),
    header_of(BASE_EXT, sep=(", ", ": ")),
    header_of({**BASE_EXT, "bname": "broker-a", "lo": "false", "j": "2", "k": "false", "m": "false"}),
], ids=["ours", "java", "cpp", "spaced", "5.x extras"])
def test_the_usual_headers_are_read_in_place_into_the_same_record(header: bytes) -> None:
    scanned, reference = both(header)
    assert reference is not None and scanned == reference  # made by the scan, not left to the command


def test_a_second_code_decides_and_only_a_send_is_recorded() -> None:
    base = header_of(BASE_EXT)
    again = base[:-1] + b',"code":310}'
    scanned, reference = both(again)
    assert reference is not None and scanned == reference
    other = base[:-1] + b',"code":311}'  # the last code is the request's: not a send, relayed as its frame
    scanned, reference = both(other)
    assert scanned is NotImplemented and reference is None


def _variant(rng: random.Random) -> bytes:
    ext = dict(BASE_EXT)
    numbers = ["0", "7", "-1", "2147483647", "2147483648", "-2147483649", "+5", " 5", "05", "1e3", "", "-", "x",
               "123456789012345678", "1234567890123456789", "٣"]
    for key in rng.sample("defghj", rng.randint(0, 3)):
        ext[key] = rng.choice(numbers)
    if rng.random() < 0.2:
        ext.pop(rng.choice("abcdefghij"), None)
    if rng.random() < 0.1:
        ext["l"] = "16"
    if rng.random() < 0.3:
        ext["i"] = rng.choice(["", "WAIT\x01false\x02", "KEYS\x01caf\u00e9\x02", "DELAY\x013\x02", "A\x01\"q\"\\/\x02",
                               "TAGS\x01\ud800\x02", "TAGS\x01t\x02TAGS\x01u\x02", "UNIQ_KEY\x01u\x02CLUSTER\x01x\x02"])
    if rng.random() < 0.2:
        ext["b"] = rng.choice(["T\u00e9", "T/x", "", "T\"q"])
    if rng.random() < 0.2:
        ext[rng.choice(["bname", "zz", "n", "x"])] = rng.choice(["v", "w\u00e9", "\t"])
    fields: list[tuple[str, object]] = [("language", rng.choice(["JAVA", "PYTHON", "CPP", "GO", "KLINGON"])),
                                        ("version", rng.choice([407, 0, -1])),
                                        ("opaque", rng.choice([1, 2147483647, -5, 2147483648])),
                                        ("flag", rng.choice([0, 0, 2, 1, 3])),
                                        ("serializeTypeCurrentRPC", "JSON"),
                                        ("remark", rng.choice([None, "r", "\u00e9"])),
                                        ("extFields", ext)]
    if rng.random() < 0.3:
        fields.pop(rng.randrange(len(fields)))
    rng.shuffle(fields)
    if rng.random() < 0.1:
        fields.append(rng.choice(fields))
    if rng.random() < 0.05:
        fields.append(("code", rng.choice([310, 311])))
    header = header_of(ext, fields=fields, sep=rng.choice([(",", ":"), (", ", ": "), (" ,", " : ")]),
                       ascii_only=rng.random() < 0.7)
    if rng.random() < 0.1:  # a fraction, an exponent, a leading zero or a bad escape somewhere
        header = header.replace(b'"version":407', rng.choice([b'"version":4.07', b'"version":4e2', b'"version":0407']))
        header = header.replace(b"\\u0001", rng.choice([b"\\u0001", b"\\x01", b"\\u00zz"]), 1)
    if rng.random() < 0.05:
        header += rng.choice([b" ", b"x", b"}"])
    return header


def test_every_form_of_header_gives_the_command_readings_record() -> None:
    rng = random.Random(46)
    made = left = 0
    for _ in range(3000):
        header = _variant(rng)
        scanned, reference = both(header, rng.choice([b"", b"body", bytes(range(256)) * 4]))
        if scanned is NotImplemented:
            left += 1
        else:
            assert scanned == reference, header
            made += reference is not None
    assert made > 150 and left > 150, (made, left)  # both ways well represented among the variants
