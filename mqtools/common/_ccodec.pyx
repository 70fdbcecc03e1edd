# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled forms of the per-message hot paths of codec, entry_check, properties and hashing.

Each function here has a pure-Python twin of the same name and meaning (the source of truth, and
what runs when this module was not built or MQ_PURE_PYTHON is set); tests/unit/test_ccodec.py
checks both give the same answers, and the store and codec suites run against both.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int16_t, int32_t, int64_t, uint32_t, uint64_t
from libc.stdio cimport snprintf
from libc.string cimport memcmp, memcpy

from mqtools.common._layout cimport (
    BLANK_MAGIC,
    BORNHOST_V6_FLAG,
    FIXED_V4,
    STOREHOST_V6_FLAG,
    Entry,
    corrupt,
    parse_entry,
    piece_end,
    put_hex,
    rd16,
    rd32,
    rd64,
    wr16,
    wr32,
    wr64,
    write_entry,
)

cdef extern from "zlib.h":
    unsigned long crc32(unsigned long crc, const unsigned char *buf, unsigned int length) nogil

#: codec.BATCH_HEAD's size and codec.BATCH_ENTRY_FIXED (the head and the 2-byte properties length).
cdef int BATCH_HEAD_SIZE = 20
cdef int BATCH_ENTRY_FIXED = BATCH_HEAD_SIZE + 2
#: codec.MAX_PROPERTIES_LEN: the properties length is a signed 2-byte field.
cdef int MAX_PROPERTIES_LEN = 32767
#: server.store.index's HEADER_SIZE and ENTRY_SIZE.
cdef int INDEX_HEADER_SIZE = 40
cdef int INDEX_ENTRY_SIZE = 20

#: mqtools.common.message.MessageExt, imported on first use: the pure modules import this one while
#: they load, and message imports them.
cdef object MessageExt = None
#: (ip bytes, port) -> (host tuple, upper-case hex of the 8/20-byte address): a reader sees few hosts.
cdef dict _hosts = {}


cdef tuple _host(const unsigned char *p, int n):
    """(host tuple, address hex) for an address of n bytes followed by its 4-byte port."""
    key = PyBytes_FromStringAndSize(<const char *>p, n + 4)
    found = _hosts.get(key)
    if found is not None:
        return <tuple>found
    import ipaddress
    host = (str(ipaddress.ip_address(key[:n])), rd32(p + n))
    found = (host, key.hex().upper())
    if len(_hosts) < 1024:
        _hosts[key] = found
    return found


cdef dict _properties(const unsigned char *p, Py_ssize_t n):
    """string_to_properties(bytes.decode(errors="replace")): the separators are ASCII, so splitting the
    bytes first gives the same pieces; a piece under 3 characters is ignored."""
    cdef dict props = {}
    cdef Py_ssize_t i = 0, start, sep
    while i <= n:
        start = i
        i = piece_end(p, n, start, &sep)
        if sep >= 0:
            name = PyUnicode_DecodeUTF8(<const char *>p + start, sep - start, "replace")
            value = PyUnicode_DecodeUTF8(<const char *>p + sep + 1, i - sep - 1, "replace")
            if len(name) + len(value) >= 2:
                props[name] = value
        i += 1
    return props


