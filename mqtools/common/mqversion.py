"""RocketMQ's client version numbers (MQVersion.Version ordinals) and the names mqadmin prints for them.

A client announces its version as the ordinal of Java's `MQVersion.Version` enum (V4_9_7 is 407);
operators read the name. The enum's order is regular enough to rebuild it instead of listing 600 names.
"""

from __future__ import annotations

from functools import cache


@cache
def _names() -> tuple[str, ...]:
    names = ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1", *(f"V3_0_0_BETA{i}" for i in range(1, 6))]
    names += [n for i in range(6, 10) for n in (f"V3_0_0_BETA{i}_SNAPSHOT", f"V3_0_0_BETA{i}")]
    names.append("V3_0_0_FINAL")
    releases = [(3, 0, p) for p in range(1, 16)] + [(3, m, p) for m in (1, 2) for p in range(10)]
    releases += [(3, m, p) for m in range(3, 10) for p in range(1, 10)]
    releases += [(major, m, p) for major in (4, 5) for m in range(10) for p in range(10)]
    for major, minor, patch in releases:
        names += [f"V{major}_{minor}_{patch}_SNAPSHOT", f"V{major}_{minor}_{patch}"]
    names.append("HIGHER_VERSION")
    return tuple(names)


def version_desc(ordinal: int) -> str:
    """MQVersion.getVersionDesc: the enum name, HIGHER_VERSION past the end."""
    names = _names()
    return names[min(max(ordinal, 0), len(names) - 1)]


def version_ordinal(text: str) -> int | None:
    """The ordinal of a version given by name (`V5_0_8`, as MQVersion.Version.valueOf takes it) or as a release
    (`5.0.8`, what RocketMQ 5's gRPC clients send); None for anything else."""
    name = text.strip().upper()
    if name and name[0].isdigit():
        name = "V" + name.replace(".", "_").replace("-", "_")
    try:
        return _names().index(name)
    except ValueError:
        return None
