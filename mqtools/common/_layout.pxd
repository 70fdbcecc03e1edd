# cython: language_level=3
"""The stored entry's layout for the compiled modules (_ccodec.pyx, spark/_columns.pyx): big-endian
reads and writes, and one check of an entry's fields, as codec.decode_stored makes it."""

from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

cdef enum:
    MAGIC_V1 = -626843481
    MAGIC_V2 = -626843477
    BLANK_MAGIC = -875286124
    FIXED_V4 = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4 + 2
    BORNHOST_V6_FLAG = 0x1 << 4
    STOREHOST_V6_FLAG = 0x1 << 5


cdef inline int32_t rd32(const unsigned char *p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3])


cdef inline int64_t rd64(const unsigned char *p) noexcept nogil:
    return <int64_t>((<uint64_t>(<uint32_t>rd32(p)) << 32) | <uint32_t>rd32(p + 4))


cdef inline int16_t rd16(const unsigned char *p) noexcept nogil:
    return <int16_t>((p[0] << 8) | p[1])


cdef inline void wr16(unsigned char *p, int64_t v) noexcept nogil:
    p[0] = (v >> 8) & 0xFF
    p[1] = v & 0xFF


cdef inline void wr32(unsigned char *p, int64_t v) noexcept nogil:
    p[0] = (v >> 24) & 0xFF
    p[1] = (v >> 16) & 0xFF
    p[2] = (v >> 8) & 0xFF
    p[3] = v & 0xFF


cdef inline void wr64(unsigned char *p, int64_t v) noexcept nogil:
    wr32(p, v >> 32)
    wr32(p + 4, v & <int64_t>0xFFFFFFFF)


cdef inline char *put_hex(char *dst, const unsigned char *src, Py_ssize_t n) noexcept nogil:
    """n bytes as 2n upper-case hex digits at `dst`, as RocketMQ prints offset message ids; the end."""
    cdef const char *digits = b"0123456789ABCDEF"
    cdef Py_ssize_t i
    for i in range(n):
        dst[2 * i] = digits[src[i] >> 4]
        dst[2 * i + 1] = digits[src[i] & 0xF]
    return dst + 2 * n


cdef inline char *put_decimal(char *dst, int64_t v) noexcept nogil:
    """v's decimal digits at `dst`, a '-' first when negative (printf's %lld); the end."""
    cdef char digits[20]
    cdef int n = 0
    cdef uint64_t u = <uint64_t>v
    if v < 0:
        dst[0] = 45  # '-'
        dst += 1
        u = (<uint64_t>0) - u
    while True:
        digits[n] = <char>(48 + u % 10)
        n += 1
        u = u // 10
        if u == 0:
            break
    while n > 0:
        n -= 1
        dst[0] = digits[n]
        dst += 1
    return dst


cdef inline unsigned char *put_host(unsigned char *dst, const unsigned char *ip, Py_ssize_t have, int n,
                                   int32_t port) noexcept nogil:
    """An address of n bytes (struct's "Ns": `have` bytes cut or zero-padded to n) and its port; the end."""
    memset(dst, 0, n)
    memcpy(dst, ip, have if have < n else n)
    wr32(dst + n, port)
    return dst + n + 4


cdef inline void write_entry(unsigned char *dst, int32_t total, uint32_t body_crc, int32_t queue_id, int32_t flag,
                             int64_t queue_offset, int64_t phys_offset, int32_t sys_flag, int64_t born_timestamp,
                             const unsigned char *born_ip, Py_ssize_t born_have, int32_t born_port,
                             int64_t store_timestamp, const unsigned char *store_ip, Py_ssize_t store_have,
                             int32_t store_port, int32_t reconsume_times, int64_t prepared_offset,
                             const unsigned char *body, Py_ssize_t blen, const char *topic, Py_ssize_t tlen,
                             const char *props, Py_ssize_t plen) noexcept nogil:
    """One whole entry at `dst` (codec.write_stored's layout; the caller checked that it fits, the topic and
    properties lengths, and computed BODYCRC): what the compiled writers of a single message share."""
    cdef int born_n = 16 if sys_flag & BORNHOST_V6_FLAG else 4
    cdef int store_n = 16 if sys_flag & STOREHOST_V6_FLAG else 4
    wr32(dst, total)
    wr32(dst + 4, MAGIC_V1 if tlen <= 127 else MAGIC_V2)
    wr32(dst + 8, body_crc)
    wr32(dst + 12, queue_id)
    wr32(dst + 16, flag)
    wr64(dst + 20, queue_offset)
    wr64(dst + 28, phys_offset)
    wr32(dst + 36, sys_flag)
    wr64(dst + 40, born_timestamp)
    dst = put_host(dst + 48, born_ip, born_have, born_n, born_port)
    wr64(dst, store_timestamp)
    dst = put_host(dst + 8, store_ip, store_have, store_n, store_port)
    wr32(dst, reconsume_times)
    wr64(dst + 4, prepared_offset)
    wr32(dst + 12, blen)
    dst += 16
    if blen:
        memcpy(dst, body, blen)
    dst += blen
    if tlen <= 127:
        dst[0] = tlen
        dst += 1
    else:
        wr16(dst, tlen)
        dst += 2
    memcpy(dst, topic, tlen)
    dst += tlen
    wr16(dst, plen)
    memcpy(dst + 2, props, plen)