cdef object _decode(const unsigned char[:] mv, Py_ssize_t offset, bint check_crc, bint read_body):
    cdef Entry f
    cdef char id_tail[17]
    if mv.shape[0] - offset < 8:
        raise corrupt("truncated entry header")
    cdef const unsigned char *e = &mv[0] + offset
    parse_entry(e, mv.shape[0] - offset, &f)
    cdef const unsigned char *born = e + 48
    cdef const unsigned char *store = born + f.born_n + 4 + 8
    cdef int32_t crc = rd32(e + 8)
    cdef int64_t phys = rd64(e + 28)
    if check_crc and f.body_len and <int32_t>(crc32(0, e + f.body_at, f.body_len) & 0x7FFFFFFF) != crc:
        raise corrupt(f"body CRC mismatch at physical offset {phys}")
    topic = PyUnicode_DecodeUTF8(<const char *>e + f.topic_at, f.topic_len, "replace")
    store_host, store_hex = _host(store, f.store_n)
    snprintf(id_tail, 17, "%016llX", <unsigned long long>phys)
    global MessageExt
    if MessageExt is None:
        from mqtools.common.message import MessageExt
    cdef Py_ssize_t tail = f.body_at - 16
    return MessageExt(
        topic,
        PyBytes_FromStringAndSize(<const char *>e + f.body_at, f.body_len) if read_body else b"",
        rd32(e + 16),
        _properties(e + f.props_at, f.props_len),
        rd32(e + 12),
        f.total,
        rd64(e + 20),
        f.sys_flag,
        rd64(e + 40),
        _host(born, f.born_n)[0],
        rd64(born + f.born_n + 4),
        store_host,
        store_hex + id_tail.decode("ascii"),
        phys,
        crc,
        rd32(e + tail),
        rd64(e + tail + 4),
    )


def decode_stored(buf, Py_ssize_t offset=0, bint check_crc=False, bint read_body=True):
    """codec.decode_stored."""
    if offset < 0:
        raise corrupt("negative offset")
    return _decode(buf, offset, check_crc, read_body)


def decode_entries(buf):
    """codec.decode_entries."""
    cdef const unsigned char[:] mv = buf
    cdef Py_ssize_t pos = 0, n = mv.shape[0]
    out = []
    while pos < n:
        msg = _decode(mv, pos, False, True)
        pos += (<object>msg).store_size
        out.append(msg)
    return out


cdef object _value(const unsigned char *p, Py_ssize_t n, const char *name, Py_ssize_t name_n):
    """The last value of `name` in an encoded properties string, strictly decoded, or None."""
    cdef Py_ssize_t i = 0, start, end, found_at = -1, found_end = 0
    while i < n:
        start = i
        while i < n and p[i] != 2:
            i += 1
        end = i
        if end - start > name_n and p[start + name_n] == 1 and memcmp(p + start, name, name_n) == 0:
            found_at = start + name_n + 1
            found_end = end
        i += 1
    if found_at < 0:
        return None
    return PyUnicode_DecodeUTF8(<const char *>p + found_at, found_end - found_at, NULL)


cdef tuple _dispatch(const unsigned char *p, Py_ssize_t n):
    return _value(p, n, b"TAGS", 4), _value(p, n, b"KEYS", 4), _value(p, n, b"UNIQ_KEY", 8)


def dispatch_values(encoded):
    """properties.dispatch_values."""
    cdef const unsigned char[:] mv = encoded
    if mv.shape[0] == 0:
        return None, None, None
    return _dispatch(&mv[0], mv.shape[0])


cdef object _hash_parts = None


cdef inline int64_t _key_hash(uint32_t h, const unsigned char *p, Py_ssize_t n) noexcept nogil:
    """Java's String.hashCode continued over n ASCII bytes from `h`, abs, MIN_VALUE -> 0."""
    cdef Py_ssize_t i
    for i in range(n):
        h = h * 31 + p[i]
    cdef uint32_t sign = 1U << 31
    if h & sign:
        return 0 if h == sign else (<int64_t>1 << 32) - h
    return h


def unit_key_hashes(str prefix, list units, int64_t end_phy):
    """server.store.index.unit_key_hashes."""
    global _hash_parts
    cdef uint32_t head = 0
    cdef Py_ssize_t i, n, start
    cdef const char *p
    cdef bint ascii_prefix = prefix.isascii()
    if _hash_parts is None:
        from mqtools.common.hashing import index_key_hash_parts
        _hash_parts = index_key_hash_parts
    if ascii_prefix:
        p = PyUnicode_AsUTF8AndSize(prefix, &n)
        for i in range(n):
            head = head * 31 + <unsigned char>p[i]
    hashes = []
    targets = []
    for unit in units:
        phys = (<tuple>unit)[0]
        if phys < end_phy:
            continue
        uniq = (<tuple>unit)[4]
        if uniq:
            if ascii_prefix and (<str>uniq).isascii():
                p = PyUnicode_AsUTF8AndSize(uniq, &n)
                hashes.append(_key_hash(head, <const unsigned char *>p, n))
            else:
                hashes.append(_hash_parts(prefix, uniq))
            targets.append(phys)
        keys = (<tuple>unit)[3]
        if not keys:
            continue
        if not (ascii_prefix and (<str>keys).isascii()):
            for k in (<str>keys).split(" "):
                if k:
                    hashes.append(_hash_parts(prefix, k))
                    targets.append(phys)
            continue
        p = PyUnicode_AsUTF8AndSize(keys, &n)
        start = 0
        for i in range(n + 1):
            if i == n or p[i] == 32:
                if i > start:
                    hashes.append(_key_hash(head, <const unsigned char *>p + start, i - start))
                    targets.append(phys)
                start = i + 1
    return hashes, targets


