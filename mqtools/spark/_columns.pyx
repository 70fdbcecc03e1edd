# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled twin of mqtools.spark.columns.Columns (the reference): same rows, same refusals.

Each stored message of a pull answer goes straight into growable C buffers, one per Arrow buffer of
the schema, and `batch()` wraps them as Arrow arrays: no message object, dict or string per row. The
common case is parsed here: ASCII properties without a repeated name. Anything else (non-ASCII
text, a repeated property, a compressed body's inflation, a host not seen before) takes the Python
way for that value, which is what makes the answers the reference's.
"""

from cpython.buffer cimport PyBuffer_FillInfo
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcmp, memcpy

from mqtools.common._layout cimport Entry, corrupt, parse_entry, piece_end, put_hex, rd32, rd64

#: sysflag.COMPRESSED_FLAG
cdef int COMPRESSED_FLAG = 0x1
#: columns.MAX_MILLIS
cdef int64_t MAX_MILLIS = 9223372036854775
#: Arrow's 32-bit offsets bound a string or binary buffer.
cdef Py_ssize_t MAX_BUFFER = 0x7FFFFFFF
#: Properties of one message parsed here; more take the Python way.
cdef enum:
    MAX_FAST_PROPS = 32
    TEXTS = 9
    FIXED = 5


cdef struct Buf:
    char *data
    Py_ssize_t len
    Py_ssize_t cap
    Py_ssize_t hint  # what the last batch used: the first reservation after a take makes room for as much again


#: Column buffers Arrow has let go of, kept for the next batches (`spare`, `reuse`): a new batch's buffers were fresh
#: memory, which the allocator had handed back to the kernel and whose every page then cost a fault and a cleared
#: page at first touch (a tenth of a reader's CPU with 1 KiB bodies). Bounded in count and in bytes; each process
#: keeps its own, and what does not fit is freed as before. Touched only with the GIL held.
cdef enum:
    SPARES = 64
cdef Py_ssize_t SPARE_BYTES = 32 * 1024 * 1024
cdef char *spare_data[SPARES]
cdef Py_ssize_t spare_cap[SPARES]
cdef int spare_count = 0
cdef Py_ssize_t spare_bytes = 0


cdef void spare(char *data, Py_ssize_t cap) noexcept:
    """`data` (of `cap` bytes) is no longer used: kept for reuse while the pool has room, else freed."""
    global spare_count, spare_bytes
    if spare_count < SPARES and spare_bytes + cap <= SPARE_BYTES:
        spare_data[spare_count], spare_cap[spare_count] = data, cap
        spare_count += 1
        spare_bytes += cap
    else:
        free(data)


cdef bint reuse(Buf *b, Py_ssize_t want) noexcept:
    """An empty `b` takes the smallest spare buffer of at least `want` bytes, if there is one."""
    global spare_count, spare_bytes
    cdef int i, best = -1
    for i in range(spare_count):
        if spare_cap[i] >= want and (best < 0 or spare_cap[i] < spare_cap[best]):
            best = i
    if best < 0:
        return False
    b.data, b.cap = spare_data[best], spare_cap[best]
    spare_count -= 1
    spare_bytes -= b.cap
    spare_data[best], spare_cap[best] = spare_data[spare_count], spare_cap[spare_count]
    return True


cdef int reserve(Buf *b, Py_ssize_t extra) except -1:
    cdef Py_ssize_t cap
    cdef char *grown
    if b.len + extra <= b.cap:
        return 0
    cap = max(b.cap * 2, b.len + extra, 4096, b.hint)
    if b.data == NULL and reuse(b, cap):
        return 0
    grown = <char *>realloc(b.data, cap)
    if grown == NULL:
        raise MemoryError()
    b.data = grown
    b.cap = cap
    return 0


# put, put32, put64 and text_end run a few dozen times a row: the room check is inline and a fixed size's copy is
# one store, growing (reserve) and refusing (too_large) are calls of their own. put32 and put64 are written out, not
# put(b, &v, 4): with them calling put, gcc no longer inlined text_end, and the reader alone took 0.86-0.97 us of
# CPU a row against 0.81-0.88 (stop 103's review).
cdef inline int put(Buf *b, const void *src, Py_ssize_t n) except -1:
    if b.len + n > b.cap:
        reserve(b, n)
    memcpy(b.data + b.len, src, n)
    b.len += n
    return 0


cdef inline int put32(Buf *b, int32_t v) except -1:
    if b.len + 4 > b.cap:
        reserve(b, 4)
    memcpy(b.data + b.len, &v, 4)
    b.len += 4
    return 0


cdef inline int put64(Buf *b, int64_t v) except -1:
    if b.len + 8 > b.cap:
        reserve(b, 8)
    memcpy(b.data + b.len, &v, 8)
    b.len += 8
    return 0


cdef inline bint ascii(const unsigned char *p, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        if p[i] & 0x80:
            return False
    return True


cdef struct Text:
    Buf offsets
    Buf data
    Buf valid
    Py_ssize_t nulls


cdef int text_start(Text *t) except -1:
    t.offsets.len = t.data.len = t.valid.len = 0
    t.nulls = 0
    return put32(&t.offsets, 0)


cdef int too_large() except -1:
    raise OverflowError("an Arrow string or binary buffer holds at most 2 GiB")


cdef inline int text_end(Text *t, bint present) except -1:
    if t.data.len > MAX_BUFFER:
        too_large()
    if t.valid.len + 1 > t.valid.cap:
        reserve(&t.valid, 1)
    t.valid.data[t.valid.len] = present
    t.valid.len += 1
    if not present:
        t.nulls += 1
    return put32(&t.offsets, <int32_t>t.data.len)


cdef int text_add(Text *t, const unsigned char *p, Py_ssize_t n) except -1:
    """UTF-8 text as the reference decodes it (errors="replace"), written as UTF-8."""
    cdef bytes fixed
    if ascii(p, n):
        put(&t.data, p, n)
    else:
        fixed = PyUnicode_DecodeUTF8(<const char *>p, n, "replace").encode()
        put(&t.data, PyBytes_AS_STRING(fixed), PyBytes_GET_SIZE(fixed))
    return text_end(t, True)


cdef int text_str(Text *t, str s) except -1:
    cdef bytes raw = s.encode()
    put(&t.data, PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw))
    return text_end(t, True)


cdef void text_free(Text *t) noexcept:
    free(t.offsets.data)
    free(t.data.data)
    free(t.valid.data)


cdef class Owned:
    """A column buffer handed to Arrow as it is (pa.py_buffer keeps this object): a batch's bodies are not copied
    once more into new memory, whose first touch of each page was a fault and a cleared page."""
    cdef char *data
    cdef Py_ssize_t size, cap

    def __getbuffer__(self, Py_buffer *view, int flags):
        PyBuffer_FillInfo(view, self, self.data, self.size, 1, flags)

    def __dealloc__(self):
        spare(self.data, self.cap)


cdef object take(Buf *b):
    """The buffer's bytes, owned from now on by what is returned; `b` starts again empty, with room for as much."""
    if b.data == NULL:  # nothing was written (a column of empty strings): Arrow wants memory even for no bytes
        return b""
    cdef Owned owned = Owned.__new__(Owned)
    owned.data, owned.size, owned.cap = b.data, b.len, b.cap
    b.hint = b.len + b.len // 8
    b.data, b.len, b.cap = NULL, 0, 0
    return owned


cdef struct Piece:
    const unsigned char *name
    Py_ssize_t name_n
    const unsigned char *value
    Py_ssize_t value_n


cdef Py_ssize_t pieces(const unsigned char *p, Py_ssize_t n, Piece *out) noexcept nogil:
    """The properties' name/value pieces in order as string_to_properties keeps them, or -1 when the
    text needs the Python way: non-ASCII, a repeated name, or more than MAX_FAST_PROPS pieces."""
    cdef Py_ssize_t i = 0, start, sep, count = 0, j
    if not ascii(p, n):
        return -1
    while i < n:
        start = i
        i = piece_end(p, n, start, &sep)
        if sep >= 0 and i - start >= 3:
            for j in range(count):
                if out[j].name_n == sep - start and memcmp(out[j].name, p + start, sep - start) == 0:
                    return -1
            if count == MAX_FAST_PROPS:
                return -1
            out[count].name = p + start
            out[count].name_n = sep - start
            out[count].value = p + sep + 1
            out[count].value_n = i - sep - 1
            count += 1
        i += 1
    return count


cdef Py_ssize_t find(Piece *props, Py_ssize_t count, const char *name, Py_ssize_t name_n) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(count):
        if props[j].name_n == name_n and memcmp(props[j].name, name, name_n) == 0:
            return j
    return -1


cdef class Columns:
    """mqtools.spark.columns.Columns, compiled."""

    cdef readonly str broker
    cdef Py_ssize_t rows
    cdef readonly Py_ssize_t nbytes
    cdef Text topic, msg_id, keys, tags, body, prop_keys, prop_values, born_host, store_host
    cdef Buf queue_id, queue_offset, born, stored, prop_offsets
    cdef Text *texts[TEXTS]
    cdef Buf *fixed[FIXED]
    cdef dict hosts
    cdef list last_key, last_text
    cdef object _decompress, _properties, _ip

    def __cinit__(self, str broker):
        self.broker = broker
        self.hosts = {}
        self.last_key, self.last_text = [None, None], [None, None]
        self.texts[:] = [&self.topic, &self.msg_id, &self.keys, &self.tags, &self.body, &self.prop_keys,
                         &self.prop_values, &self.born_host, &self.store_host]
        self.fixed[:] = [&self.queue_id, &self.queue_offset, &self.born, &self.stored, &self.prop_offsets]
        import ipaddress
        import zlib

        from mqtools.common import properties
        self._decompress = zlib.decompress
        self._properties = properties.string_to_properties
        self._ip = ipaddress.ip_address
        self.clear()

    def __dealloc__(self):
        cdef int i
        for i in range(TEXTS):
            text_free(self.texts[i])
        for i in range(FIXED):
            free(self.fixed[i].data)

    def clear(self):
        cdef int i
        self.rows = 0
        self.nbytes = 0
        for i in range(TEXTS):
            text_start(self.texts[i])
        for i in range(FIXED):
            self.fixed[i].len = 0
        put32(&self.prop_offsets, 0)

    def __len__(self):
        return self.rows

    cdef int host(self, Text *t, const unsigned char *p, int n, int which) except -1:
        """An address of n bytes and its 4-byte port as "ip:port"; a reader sees few hosts, so each is
        formatted once, and the one of the row before (`which`: 0 born, 1 store) is taken without a lookup."""
        cdef bytes key = self.last_key[which]
        if key is None or PyBytes_GET_SIZE(key) != n + 4 or memcmp(PyBytes_AS_STRING(key), p, n + 4) != 0:
            key = PyBytes_FromStringAndSize(<const char *>p, n + 4)
            text = self.hosts.get(key)
            if text is None:
                text = f"{self._ip(key[:n])}:{rd32(p + n)}".encode()
                if len(self.hosts) < 1024:
                    self.hosts[key] = text
            self.last_key[which], self.last_text[which] = key, text
        cdef bytes last = self.last_text[which]
        put(&t.data, PyBytes_AS_STRING(last), PyBytes_GET_SIZE(last))
        return text_end(t, True)

    def add_pull(self, body, int64_t low, int64_t high, tags):
        """Columns.add_pull: on any failure the rows of this answer are taken back, so nothing of it stays."""
        if not body:
            return 0
        cdef const unsigned char[:] mv = body
        cdef Py_ssize_t pos = 0, n = mv.shape[0], added = 0, i
        cdef const unsigned char *base = &mv[0]
        cdef Py_ssize_t marks[3 * TEXTS + TEXTS + FIXED]
        cdef Py_ssize_t rows = self.rows, nbytes = self.nbytes
        for i in range(TEXTS):
            marks[3 * i] = self.texts[i].offsets.len
            marks[3 * i + 1] = self.texts[i].data.len
            marks[3 * i + 2] = self.texts[i].valid.len
            marks[3 * TEXTS + i] = self.texts[i].nulls
        for i in range(FIXED):
            marks[4 * TEXTS + i] = self.fixed[i].len
        try:
            while pos < n:
                pos += self.entry(base + pos, n - pos, low, high, tags, &added)
        except BaseException:
            for i in range(TEXTS):
                self.texts[i].offsets.len = marks[3 * i]
                self.texts[i].data.len = marks[3 * i + 1]
                self.texts[i].valid.len = marks[3 * i + 2]
                self.texts[i].nulls = marks[3 * TEXTS + i]
            for i in range(FIXED):
                self.fixed[i].len = marks[4 * TEXTS + i]
            self.rows, self.nbytes = rows, nbytes
            raise
        return added

    cdef Py_ssize_t entry(self, const unsigned char *e, Py_ssize_t avail, int64_t low, int64_t high, tags,
                          Py_ssize_t *added) except -1:
        """One stored entry, checked as codec.decode_stored checks it, then written when it is wanted;
        its size."""
        cdef Entry f
        cdef Piece props[MAX_FAST_PROPS]
        parse_entry(e, avail, &f)
        cdef int64_t queue_offset = rd64(e + 20)
        if queue_offset < low or queue_offset >= high:
            return f.total
        cdef Py_ssize_t count = pieces(e + f.props_at, f.props_len, props)
        cdef dict slow = None
        if count < 0:
            slow = self._properties(PyUnicode_DecodeUTF8(<const char *>e + f.props_at, f.props_len, "replace"))
        cdef Py_ssize_t j
        cdef str tag = None
        if tags:
            if slow is not None:
                tag = slow.get("TAGS")
            else:
                j = find(props, count, "TAGS", 4)
                if j >= 0:
                    tag = PyUnicode_DecodeUTF8(<const char *>props[j].value, props[j].value_n, "strict")
            if tag not in tags:
                return f.total
        self.write(e, &f, props, count, slow)
        added[0] += 1
        return f.total

    cdef int write(self, const unsigned char *e, Entry *f, Piece *props, Py_ssize_t count, dict slow) except -1:
        cdef Py_ssize_t j
        cdef bytes inflated
        cdef char hexed[57]
        cdef const unsigned char *born = e + 48
        cdef const unsigned char *store = born + f.born_n + 4 + 8
        cdef int born_n = f.born_n, store_n = f.store_n
        cdef Py_ssize_t t = f.topic_at, topic_len = f.topic_len, p = f.body_at, body_len = f.body_len
        cdef int64_t born_ts = rd64(e + 40), store_ts = rd64(born + born_n + 4)
        if born_ts > MAX_MILLIS or born_ts < -MAX_MILLIS or store_ts > MAX_MILLIS or store_ts < -MAX_MILLIS:
            raise corrupt(f"timestamp out of range at physical offset {rd64(e + 28)}")
        # topic: a retry topic's message names its real topic in RETRY_TOPIC
        if topic_len < 7 or memcmp(e + t, b"%RETRY%", 7) != 0 or not self.value(&self.topic, "RETRY_TOPIC", 11,
                                                                                 props, count, slow):
            text_add(&self.topic, e + t, topic_len)
        put32(&self.queue_id, rd32(e + 12))
        put64(&self.queue_offset, rd64(e + 20))
        # msg_id: the producer's unique key, else the offset id (store host, port, commitlog offset)
        if not self.value(&self.msg_id, "UNIQ_KEY", 8, props, count, slow):
            put(&self.msg_id.data, hexed, put_hex(put_hex(hexed, store, store_n + 4), e + 28, 8) - hexed)
            text_end(&self.msg_id, True)
        self.optional(&self.keys, "KEYS", 4, props, count, slow)
        self.optional(&self.tags, "TAGS", 4, props, count, slow)
        if f.sys_flag & COMPRESSED_FLAG:
            inflated = self._decompress(PyBytes_FromStringAndSize(<const char *>e + p, body_len))
            put(&self.body.data, PyBytes_AS_STRING(inflated), PyBytes_GET_SIZE(inflated))
            self.nbytes += PyBytes_GET_SIZE(inflated)
        else:
            put(&self.body.data, e + p, body_len)
            self.nbytes += body_len
        text_end(&self.body, True)
        if slow is None:
            for j in range(count):
                put(&self.prop_keys.data, props[j].name, props[j].name_n)
                text_end(&self.prop_keys, True)
                put(&self.prop_values.data, props[j].value, props[j].value_n)
                text_end(&self.prop_values, True)
        else:
            for name, value in slow.items():
                text_str(&self.prop_keys, name)
                text_str(&self.prop_values, value)
        put32(&self.prop_offsets, <int32_t>(self.prop_keys.offsets.len // 4 - 1))
        put64(&self.born, born_ts * 1000)
        put64(&self.stored, store_ts * 1000)
        self.host(&self.born_host, born, born_n, 0)
        self.host(&self.store_host, store, store_n, 1)
        self.rows += 1
        return 0

    cdef bint value(self, Text *col, const char *name, Py_ssize_t name_n, Piece *props, Py_ssize_t count,
                    dict slow) except -1:
        """Writes property `name` to `col` when it is there and not empty (what `props.get(name) or ...`
        takes); whether it did."""
        cdef Py_ssize_t j
        if slow is not None:
            text = slow.get(name[:name_n].decode())
            if not text:
                return False
            text_str(col, text)
            return True
        j = find(props, count, name, name_n)
        if j < 0 or props[j].value_n == 0:
            return False
        put(&col.data, props[j].value, props[j].value_n)
        text_end(col, True)
        return True

    cdef int optional(self, Text *col, const char *name, Py_ssize_t name_n, Piece *props, Py_ssize_t count,
                      dict slow) except -1:
        cdef Py_ssize_t j
        if slow is not None:
            value = slow.get(name[:name_n].decode())
            if value is None:
                return text_end(col, False)
            return text_str(col, value)
        j = find(props, count, name, name_n)
        if j < 0:
            return text_end(col, False)
        put(&col.data, props[j].value, props[j].value_n)
        return text_end(col, True)

    def batch(self):
        """Columns.batch."""
        import pyarrow as pa
        from mqtools.spark.columns import ARROW_SCHEMA

        cdef Py_ssize_t n = self.rows, i
        cdef bytes broker = self.broker.encode()
        cdef Buf offsets, data
        offsets.data = data.data = NULL
        offsets.len = offsets.cap = offsets.hint = data.len = data.cap = data.hint = 0
        try:
            for i in range(n + 1):
                put32(&offsets, <int32_t>(i * len(broker)))
            for i in range(n):
                put(&data, PyBytes_AS_STRING(broker), len(broker))
            broker_col = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(take(&offsets)),
                                                                pa.py_buffer(take(&data))])
        finally:
            free(offsets.data)
            free(data.data)
        ts = pa.timestamp("us", tz="UTC")
        entries = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(take(&self.prop_offsets))])
        props = pa.MapArray.from_arrays(entries, self.text(&self.prop_keys, pa.string()),
                                        self.text(&self.prop_values, pa.string()))
        arrays = [self.text(&self.topic, pa.string()), broker_col,
                  pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(take(&self.queue_id))]),
                  pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(take(&self.queue_offset))]),
                  self.text(&self.msg_id, pa.string()), self.text(&self.keys, pa.string()),
                  self.text(&self.tags, pa.string()), self.text(&self.body, pa.binary()), props,
                  pa.Array.from_buffers(ts, n, [None, pa.py_buffer(take(&self.born))]),
                  pa.Array.from_buffers(ts, n, [None, pa.py_buffer(take(&self.stored))]),
                  self.text(&self.born_host, pa.string()), self.text(&self.store_host, pa.string())]
        self.clear()
        return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)

    cdef object text(self, Text *t, kind):
        import pyarrow as pa

        cdef Py_ssize_t n = t.valid.len, i
        cdef bytearray bits
        validity = None
        if t.nulls:
            bits = bytearray((n + 7) // 8)
            for i in range(n):
                if t.valid.data[i]:
                    bits[i >> 3] |= 1 << (i & 7)
            validity = pa.py_buffer(bytes(bits))
        return pa.Array.from_buffers(kind, n, [validity, pa.py_buffer(take(&t.offsets)), pa.py_buffer(take(&t.data))],
                                     null_count=t.nulls)