cdef inline Py_ssize_t piece_end(const unsigned char *p, Py_ssize_t n, Py_ssize_t start,
                                 Py_ssize_t *sep) noexcept nogil:
    """The end (a \\x02, or n) of the properties piece at `start`; `sep` gets its first \\x01, or -1."""
    cdef Py_ssize_t i = start
    sep[0] = -1
    while i < n and p[i] != 2:
        if p[i] == 1 and sep[0] < 0:
            sep[0] = i
        i += 1
    return i


cdef struct Entry:
    int32_t total
    int32_t sys_flag
    int born_n
    int store_n
    Py_ssize_t body_at
    Py_ssize_t body_len
    Py_ssize_t topic_at
    Py_ssize_t topic_len
    Py_ssize_t props_at
    Py_ssize_t props_len


cdef inline object corrupt(str reason):
    from mqtools.common.codec import CorruptMessageError
    return CorruptMessageError(reason)


cdef inline int parse_entry(const unsigned char *e, Py_ssize_t avail, Entry *out) except -1:
    """Where an entry's fields are, every length checked against the entry and what is available."""
    if avail < 8:
        raise corrupt("truncated entry header")
    cdef int32_t total = rd32(e), magic = rd32(e + 4)
    if magic != MAGIC_V1 and magic != MAGIC_V2:
        raise corrupt(f"bad magic code {magic:#x}")
    if total < FIXED_V4 + 1 or total > avail:
        raise corrupt(f"entry size {total} out of range (available {avail})")
    cdef int32_t sys_flag = rd32(e + 36)
    cdef int born_n = 16 if sys_flag & BORNHOST_V6_FLAG else 4
    cdef int store_n = 16 if sys_flag & STOREHOST_V6_FLAG else 4
    cdef Py_ssize_t p = 48 + born_n + 4 + 8 + store_n + 4
    if p + 4 + 8 + 4 > total:
        raise corrupt("malformed entry: header past the entry end")
    cdef int32_t body_len = rd32(e + p + 12)
    p += 16
    cdef Py_ssize_t body_end = p + body_len, t, topic_len
    if body_len < 0 or body_end > total:
        raise corrupt(f"body length {body_len} out of range")
    if magic == MAGIC_V1:
        if body_end + 1 > total:
            raise corrupt("malformed entry: no topic length")
        topic_len = e[body_end]
        if topic_len > 127:
            raise corrupt("negative v1 topic length")
        t = body_end + 1
    else:
        if body_end + 2 > total:
            raise corrupt("malformed entry: no topic length")
        topic_len = rd16(e + body_end)
        t = body_end + 2
    if topic_len < 0 or t + topic_len + 2 > total:
        raise corrupt(f"entry length {total} does not match its fields")
    cdef Py_ssize_t props_len = rd16(e + t + topic_len)
    if props_len < 0 or t + topic_len + 2 + props_len != total:
        raise corrupt(f"entry length {total} does not match its fields")
    out.total, out.sys_flag, out.born_n, out.store_n = total, sys_flag, born_n, store_n
    out.body_at, out.body_len, out.topic_at, out.topic_len = p, body_len, t, topic_len
    out.props_at, out.props_len = t + topic_len + 2, props_len
    return 0