def batch_props_growth(const unsigned char[:] body, list entries, Py_ssize_t extra_len):
    """codec.batch_props_growth."""
    cdef Py_ssize_t growth = 0, p, pe, own, sep, n = body.shape[0]
    if extra_len <= 0:
        return 0
    for entry in entries:
        _, _, p, pe = <tuple>entry
        own = pe - p - 2
        if own < 0 or p < 0 or pe > n:
            raise ValueError(f"batch entry properties ({p}, {pe}) do not fit the body")
        sep = 1 if own > 0 and body[pe - 1] != 2 else 0
        if own + sep + extra_len > MAX_PROPERTIES_LEN:
            raise ValueError(f"the properties of a batch message with the batch's take {own + sep + extra_len} "
                             f"bytes, over {MAX_PROPERTIES_LEN}")
        growth += sep + extra_len
    return growth


def pack_batch(unsigned char[:] mm, Py_ssize_t pos, int64_t phys, const unsigned char[:] body, list entries,
               bytes fixed_head, bytes topic_part, bytes extra, int32_t qid, int64_t qoff, dict codes, tags_code):
    """codec.pack_batch."""
    cdef Py_ssize_t hsize = len(fixed_head), tlen = len(topic_part), xlen = len(extra), fixed = hsize + tlen
    cdef Py_ssize_t b, pe, pp, blen, size, own, sep, plen
    cdef unsigned char *dst
    cdef const unsigned char *src = &body[0]
    cdef const unsigned char *head = fixed_head
    cdef const unsigned char *tp = topic_part
    cdef const unsigned char *xp = extra
    cdef int32_t flag
    if hsize < FIXED_V4 - 2:
        raise ValueError(f"a stored header has at least {FIXED_V4 - 2} bytes, not {hsize}")
    xtags, xkeys, xuniq = _dispatch(xp, xlen) if xlen else (None, None, None)
    units = []
    for entry in entries:
        flag, b, pp, pe = <tuple>entry
        if b < 0 or b > pp or pp + 2 > pe or pe > body.shape[0]:
            raise ValueError(f"batch entry ({b}, {pp}, {pe}) does not fit the body or the target at {pos}")
        blen = pp - b
        own = pe - pp - 2
        sep = 1 if xlen and own > 0 and src[pe - 1] != 2 else 0
        plen = own + sep + xlen
        if plen > MAX_PROPERTIES_LEN:
            raise ValueError(f"the properties of a batch message with the batch's take {plen} bytes, "
                             f"over {MAX_PROPERTIES_LEN}")
        size = fixed + blen + 2 + plen
        if pos < 0 or pos + size > mm.shape[0]:
            raise ValueError(f"batch entry ({b}, {pp}, {pe}) does not fit the body or the target at {pos}")
        dst = &mm[pos]
        memcpy(dst, head, hsize)
        wr32(dst, size)
        wr32(dst + 8, (crc32(0, src + b, blen) & 0x7FFFFFFF) if blen else 0)
        wr32(dst + 12, qid)
        wr32(dst + 16, flag)
        wr64(dst + 20, qoff)
        wr64(dst + 28, phys)
        wr32(dst + hsize - 4, blen)
        memcpy(dst + hsize, src + b, blen)
        dst += hsize + blen
        memcpy(dst, tp, tlen)
        dst += tlen
        tags, keys, uniq = _dispatch(src + pp + 2, own)
        if xlen:
            wr16(dst, plen)
            memcpy(dst + 2, src + pp + 2, own)
            dst += 2 + own
            if sep:
                dst[0] = 2
            memcpy(dst + sep, xp, xlen)
            if xtags is not None:
                tags = xtags
            if xkeys is not None:
                keys = xkeys
            if xuniq is not None:
                uniq = xuniq
        else:
            memcpy(dst, src + pp, pe - pp)
        code = codes.get(tags)
        if code is None:
            code = codes[tags] = tags_code(tags)
        units.append((phys, size, code, keys, uniq))
        pos += size
        phys += size
        qoff += 1
    return units


