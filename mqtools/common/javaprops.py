"""java.util.Properties text, the format of broker/name-server config files and config bodies."""

from __future__ import annotations


def parse_properties(text: str) -> dict[str, str]:
    """java.util.Properties.load for the forms config files use.

    Comments (# !), `key=value`, `key: value`, `key value`, backslash line
    continuations and the usual escapes (\\t \\n \\uXXXX ...).
    """
    out: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_pair(line)
        out[_unescape(key)] = _unescape(value)
    return out


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        stripped = raw.lstrip(" \t\f")
        if not pending and (not stripped or stripped[0] in "#!"):
            continue
        pending += stripped
        trailing = len(pending) - len(pending.rstrip("\\"))
        if trailing % 2 == 1:
            pending = pending[:-1]
            continue
        lines.append(pending)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def _split_pair(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and i + 6 <= len(text):
            try:
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            except ValueError:
                pass
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def render_properties(props: dict[str, str]) -> str:
    """`key=value` lines, as RocketMQ's MixAll.properties2String writes them."""
    return "".join(f"{k}={v}\n" for k, v in props.items())
