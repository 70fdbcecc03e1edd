# cython: language_level=3, boundscheck=False, wraparound=False
"""The common SEND_MESSAGE_V2, compiled: fast failure, header, checks, message, put and answer frame in one
typed pass.

send.py's SendProcessor is the source of truth and what runs without this module (not built, or
MQ_PURE_PYTHON set). `SendV2` is the processor; its `send_v2` takes only the sends that need nothing more than
a plain put: a short-named header whose every number parses and is in range, an existing writable topic that
is not a retry topic, a queue id in range, and properties without a transaction, a delay level, a timer or a
CLUSTER of their own. For anything else, and for every refusal after fast failure, it returns GENERAL before it
has changed anything, and the processor's general path decides (with its exact remark). A stored send's
SUCCESS answer is written to the connection as a frame made here. tests/unit/broker/test_csend.py holds the
two paths to the same frames, messages, refusals and put statistics.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport int64_t, uint16_t, uint32_t
from libc.string cimport memcmp, memcpy

from mqtools.common._layout cimport put_decimal, rd16, rd32, rd64, wr32, wr64
from mqtools.remoting._header cimport FIXED_FIELDS_SIZE, put_fixed_fields, put_text

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object s)
    int PyUnicode_KIND(object s)
    const unsigned char *PyUnicode_1BYTE_DATA(object s)
    Py_ssize_t PyUnicode_GET_LENGTH(object s)
    const char *PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL
    object PyUnicode_DecodeUTF8(const char *s, Py_ssize_t size, const char *errors)
    int PyUnicode_1BYTE_KIND


from mqtools.common import javanum, perm, speedups
from mqtools.common import properties as P
from mqtools.common.brokerrole import BrokerRole
from mqtools.common.message import MessageExtBrokerInner
from mqtools.common.properties import drop_property
from mqtools.common.topics import RETRY_GROUP_TOPIC_PREFIX
from mqtools.remoting.codes import PROTOCOL_VERSION, ResponseCode, SerializeType
from mqtools.remoting.command import FLAG_ONEWAY, FLAG_RESPONSE
from mqtools.remoting.server import reply
from mqtools.server.broker.front.send_record import FIXED_SIZE, command_of
from mqtools.server.store.results import AppendMessageResult, PutMessageResult, PutMessageStatus

cdef int64_t INT_MIN = javanum.INT_MIN
cdef int64_t INT_MAX = javanum.INT_MAX
cdef int PERM_WRITE = perm.PERM_WRITE
cdef str SEP = P.PROPERTY_SEPARATOR
cdef str NV = P.NAME_VALUE_SEPARATOR
cdef str WAIT = P.WAIT
cdef str CLUSTER = P.CLUSTER
cdef int SUCCESS = ResponseCode.SUCCESS
cdef object PUT_OK = PutMessageStatus.PUT_OK
cdef object SLAVE = BrokerRole.SLAVE
cdef object JSON = SerializeType.JSON
cdef int64_t ONEWAY = FLAG_ONEWAY
cdef int64_t RESPONSE = FLAG_RESPONSE
cdef int VERSION = PROTOCOL_VERSION
cdef Py_ssize_t RECORD_FIXED = FIXED_SIZE
#: What send_v2 returns for a send it leaves to the processor's general path.
cdef object GENERAL = object()
#: The store's compiled put of a message's fields (_cput.pyx), called without a message object.
cdef object put_plain = getattr(speedups.compiled("mqtools.server.store._cput"), "put_plain", None)
#: (brokerIP1, listen port) -> the store host a message records: split_host(broker_addr), made once per address.
cdef dict STORE_HOSTS = {}
#: The store's put of a message some of whose figures a front worker made (_cput.pyx).
cdef object put_prepared = getattr(speedups.compiled("mqtools.server.store._cput"), "put_prepared", None)
#: cluster name -> the CLUSTER item stored properties end with, UTF-8.
cdef dict CLUSTER_ITEMS = {}
#: Properties that send a message anywhere but the plain put: the general path handles them.
cdef frozenset SPECIAL = frozenset({P.TRAN_MSG, P.DELAY, P.CLUSTER, P.TIMER_DELIVER_MS, P.TIMER_DELAY_SEC,
                                    P.TIMER_DELAY_MS})
#: The same names as bytes, for _wait_of's scan in place; the separators as code units.
cdef tuple SPECIAL_NAMES = tuple(name.encode() for name in SPECIAL)
cdef Py_ssize_t N_SPECIAL = len(SPECIAL_NAMES)
cdef bytes WAIT_BYTES = WAIT.encode()
cdef const char *WAIT_B = WAIT_BYTES
cdef Py_ssize_t WAIT_LEN = len(WAIT_BYTES)
cdef unsigned char SEP_CODE = ord(SEP)
cdef unsigned char NV_CODE = ord(NV)


cdef bint _decimal(const unsigned char *p, Py_ssize_t n, int64_t *out) noexcept nogil:
    """A '-' or nothing, then 1 to 18 ASCII digits, in the n bytes at p: their value (int(), which takes more
    forms, decides the rest)."""
    cdef Py_ssize_t i = 0
    cdef int64_t value = 0
    if n > 0 and p[0] == 45:
        i = 1
    if not 0 < n - i <= 18:
        return False
    while i < n:
        if not 48 <= p[i] <= 57:
            return False
        value = value * 10 + (p[i] - 48)
        i += 1
    out[0] = -value if p[0] == 45 else value
    return True


cdef bint _digits(str text, int64_t *out) noexcept:
    """_decimal of a string (an ASCII string's own data: nothing is made)."""
    cdef Py_ssize_t n
    if not PyUnicode_IS_ASCII(text):
        return False
    return _decimal(<const unsigned char *>PyUnicode_AsUTF8AndSize(text, &n), n, out)


cdef bint _long(object text, int64_t *out) except -1:
    """A Java long's decimal text as int() reads it; False (the general path names the fault) when it is not one."""
    if type(text) is not str:
        return False
    if _digits(text, out):
        return True
    try:
        out[0] = int(text)  # past a long's range: OverflowError
    except (ValueError, OverflowError):
        return False
    return True


cdef bint _int(object text, int64_t *out) except -1:
    """A Java int's decimal text; False (the general path names the fault) when it is not one."""
    cdef int64_t value
    if not _long(text, &value) or not INT_MIN <= value <= INT_MAX:
        return False
    out[0] = value
    return True


cdef bint _is_general(object wait) noexcept:
    """Whether _wait_of's answer is GENERAL (for the front worker's splitter, _csplit)."""
    return wait is GENERAL


cdef object _wait_of(str text):
    """string_to_properties's reading without building the map: GENERAL for a property asking more than a plain
    put; else WAIT's value (the last one, as the map keeps it), or None. A one-byte string is read in place."""
    cdef Py_ssize_t size, start = 0, end, at, k
    cdef const unsigned char *p
    cdef bytes name_b
    cdef Py_ssize_t wait_at = -1, wait_end = 0
    if not text:
        return None
    if PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND:
        return _wait_of_items(text)
    p = PyUnicode_1BYTE_DATA(text)
    size = PyUnicode_GET_LENGTH(text)
    while start <= size:
        end = start
        while end < size and p[end] != SEP_CODE:
            end += 1
        if end - start >= 3:
            at = start
            while at < end and p[at] != NV_CODE:
                at += 1
            if at < end:
                for k in range(N_SPECIAL):
                    name_b = <bytes>SPECIAL_NAMES[k]
                    if len(name_b) == at - start and memcmp(<const char *>name_b, p + start, at - start) == 0:
                        return GENERAL
                if at - start == WAIT_LEN and memcmp(WAIT_B, p + start, WAIT_LEN) == 0:
                    wait_at, wait_end = at + 1, end
        start = end + 1
    return text[wait_at:wait_end] if wait_at >= 0 else None


cdef object _wait_of_items(str text):
    """_wait_of by items, for a string wider than one byte a character."""
    cdef str item
    cdef Py_ssize_t at
    wait = None
    for item in text.split(SEP):
        if len(item) < 3:
            continue
        at = item.find(NV)
        if at < 0:
            continue
        name = item[:at]
        if name in SPECIAL:
            return GENERAL
        if name == WAIT:
            wait = item[at + 1:]
    return wait


cdef str _drop_wait(str raw, str wait):
    """drop_property(raw, "WAIT", wait) without its call where its first step decides (the item first, or
    after a separator, and whole): the same string, which drop_property stays the judge of otherwise."""
    cdef str item = f"{WAIT}{NV}{wait}"
    cdef Py_ssize_t n = len(item), size = len(raw), at, end
    if raw.startswith(item):
        at = 0
    else:
        at = raw.find(f"{SEP}{item}")
        if at < 0:
            return drop_property(raw, WAIT, wait)
        at += 1
    end = at + n
    if end == size:
        return raw[:at]
    if raw[end] == SEP:
        return raw[:at] + raw[end + 1:]
    return drop_property(raw, WAIT, wait)


cdef str _stored_properties(str text, wait, str cluster):
    """The properties a plain send stores: the client's string without WAIT (`wait` its value), then CLUSTER
    (SendProcessor._props_string)."""
    raw = text if wait is None else _drop_wait(text, wait)
    if raw and not raw.endswith(SEP):
        raw += SEP
    return f"{raw}{CLUSTER}{NV}{cluster}{SEP}"


cdef bytes _cluster_item(str cluster):
    """How stored properties end for this cluster (made once per name)."""
    item = CLUSTER_ITEMS.get(cluster)
    if item is None:
        item = CLUSTER_ITEMS[cluster] = f"{CLUSTER}{NV}{cluster}{SEP}".encode()
    return item


cdef bytes _answer(int64_t opaque, str msg_id, int64_t queue_id, int64_t queue_offset):
    """The frame RemotingServer writes for SendProcessor._response's SUCCESS answer to a JSON request: the
    header as _cframe.encode_parts writes it (its fixed fields, then extFields msgId, queueId, queueOffset),
    without the response, the dict and the encoder. None for a message id that is not short ASCII."""
    cdef char buf[8 + FIXED_FIELDS_SIZE + 300]  # the prefix, the fixed fields, extFields of up to 224 bytes
    cdef char *dst
    cdef Py_ssize_t n
    cdef const char *mid
    if not PyUnicode_IS_ASCII(msg_id) or len(msg_id) > 128:
        return None
    mid = PyUnicode_AsUTF8AndSize(msg_id, &n)  # upper-case hex digits: nothing to escape
    dst = put_text(put_fixed_fields(buf + 8, SUCCESS, b"JAVA", VERSION, opaque, RESPONSE),
                   b',"extFields":{"msgId":"')
    memcpy(dst, mid, n)
    dst = put_decimal(put_text(dst + n, b'","queueId":"'), queue_id)
    dst = put_text(put_decimal(put_text(dst, b'","queueOffset":"'), queue_offset), b'"}}')
    n = dst - buf - 8
    wr32(<unsigned char *>buf, n + 4)
    wr32(<unsigned char *>buf + 4, n)  # the serialize type in the high byte: JSON, 0
    return PyBytes_FromStringAndSize(buf, n + 8)


def answer_frame(int64_t opaque, str msg_id, int64_t queue_id, int64_t queue_offset):
    """_answer for SendProcessor: a SYNC_MASTER send answered once its slave has it."""
    return _answer(opaque, msg_id, queue_id, queue_offset)


cdef _on_put(stats, str topic, int64_t size):
    """BrokerStats.on_put of one message: inline in the second and the day its counters last counted, once the
    topic has its counter; the method itself otherwise (tests/unit/broker/test_csend.py compares the two)."""
    now = stats.clock()
    cdef int64_t sec = <int64_t>now
    counter = stats.topic_put.get(topic)
    total = stats.put_msgs
    if counter is None or now >= stats._day_end or total._sec != sec or counter._sec != sec:
        stats.on_put(topic, 1, size)
        return
    for c in (total, counter):
        cur = c._cur
        cur[0] += 1
        cur[1] += 1
        c.total += 1
    stats.put_bytes_total += size
    stats.put_times_total += 1
    sizes = stats.topic_put_bytes
    sizes[topic] = sizes.get(topic, 0) + size


cdef class SendV2:
    """SEND_MESSAGE_V2's processor: fast failure, then send_v2, then the processor's general path
    (SendProcessor.send_checked) for what it leaves. Fast failure is asked in Python only when its probe is
    overdue: before that no send has waited, which is all SendProcessor._busy would find."""

    cdef object proc

    def __init__(self, proc):
        self.proc = proc

    def __call__(self, conn, req):
        ff = self.proc.c.fast_failure
        due = ff._due
        if due is not None and ff._loop is not None and ff._loop.time() > due:
            busy = self.proc._busy(req)
            if busy is not None:
                return busy
        done = send_v2(self.proc, conn, req)
        return self.proc.send_checked(conn, req) if done is GENERAL else done


cdef object send_v2(proc, conn, req):
    """The answer (or the awaitable of a put that waits) to a plain SEND_MESSAGE_V2; None when the answer is
    written to `conn` already (or a oneway send needs none); GENERAL for the processor's general path."""
    cdef dict ext = req.ext_fields
    cdef int64_t queue_id, sys_flag, flag, times = 0, born, default_queue_nums
    cdef str topic
    topic = ext.get("b")
    if topic is None or "a" not in ext or "c" not in ext:
        return GENERAL
    # the default topic's queue count: only read when a topic is created, but it must parse
    default_queues = ext.get("d")
    if type(default_queues) is not str or not _digits(default_queues, &default_queue_nums):
        try:
            int(default_queues)
        except (ValueError, TypeError):
            return GENERAL
    if not (_int(ext.get("e"), &queue_id) and _int(ext.get("f"), &sys_flag) and _int(ext.get("h"), &flag)):
        return GENERAL
    if not _long(ext.get("g"), &born):
        return GENERAL
    times_text = ext.get("j")
    if times_text is not None and not _int(times_text, &times):
        return GENERAL
    if ext.get("l") is not None:
        return GENERAL
    body = req.body
    return _send(proc, conn, req, None, topic, queue_id, sys_flag, flag, born, times, ext.get("i") or "",
                 b"" if body is None else bytes(body), req.opaque, req.flag, req.serialize_type is JSON, None, False,
                 -1, None)


def send_record(SendV2 sv, conn, bytes record):
    """A front worker's record of a plain send (front/send_record.py) stored and answered as send_v2 does its
    request: None once done (answered, or a oneway send), (request, result) for the server to answer with
    the result, False for the frame path, before anything changed (a send send_v2 leaves to the general
    path, fast failure's probe overdue, the broker's cluster renamed since the worker started)."""
    cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(record)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(record), at, topic_len, props_len, keys_len, uniq_len
    # send_record.FIXED's fields, at their offsets (tests/unit/broker/front/test_send_record.py holds the two)
    if size < RECORD_FIXED:
        return False
    at = RECORD_FIXED + <uint32_t>rd32(p + 32)
    topic_len = <uint16_t>rd16(p + 36)
    props_len = <uint32_t>rd32(p + 38)
    keys_len = rd32(p + 54)
    uniq_len = rd32(p + 58)
    if at + topic_len + props_len + max(keys_len, 0) + max(uniq_len, 0) > size:
        return False
    proc = sv.proc
    ff = proc.c.fast_failure
    due = ff._due
    if due is not None and ff._loop is not None and ff._loop.time() > due:
        return False
    topic = PyUnicode_DecodeUTF8(<const char *>p + at, topic_len, NULL)
    at += topic_len
    stored = PyBytes_FromStringAndSize(<const char *>p + at, props_len)
    at += props_len
    keys = uniq = None
    if keys_len >= 0:
        keys = PyUnicode_DecodeUTF8(<const char *>p + at, keys_len, NULL)
        at += keys_len
    if uniq_len >= 0:
        uniq = PyUnicode_DecodeUTF8(<const char *>p + at, uniq_len, NULL)
        at += uniq_len
    body = PyBytes_FromStringAndSize(<const char *>p + at, size - at)
    done = _send(proc, conn, None, record, topic, rd32(p + 8), rd32(p + 12), rd32(p + 16), rd64(p + 20),
                 rd32(p + 28), None, body, rd32(p), rd32(p + 4), True, stored, p[62] != 0, rd32(p + 42),
                 (rd64(p + 46), keys, uniq))
    if done is None:
        return None
    if done is GENERAL:
        return False
    return done


cdef object _send(proc, conn, req, bytes record, str topic, int64_t queue_id, int64_t sys_flag, int64_t flag,
                  int64_t born, int64_t times, str text, bytes body, int64_t opaque, int64_t req_flag, bint json,
                  bytes stored, bint wait_false, int64_t body_crc, tuple dispatch):
    """send_v2 past its header: a request's fields (`req`, the client's properties `text`) or a record's (its
    properties as stored, WAIT=false, the body's CRC and the dispatch's values, all the worker's). A record's
    result other than None and GENERAL is (the request the record was, the result), the request made only
    then."""
    cdef str raw
    cdef dict props
    c = proc.c
    cfg = c.config
    if cfg.broker_role is SLAVE or not cfg.broker_permission & PERM_WRITE \
            or topic.startswith(RETRY_GROUP_TOPIC_PREFIX) or proc.topic_error(topic) is not None:
        return GENERAL
    tc = c.topics.table.get(topic)
    if tc is None or not tc.perm & PERM_WRITE or queue_id < 0 \
            or queue_id >= max(<int64_t>tc.read_queue_nums, <int64_t>tc.write_queue_nums):
        return GENERAL
    if topic in proc.not_allowed:
        return GENERAL
    if len(body) > cfg.max_message_size:
        return GENERAL
    cluster = cfg.broker_cluster_name
    if stored is None:
        wait = _wait_of(text)
        if wait is GENERAL:
            return GENERAL
        raw = _stored_properties(text, wait, cluster)
        wait_false = wait == "false"
    elif not stored.endswith(_cluster_item(cluster)):
        return GENERAL  # made before the cluster's name changed
    addr = (cfg.broker_ip1, c.server.port)  # the broker_addr property's parts, without its call
    store_host = STORE_HOSTS.get(addr)
    if store_host is None:
        store_host = STORE_HOSTS[addr] = proc.split_host(c.broker_addr)
    born_host = proc.split_host(conn.peer)
    store = c.store
    put = None
    if put_plain is not None and c.topics.unwritten is None:
        later = json and not req_flag & ONEWAY  # a SYNC_MASTER's wait left to ReplicatedAnswer
        if stored is None:
            put = put_plain(store, topic, body, queue_id, flag, sys_flag, born, born_host, store_host, times, raw,
                            wait_false, later)
        else:
            put = put_prepared(store, topic, body, queue_id, flag, sys_flag, born, born_host, store_host, times,
                               stored, wait_false, body_crc, dispatch, later)
    if put is None:  # the store's general put, of the message
        if stored is not None:
            req = command_of(record)
            text = req.ext_fields.get("i") or ""
            raw = stored.decode()
        props = P.string_to_properties(text)
        props[CLUSTER] = cluster
        put = store.put_message_inline(MessageExtBrokerInner(topic, body, flag, props, queue_id, sys_flag, born,
                                                             born_host, store_host, times, 0, raw))
    if type(put) is tuple:
        if len(<tuple>put) == 5:  # a SYNC_MASTER's wait for its slave: answered when it ends
            msg_id, queue_offset, size, phys, store_ts = put
            store.when_replicated(phys + size, ReplicatedAnswer(proc, conn, req, record, opaque, topic, queue_id, msg_id,
                                                                queue_offset, phys, size, store_ts))
            return None
        msg_id, queue_offset, size = put
    else:
        if req is None:
            req = command_of(record)
        if type(put) is not PutMessageResult or c.topics.unwritten is not None:
            return _result(record, req, proc._later(conn, req, topic, put, queue_id, None))
        append = put.append
        if put.status is not PUT_OK or append is None or append.phys_offsets:
            return _result(record, req, proc._response(req, topic, put, queue_id))
        msg_id, queue_offset, size = append.msg_id, append.logics_offset, append.wrote_bytes
    _on_put(c.stats, topic, size)
    if req_flag & ONEWAY:
        return None
    frame = _answer(opaque, msg_id, queue_id, queue_offset) if json else None
    if frame is None:
        if req is None:
            req = command_of(record)
        return _result(record, req, req.response(SUCCESS, None, {"msgId": msg_id, "queueId": str(queue_id),
                                                                 "queueOffset": str(queue_offset)}))
    conn.send_frame(frame)
    return None


cdef class ReplicatedAnswer:
    """A SYNC_MASTER send's answer, the callback of its wait for the slave (MessageStore.when_replicated): the common
    SUCCESS frame, or SendProcessor._response's answer for any other outcome, written inside the ack's (or the
    timer's) handling: no future, callback or loop turn per send between the slave's ack and the answer."""

    cdef object proc, conn, req, msg_id
    cdef bytes record
    cdef str topic
    cdef int64_t opaque, queue_id, queue_offset, phys, size, store_ts

    def __init__(self, proc, conn, req, bytes record, int64_t opaque, str topic, int64_t queue_id, str msg_id,
                 int64_t queue_offset, int64_t phys, int64_t size, int64_t store_ts):
        """`req` the request, or None and the front worker's `record` of it (its command made only if needed)."""
        self.proc, self.conn, self.req, self.record, self.opaque = proc, conn, req, record, opaque
        self.topic, self.queue_id, self.msg_id, self.queue_offset = topic, queue_id, msg_id, queue_offset
        self.phys, self.size, self.store_ts = phys, size, store_ts

    def __call__(self, status):
        if status is PUT_OK:
            frame = _answer(self.opaque, self.msg_id, self.queue_id, self.queue_offset)
            if frame is not None:
                _on_put(self.proc.c.stats, self.topic, self.size)
                self.conn.send_frame(frame)  # dropped if the producer has left
                return
        req = self.req if self.req is not None else command_of(self.record)
        append = AppendMessageResult(self.phys, self.size, self.msg_id, self.store_ts, self.queue_offset, 1)
        try:
            reply(self.conn, req, self.proc._response(req, self.topic, PutMessageResult(status, append), self.queue_id))
        except Exception as exc:  # as any processor's failure: the request's answer says so
            self.proc.c.server.failed(self.conn, req, exc)


cdef inline object _result(bytes record, req, result):
    """A request's result as send_v2 returns it; a record's with its request."""
    return result if record is None or result is None else (req, result)