def batch_entries(body):
    """codec.batch_entries."""
    cdef const unsigned char[:] mv = body
    cdef Py_ssize_t pos = 0, end = mv.shape[0], b, p, pe
    cdef int32_t size, body_len
    cdef const unsigned char *base
    out = []
    if end == 0:
        return out
    base = &mv[0]
    while pos < end:
        if end - pos < BATCH_ENTRY_FIXED:
            raise ValueError("truncated batch entry")
        size = rd32(base + pos)
        body_len = rd32(base + pos + 16)
        b = pos + BATCH_HEAD_SIZE
        p = b + body_len
        if body_len < 0 or p + 2 > end:
            raise ValueError("batch body length out of range")
        pe = p + 2 + rd16(base + p)
        if pe < p + 2 or pe > end or size != pe - pos:
            raise ValueError("batch entry length does not match its fields")
        out.append((rd32(base + pos + 12), b, p, pe))
        pos = pe
    return out


cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL
    char *PyBytes_AS_STRING(object b)


def encode_batch(list messages):
    """codec.encode_batch: sizes measured in a first pass, then one buffer filled in a second."""
    cdef Py_ssize_t total = 0, plen, kn, vn, blen, i = 0
    cdef list rows = []
    cdef list strs = []
    cdef const char *s
    cdef unsigned char *dst
    for m in messages:
        body = m.body
        if type(body) is not bytes:
            body = bytes(body)
        plen = 0
        count = 0
        props = m.properties
        if props:
            for k, v in (<dict>props).items():
                if v is None:
                    continue
                if type(k) is not str:
                    k = format(k)
                if type(v) is not str:
                    v = format(v)
                PyUnicode_AsUTF8AndSize(k, &kn)
                PyUnicode_AsUTF8AndSize(v, &vn)
                plen += kn + vn + 2
                strs.append(k)
                strs.append(v)
                count += 1
        if plen > MAX_PROPERTIES_LEN:
            raise ValueError(f"the properties of a batch message take {plen} bytes, over {MAX_PROPERTIES_LEN}")
        rows.append((body, m.flag, plen, count))
        total += BATCH_ENTRY_FIXED + len(body) + plen
    out = PyBytes_FromStringAndSize(NULL, total)
    dst = <unsigned char *>PyBytes_AS_STRING(out)
    for body, flag, plen, count in rows:
        blen = len(body)
        wr32(dst, BATCH_ENTRY_FIXED + blen + plen)
        wr32(dst + 4, 0)
        wr32(dst + 8, 0)
        wr32(dst + 12, <int32_t>flag)
        wr32(dst + 16, blen)
        memcpy(dst + BATCH_HEAD_SIZE, PyBytes_AS_STRING(body), blen)
        dst += BATCH_HEAD_SIZE + blen
        wr16(dst, plen)
        dst += 2
        for _ in range(<Py_ssize_t>count):
            s = PyUnicode_AsUTF8AndSize(strs[i], &kn)
            memcpy(dst, s, kn)
            dst[kn] = 1
            dst += kn + 1
            s = PyUnicode_AsUTF8AndSize(strs[i + 1], &vn)
            memcpy(dst, s, vn)
            dst[vn] = 2
            dst += vn + 1
            i += 2
    return out


