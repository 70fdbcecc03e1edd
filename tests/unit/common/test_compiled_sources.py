"""The compiled modules' sources keep the promise their directives make.

A module compiled with ``wraparound=False`` reads ``items[-1]`` of a Python list as the item before the list's
first: no IndexError, a read out of bounds and, at best, a segmentation fault (stop 73's first build of the
compiled put crashed so in test_cput). Negative subscripts are written ``items[len(items) - 1]`` there.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SOURCES = sorted((ROOT / "mqtools").rglob("*.pyx"))
#: A subscript or slice bound that is a negative literal: x[-1], x[a:-2], x[ - 3].
NEGATIVE = re.compile(r"\[\s*-\s*\d|:\s*-\s*\d[^\]]*\]")
#: A comment: "#" at the start of a line or after two spaces (string literals in these modules hold no such "#").
COMMENT = re.compile(r"(^|\s{2})#.*$")


def test_there_are_compiled_sources_to_check() -> None:
    assert len(SOURCES) >= 5, SOURCES


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_no_negative_subscript_where_wraparound_is_off(source: Path) -> None:
    text = source.read_text()
    if "wraparound=False" not in text.splitlines()[0]:
        return
    found = [f"{source.name}:{number}: {line.strip()}" for number, line in enumerate(text.splitlines(), 1)
             if NEGATIVE.search(COMMENT.sub("", line))]
    assert not found, "negative subscripts in a module compiled with wraparound=False:\n" + "\n".join(found)


def test_the_check_finds_what_it_looks_for() -> None:
    """The patterns match the forms that crash and leave comments and ordinary arithmetic alone."""
    for line in ("mf = files[-1]", "tail = raw[:-1]", "x = a[b : -2]", "y = v[ - 1]"):
        assert NEGATIVE.search(COMMENT.sub("", line)), line
    for line in ("mf = files[len(files) - 1]  # not [-1]: wraparound=False", "n = size - 1", "p[i - 1] = 0",
                 "out = buf[hend:end]"):
        assert not NEGATIVE.search(COMMENT.sub("", line)), line
