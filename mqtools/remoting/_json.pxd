# cython: language_level=3
"""A JSON header's pieces as the compiled readers take them (_cframe's commands, _csend's records of a front worker):
the usual forms only, each reader leaving anything else (a fraction, a bad escape, bytes that are not UTF-8) to a
full JSON parser, which also names the fault."""

from libc.stdint cimport int64_t
from libc.string cimport memcmp


cdef extern from "Python.h":
    object PyUnicode_DecodeUTF8(const char *s, Py_ssize_t size, const char *errors)


cdef inline Py_ssize_t json_ws(const unsigned char *p, Py_ssize_t i, Py_ssize_t n) noexcept nogil:
    while i < n and (p[i] == 32 or p[i] == 10 or p[i] == 13 or p[i] == 9):
        i += 1
    return i


cdef inline int json_hex(unsigned char c) noexcept nogil:
    if 48 <= c <= 57:
        return c - 48
    if 65 <= c <= 70:
        return c - 55
    if 97 <= c <= 102:
        return c - 87
    return -1


cdef inline object json_unescape(const unsigned char *q, Py_ssize_t m):
    """A JSON string's text with escapes (UTF-8 out never longer than the escaped form); None for one this reader
    leaves to orjson (a surrogate, a bad escape, bytes that are not UTF-8)."""
    cdef bytearray out = bytearray(m)
    cdef unsigned char *o = out
    cdef Py_ssize_t i = 0, k = 0
    cdef int cp, d, j
    cdef unsigned char e
    while i < m:
        if q[i] != 92:
            o[k] = q[i]
            k += 1
            i += 1
            continue
        if i + 1 >= m:
            return None
        e = q[i + 1]
        if e == 117:  # \uXXXX
            if i + 6 > m:
                return None
            cp = 0
            for j in range(2, 6):
                d = json_hex(q[i + j])
                if d < 0:
                    return None
                cp = cp * 16 + d
            if 0xD800 <= cp <= 0xDFFF:
                return None
            if cp < 0x80:
                o[k] = cp
                k += 1
            elif cp < 0x800:
                o[k], o[k + 1] = 0xC0 | (cp >> 6), 0x80 | (cp & 0x3F)
                k += 2
            else:
                o[k], o[k + 1], o[k + 2] = 0xE0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F)
                k += 3
            i += 6
            continue
        if e == 34 or e == 92 or e == 47:
            o[k] = e
        elif e == 98:
            o[k] = 8
        elif e == 102:
            o[k] = 12
        elif e == 110:
            o[k] = 10
        elif e == 114:
            o[k] = 13
        elif e == 116:
            o[k] = 9
        else:
            return None
        k += 1
        i += 2
    try:
        return PyUnicode_DecodeUTF8(<const char *>o, k, NULL)
    except UnicodeDecodeError:
        return None


cdef inline object json_string(const unsigned char *p, Py_ssize_t *pos, Py_ssize_t n):
    """The JSON string whose opening quote is at p[pos], pos moved past its closing one; None for one this
    reader leaves to a full JSON parser (a raw control character, or as _unescape)."""
    cdef Py_ssize_t i = pos[0] + 1, start = i
    cdef bint escaped = False
    while i < n and p[i] != 34:
        if p[i] == 92:
            escaped = True
            i += 2
            continue
        if p[i] < 32:
            return None
        i += 1
    if i >= n:
        return None
    pos[0] = i + 1
    if escaped:
        return json_unescape(p + start, i - start)
    try:
        return PyUnicode_DecodeUTF8(<const char *>p + start, i - start, NULL)
    except UnicodeDecodeError:
        return None


cdef inline bint json_int(const unsigned char *p, Py_ssize_t *pos, Py_ssize_t n, int64_t *out) noexcept nogil:
    """A JSON integer of at most 18 digits at p[pos] (pos moved past it); False for anything else (a fraction,
    an exponent, a leading zero, a longer one: a full parser's)."""
    cdef Py_ssize_t i = pos[0], first
    cdef bint negative = i < n and p[i] == 45
    cdef int64_t value = 0
    if negative:
        i += 1
    first = i
    while i < n and 48 <= p[i] <= 57 and i - first < 18:
        value = value * 10 + (p[i] - 48)
        i += 1
    if i == first or i < n and (48 <= p[i] <= 57 or p[i] == 46 or p[i] == 101 or p[i] == 69) \
            or p[first] == 48 and i - first > 1:
        return False
    pos[0] = i
    out[0] = -value if negative else value
    return True


cdef inline bint json_key(const unsigned char *p, Py_ssize_t at, Py_ssize_t length, const char *name,
                      Py_ssize_t name_len) noexcept nogil:
    return length == name_len and memcmp(p + at, name, length) == 0


cdef inline Py_ssize_t json_plain_string(const unsigned char *p, Py_ssize_t i, Py_ssize_t n,
                                         bint *escaped) noexcept nogil:
    """The end (past its closing quote) of the JSON string whose opening quote is at p[i], checked without being
    made: ASCII characters and JSON's escapes (a \\u one of four hex digits); -1 for any other (a raw control
    character or byte past ASCII, another escape, no closing quote). `escaped`: it holds an escape."""
    cdef unsigned char c
    cdef int j
    i += 1
    escaped[0] = False
    while i < n:
        c = p[i]
        if c == 34:
            return i + 1
        if c == 92:
            escaped[0] = True
            if i + 1 >= n:
                return -1
            c = p[i + 1]
            if c == 117:
                if i + 6 > n:
                    return -1
                for j in range(2, 6):
                    if json_hex(p[i + j]) < 0:
                        return -1
                i += 6
            elif c == 34 or c == 92 or c == 47 or c == 98 or c == 102 or c == 110 or c == 114 or c == 116:
                i += 2
            else:
                return -1
        elif c < 32 or c > 126:
            return -1
        else:
            i += 1
    return -1