def index_put_entries(unsigned char[:] mm, Py_ssize_t slots, Py_ssize_t entries_at, int64_t n, list hashes,
                      list phys, Py_ssize_t start, Py_ssize_t end, int32_t diff, int32_t rest):
    """server.store.index.put_entries."""
    cdef Py_ssize_t i, slot_pos, pos, used = 0
    cdef Py_ssize_t stop = min(end, len(hashes), len(phys))
    cdef int64_t h
    cdef int32_t prev
    if (slots <= 0 or INDEX_HEADER_SIZE + slots * 4 > entries_at
            or entries_at + (n + end - start) * INDEX_ENTRY_SIZE > mm.shape[0]):
        raise ValueError(f"index entries {n}..{n + end - start} do not fit a mapping of {mm.shape[0]} bytes")
    pos = entries_at + n * INDEX_ENTRY_SIZE
    for i in range(start, stop):
        h = hashes[i]
        if h < 0 or h > 0x7FFFFFFF:
            raise ValueError(f"an index key hash is a non-negative int32, not {h}")
        slot_pos = INDEX_HEADER_SIZE + (h % slots) * 4
        prev = rd32(&mm[slot_pos])
        if prev <= 0 or prev > n:
            prev = 0
            used += 1
        wr32(&mm[pos], h)
        wr64(&mm[pos + 4], phys[i])
        wr32(&mm[pos + 12], diff)
        wr32(&mm[pos + 16], prev)
        wr32(&mm[slot_pos], n)
        diff = rest
        n += 1
        pos += INDEX_ENTRY_SIZE
    return n, used


#: mqtools.common.ids.host_address_bytes, imported on first use (ids imports the pure modules).
cdef object _address_bytes = None


def write_stored(unsigned char[:] buf, Py_ssize_t pos, msg, *, int32_t total, int32_t sys_flag,
                 int64_t queue_offset, int64_t phys_offset, int64_t store_timestamp, tuple store_host,
                 bytes topic, bytes properties):
    """codec.write_stored."""
    global _address_bytes
    if _address_bytes is None:
        from mqtools.common.ids import host_address_bytes
        _address_bytes = host_address_bytes
    cdef const unsigned char[:] body = msg.body
    born_host = msg.born_host
    cdef bytes born_ip = _address_bytes(born_host[0]), store_ip = _address_bytes(store_host[0])
    cdef int born_n = 16 if sys_flag & BORNHOST_V6_FLAG else 4
    cdef int store_n = 16 if sys_flag & STOREHOST_V6_FLAG else 4
    cdef Py_ssize_t blen = body.shape[0], tlen = len(topic), plen = len(properties)
    cdef Py_ssize_t head = FIXED_V4 - 2 + (born_n - 4) + (store_n - 4)
    cdef Py_ssize_t need = head + blen + (1 if tlen <= 127 else 2) + tlen + 2 + plen
    if plen > MAX_PROPERTIES_LEN or tlen > 32767:
        raise ValueError(f"a topic of {tlen} or properties of {plen} bytes do not fit their length fields")
    if pos < 0 or pos + need > buf.shape[0]:
        raise ValueError(f"an entry of {need} bytes does not fit the target at {pos}")
    write_entry(&buf[pos], total, (crc32(0, &body[0], blen) & 0x7FFFFFFF) if blen else 0, <int32_t>msg.queue_id,
                <int32_t>msg.flag, queue_offset, phys_offset, sys_flag, <int64_t>msg.born_timestamp,
                <const unsigned char *>PyBytes_AS_STRING(born_ip), len(born_ip), <int32_t>born_host[1],
                store_timestamp, <const unsigned char *>PyBytes_AS_STRING(store_ip), len(store_ip),
                <int32_t>store_host[1], <int32_t>msg.reconsume_times, <int64_t>msg.prepared_transaction_offset,
                &body[0] if blen else NULL, blen, PyBytes_AS_STRING(topic), tlen, PyBytes_AS_STRING(properties),
                plen)


def create_offset_msg_ids(tuple host, offsets):
    """ids.create_offset_msg_ids."""
    from mqtools.common.ids import offset_id_prefix
    cdef bytes prefix = (<str>offset_id_prefix(host)).encode("ascii")
    cdef Py_ssize_t plen = len(prefix)
    cdef uint64_t v
    cdef unsigned char raw[8]
    if plen > 64:
        raise ValueError(f"a store host is 8 or 20 bytes, not {plen // 2}")
    cdef char buf[80]
    memcpy(buf, PyBytes_AS_STRING(prefix), plen)
    out = []
    for offset in offsets:
        v = offset & 0xFFFFFFFFFFFFFFFF
        wr64(raw, <int64_t>v)
        put_hex(buf + plen, raw, 8)
        out.append(PyUnicode_DecodeUTF8(buf, plen + 16, NULL))
    return out


cdef object EntryInfo = None
cdef object _tags_code = None


cdef object _check(const unsigned char[:] mv, Py_ssize_t offset, bint check_crc):
    """walk_sizes' checks of the entry at `offset` (an int when it fails them: 0 a blank record, -1 invalid),
    else its EntryInfo from the fields in place and the properties split as bytes (_properties)."""
    cdef Py_ssize_t n = mv.shape[0]
    cdef Entry f
    if offset < 0 or n - offset < 8:
        return -1
    cdef const unsigned char *e = &mv[0] + offset
    if rd32(e + 4) == BLANK_MAGIC:
        return 0
    try:
        parse_entry(e, n - offset, &f)
    except ValueError:  # parse_entry's CorruptMessageError: the entry is invalid
        return -1
    if check_crc and <int32_t>((crc32(0, e + f.body_at, f.body_len) & 0x7FFFFFFF) if f.body_len else 0) \
            != rd32(e + 8):
        return -1
    global EntryInfo, _tags_code
    if EntryInfo is None:
        from mqtools.common.entry_check import EntryInfo
        from mqtools.common.hashing import tags_code as _tags_code
    props = _properties(e + f.props_at, f.props_len)
    return EntryInfo(f.total, PyUnicode_DecodeUTF8(<const char *>e + f.topic_at, f.topic_len, "replace"),
                     rd32(e + 12), rd64(e + 20), rd64(e + 28), f.sys_flag, rd64(e + 48 + f.born_n + 4),
                     _tags_code(props.get("TAGS")), props.get("KEYS"), props.get("UNIQ_KEY"), props)


def check_entry(buf, Py_ssize_t offset, bint check_crc):
    """entry_check.check_entry."""
    return _check(buf, offset, check_crc)


def check_entries(buf, Py_ssize_t offset, Py_ssize_t limit, bint check_crc, Py_ssize_t max_count):
    """entry_check.check_entries: one loop, no Python call per entry but the EntryInfo's."""
    cdef const unsigned char[:] mv = buf
    cdef list out = []
    while len(out) < max_count:
        info = _check(mv, offset, check_crc)
        if type(info) is int:
            return out, offset, info
        if offset + (<tuple>info)[0] > limit:
            break
        out.append(info)
        offset += <Py_ssize_t>(<tuple>info)[0]
    return out, offset, 1


def walk_sizes(buf, Py_ssize_t offset, bint check_crc):
    """entry_check.walk_sizes(buf, offset, check_crc): one loop, each entry checked by _layout's parse_entry (the
    checks entry_check.entry_size makes) and its body CRC, no Python call per entry."""
    cdef const unsigned char[:] mv = buf
    cdef Py_ssize_t n = mv.shape[0]
    cdef const unsigned char *e
    cdef Entry f
    if offset < 0 or offset > n:
        return offset, -1
    while True:
        if n - offset < 8:
            return offset, -1
        e = &mv[0] + offset
        if rd32(e + 4) == BLANK_MAGIC:
            return offset, 0
        try:
            parse_entry(e, n - offset, &f)
        except ValueError:  # parse_entry's CorruptMessageError: where the walk stops
            return offset, -1
        if check_crc and <int32_t>((crc32(0, e + f.body_at, f.body_len) & 0x7FFFFFFF) if f.body_len else 0) \
                != rd32(e + 8):
            return offset, -1
        offset += f.total
