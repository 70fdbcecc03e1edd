# cython: language_level=3, boundscheck=False, wraparound=False
"""A front worker's cutting of its clients' streams, compiled: frames, and records of the plain sends
(front/send_record.py's layout and SendSplitter, which runs this loop).

A SEND_MESSAGE_V2 frame's JSON header is read in place (`_scanned_record`): the usual header of our clients,
Java's and the C++ client's, no command, no map of its fields, no copy of the frame or its body. Any other form
(an unusual number, a language name, non-ASCII text, a repeated field) is left to the command's reading
(`_record`, through the compiled frame loop), which is what makes every record the one the command's reading
would make; tests/unit/broker/front/test_header_scan.py holds the two to the same bytes. The send's numbers and
properties are read as the compiled send reads them (processors/_csend.pxd).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport int64_t, uint32_t
from libc.string cimport memcmp, memcpy

from mqtools.common._layout cimport rd32, wr16, wr32, wr64
from mqtools.remoting._json cimport json_int, json_key, json_plain_string, json_unescape, json_ws
from mqtools.server.broker.processors._csend cimport (_decimal, _digits, _int, _is_general, _long, _stored_properties,
                                                      _wait_of)

cdef extern from "zlib.h":
    unsigned long zcrc32 "crc32"(unsigned long crc, const unsigned char *buf, unsigned int length) nogil

cdef extern from "Python.h":
    object PyUnicode_DecodeASCII(const char *s, Py_ssize_t size, const char *errors)

from mqtools.common import javanum, speedups
from mqtools.common.hashing import cached_java_hash
from mqtools.common.properties import dispatch_values
from mqtools.remoting.codes import RequestCode, SerializeType
from mqtools.remoting.command import _LANG_BY_NAME, FLAG_RESPONSE
from mqtools.remoting.errors import ProtocolError
from mqtools.remoting.frame import FrameDecoder
from mqtools.server.broker.front.send_record import FIXED_SIZE, SEND_V2_PREFIX, SendSplitter

cdef int64_t INT_MIN = javanum.INT_MIN
cdef int64_t INT_MAX = javanum.INT_MAX
cdef int64_t RESPONSE = FLAG_RESPONSE
cdef int64_t SEND_V2_CODE = RequestCode.SEND_MESSAGE_V2
cdef object JSON = SerializeType.JSON
cdef int JSON_CODE = SerializeType.JSON
cdef Py_ssize_t RECORD_FIXED = FIXED_SIZE
#: What the splitter hands on (SendSplitter's event kinds), and the header start it reads.
cdef str DATA_EVENT = SendSplitter.DATA
cdef str SEND_EVENT = SendSplitter.SEND
cdef bytes SEND_PREFIX = SEND_V2_PREFIX
cdef const char *SEND_PREFIX_P = SEND_PREFIX
cdef Py_ssize_t SEND_PREFIX_LEN = len(SEND_PREFIX)
#: The compiled frame loop (_cframe.frames) where built, else FrameDecoder's.
cdef object decode_frames = getattr(speedups.compiled("mqtools.remoting._cframe"), "frames", None) \
    or (lambda frame, max_frame: (FrameDecoder(max_frame).feed(frame), len(frame)))
#: What _scanned_record returns for a header it leaves to the command's reading.
cdef object SCAN_OTHER = object()
#: The language names a JSON header may give, as its bytes.
cdef frozenset LANGUAGES = frozenset(name.encode() for name in _LANG_BY_NAME)


def split_sends(bytes buf, Py_ssize_t max_frame, str cluster):
    """send_record.SendSplitter.feed's loop over `buf`, in a front worker of a broker of `cluster`: (its events,
    the bytes they took, whether a frame's length was out of range)."""
    cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(buf)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(buf), pos = 0, relay_from = 0, end, header_len
    cdef int64_t length
    cdef uint32_t ori
    cdef list out = []
    cdef bint broken = False
    while size - pos >= 8:
        length = rd32(p + pos)
        if length < 4 or length > max_frame:
            broken = True
            pos = size
            break
        end = pos + 4 + length
        if end > size:
            break
        ori = <uint32_t>rd32(p + pos + 4)
        header_len = ori & 0xFFFFFF
        if ori >> 24 == JSON_CODE and pos + 8 + header_len <= end and header_len >= SEND_PREFIX_LEN \
                and memcmp(p + pos + 8, SEND_PREFIX_P, SEND_PREFIX_LEN) == 0:
            record = _scanned_record(p + pos, end - pos, header_len, cluster)
            if record is SCAN_OTHER:
                record = _record(buf[pos:end], header_len, max_frame, cluster)
            if record is not None:
                if relay_from < pos:
                    out.append((DATA_EVENT, buf[relay_from:pos]))
                out.append((SEND_EVENT, record))
                relay_from = end
        pos = end
    if relay_from < pos:
        out.append((DATA_EVENT, buf[relay_from:pos]))
    return out, pos, broken


def scan_record(bytes frame, str cluster):
    """One SEND_MESSAGE_V2 frame's record as the scan makes it: the record, None (relayed as its frame), or
    NotImplemented for a header the scan leaves to the command's reading (command_record)."""
    cdef Py_ssize_t header_len = _frame_header_len(frame)
    record = _scanned_record(<const unsigned char *>PyBytes_AS_STRING(frame), len(frame), header_len, cluster)
    return NotImplemented if record is SCAN_OTHER else record


def command_record(bytes frame, Py_ssize_t max_frame, str cluster):
    """The same frame's record through the command's reading, the reference the scan is held to."""
    return _record(frame, _frame_header_len(frame), max_frame, cluster)


cdef Py_ssize_t _frame_header_len(bytes frame) except -1:
    cdef Py_ssize_t header_len
    if len(frame) < 8:
        raise ValueError("not a frame")
    header_len = rd32(<const unsigned char *>PyBytes_AS_STRING(frame) + 4) & 0xFFFFFF
    if header_len > len(frame) - 8:
        raise ValueError("not a frame")
    return header_len


cdef struct Text:
    Py_ssize_t at  # the first character (past the opening quote); -1: the field is absent
    Py_ssize_t end  # the closing quote
    bint escaped


cdef inline bint _plain_long(const unsigned char *p, Text t, int64_t *out) noexcept nogil:
    """A field's text as _digits reads it (_csend's _decimal), an unescaped one only."""
    return t.at >= 0 and not t.escaped and _decimal(p + t.at, t.end - t.at, out)


cdef inline bint _plain_int(const unsigned char *p, Text t, int64_t *out) noexcept nogil:
    return _plain_long(p, t, out) and INT_MIN <= out[0] <= INT_MAX


cdef Py_ssize_t _scan_ext(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, Text *fields) noexcept nogil:
    """extFields at p[i], its one-letter fields' texts noted in `fields` (a..z); the end, or -1 for a form left to
    the command's reading (a value that is not a plain string, a key with an escape, a one-letter key twice)."""
    cdef Py_ssize_t at, end, k
    cdef bint escaped
    if i >= n or p[i] != 123:
        return -1
    i = json_ws(p, i + 1, n)
    if i < n and p[i] == 125:
        return i + 1
    while True:
        if i >= n or p[i] != 34:
            return -1
        at = i + 1
        i = json_plain_string(p, i, n, &escaped)
        if i < 0 or escaped:
            return -1
        k = -1
        if i - at == 2 and 97 <= p[at] <= 122:
            k = p[at] - 97
            if fields[k].at >= 0:
                return -1
        i = json_ws(p, i, n)
        if i >= n or p[i] != 58:
            return -1
        i = json_ws(p, i + 1, n)
        if i >= n or p[i] != 34:
            return -1
        end = json_plain_string(p, i, n, &escaped)
        if end < 0:
            return -1
        if k >= 0:
            fields[k].at, fields[k].end, fields[k].escaped = i + 1, end - 1, escaped
        i = json_ws(p, end, n)
        if i < n and p[i] == 44:
            i = json_ws(p, i + 1, n)
            continue
        if i < n and p[i] == 125:
            return i + 1
        return -1


cdef bint _scan_header(const unsigned char *p, Py_ssize_t n, int64_t *opaque, int64_t *flag, Text *fields) noexcept:
    """A send's JSON header read in place: the numbers a record needs and the extFields' one-letter texts. False
    for any header _cframe's reader would not read itself, and for a language, a repeated extFields or a form
    this scan leaves to the command's reading, which decides those."""
    cdef Py_ssize_t i = json_ws(p, 0, n), at, length, end
    cdef int64_t value
    cdef bint escaped, ext_seen = False
    if i >= n or p[i] != 123:
        return False
    i = json_ws(p, i + 1, n)
    while True:
        if i >= n or p[i] != 34:
            return False
        at = i + 1
        i = json_plain_string(p, i, n, &escaped)
        if i < 0 or escaped:
            return False
        length = i - 1 - at
        i = json_ws(p, i, n)
        if i >= n or p[i] != 58:
            return False
        i = json_ws(p, i + 1, n)
        if i >= n:
            return False
        if json_key(p, at, length, b"extFields", 9):
            if ext_seen:
                return False
            ext_seen = True
            i = _scan_ext(p, i, n, fields)
            if i < 0:
                return False
        elif json_key(p, at, length, b"language", 8):
            if p[i] != 34:
                return False
            end = json_plain_string(p, i, n, &escaped)
            if end < 0 or escaped or PyBytes_FromStringAndSize(<const char *>p + i + 1, end - i - 2) not in LANGUAGES:
                return False
            i = end
        elif p[i] == 34:  # serializeTypeCurrentRPC, remark, or a field no decoder reads
            i = json_plain_string(p, i, n, &escaped)
            if i < 0:
                return False
        elif p[i] == 110 and i + 4 <= n and memcmp(p + i, b"null", 4) == 0 and json_key(p, at, length, b"remark", 6):
            i += 4
        else:
            if not json_int(p, &i, n, &value) or not INT_MIN <= value <= INT_MAX:
                return False
            if json_key(p, at, length, b"opaque", 6):
                opaque[0] = value
            elif json_key(p, at, length, b"flag", 4):
                flag[0] = value
            elif json_key(p, at, length, b"code", 4):
                if value != SEND_V2_CODE:  # a second code: the last one is the request's
                    return False
            elif not json_key(p, at, length, b"version", 7):
                return False
        i = json_ws(p, i, n)
        if i < n and p[i] == 44:
            i = json_ws(p, i + 1, n)
            continue
        if i < n and p[i] == 125:
            break
        return False
    return json_ws(p, i + 1, n) == n


cdef object _scanned_record(const unsigned char *frame, Py_ssize_t size, Py_ssize_t header_len, str cluster):
    """_record of a frame, read straight from its bytes (no command, no map of its fields, no copies of the frame
    or its body): the usual header of our clients, Java's and the C++ client's. SCAN_OTHER for a header it leaves
    to _record: then the command's reading decides, as it does for every frame."""
    cdef const unsigned char *p = frame + 8
    cdef Text fields[26]
    cdef int64_t opaque = 0, cmd_flag = 0, queue_id, sys_flag, flag, born, times = 0, default_queue_nums
    cdef Py_ssize_t k
    for k in range(26):
        fields[k].at = -1
    if not _scan_header(p, header_len, &opaque, &cmd_flag, fields):
        return SCAN_OTHER
    if cmd_flag & RESPONSE or fields[0].at < 0 or fields[2].at < 0 or fields[11].at >= 0:  # a, c; l
        return None
    cdef Text topic = fields[1], props = fields[8]
    if topic.at < 0 or topic.escaped or not _plain_long(p, fields[3], &default_queue_nums):
        return SCAN_OTHER
    if not (_plain_int(p, fields[4], &queue_id) and _plain_int(p, fields[5], &sys_flag)
            and _plain_int(p, fields[7], &flag) and _plain_long(p, fields[6], &born)):
        return SCAN_OTHER
    if fields[9].at >= 0 and not _plain_int(p, fields[9], &times):
        return SCAN_OTHER
    if props.at < 0:
        text = ""
    elif props.escaped:
        text = json_unescape(p + props.at, props.end - props.at)
        if text is None:
            return SCAN_OTHER
    else:
        text = PyUnicode_DecodeASCII(<const char *>p + props.at, props.end - props.at, NULL)
    return _make_record(opaque, cmd_flag, queue_id, sys_flag, flag, born, times, p, header_len,
                        PyBytes_FromStringAndSize(<const char *>p + topic.at, topic.end - topic.at), text, cluster,
                        p + header_len, size - 8 - header_len)


cdef object _record(bytes frame, Py_ssize_t header_len, Py_ssize_t max_frame, str cluster):
    """The record of one frame (front/send_record.py's layout), or None to relay the frame: what send_v2 reads
    of its header, and what the store's put would work out of the message (its stored properties, its body's
    CRC, the dispatch's values)."""
    cdef int64_t queue_id, sys_flag, flag, born, times = 0, default_queue_nums
    try:
        commands, _ = decode_frames(frame, max_frame)
    except ProtocolError:
        return None
    cmd = commands[0]
    cdef dict ext = cmd.ext_fields
    if cmd.code != SEND_V2_CODE or cmd.flag & RESPONSE or cmd.serialize_type is not JSON or "a" not in ext \
            or "c" not in ext \
            or ext.get("l") is not None:
        return None
    topic = ext.get("b")
    default_queues = ext.get("d")
    if type(topic) is not str or type(default_queues) is not str:
        return None
    if not _digits(default_queues, &default_queue_nums):
        try:
            int(default_queues)
        except ValueError:
            return None
    if not (_int(ext.get("e"), &queue_id) and _int(ext.get("f"), &sys_flag) and _int(ext.get("h"), &flag)
            and _long(ext.get("g"), &born)):
        return None
    times_text = ext.get("j")
    if times_text is not None and not _int(times_text, &times):
        return None
    text = ext.get("i") or ""
    if type(text) is not str:
        return None
    try:  # a lone surrogate (a JSON escape) has no UTF-8: such a send goes as its frame
        topic_b = topic.encode()
    except UnicodeEncodeError:
        return None
    body = cmd.body
    body = b"" if body is None else bytes(body)
    return _make_record(cmd.opaque, cmd.flag, queue_id, sys_flag, flag, born, times,
                        <const unsigned char *>PyBytes_AS_STRING(frame) + 8, header_len, topic_b, text, cluster,
                        <const unsigned char *>PyBytes_AS_STRING(body), len(body))


cdef object _make_record(int64_t opaque, int64_t cmd_flag, int64_t queue_id, int64_t sys_flag, int64_t flag,
                         int64_t born, int64_t times, const unsigned char *header, Py_ssize_t header_len,
                         bytes topic_b, str text, str cluster, const unsigned char *body, Py_ssize_t body_len):
    """The record of a send's fields (front/send_record.py's layout); None to relay its frame (properties that ask
    more than a plain put, text without UTF-8)."""
    cdef Py_ssize_t n
    cdef unsigned char *o
    wait = _wait_of(text)
    if _is_general(wait):
        return None
    try:  # a lone surrogate (a JSON escape) has no UTF-8: such a send goes as its frame
        stored = _stored_properties(text, wait, cluster).encode()
    except UnicodeEncodeError:
        return None
    if len(topic_b) > 0xFFFF:
        return None
    tag, keys, uniq = dispatch_values(stored)
    keys_b = None if keys is None else keys.encode()
    uniq_b = None if uniq is None else uniq.encode()
    n = RECORD_FIXED + header_len + len(topic_b) + len(stored) + (0 if keys_b is None else len(keys_b)) \
        + (0 if uniq_b is None else len(uniq_b)) + body_len
    record = PyBytes_FromStringAndSize(NULL, n)
    o = <unsigned char *>PyBytes_AS_STRING(record)
    wr32(o, opaque)
    wr32(o + 4, cmd_flag)
    wr32(o + 8, queue_id)
    wr32(o + 12, sys_flag)
    wr32(o + 16, flag)
    wr64(o + 20, born)
    wr32(o + 28, times)
    wr32(o + 32, header_len)
    wr16(o + 36, len(topic_b))
    wr32(o + 38, len(stored))
    wr32(o + 42, (zcrc32(0, body, body_len) & 0x7FFFFFFF) if body_len else 0)
    wr64(o + 46, cached_java_hash(tag) if tag else 0)
    wr32(o + 54, -1 if keys_b is None else len(keys_b))
    wr32(o + 58, -1 if uniq_b is None else len(uniq_b))
    o[62] = wait == "false"
    o += RECORD_FIXED
    memcpy(o, header, header_len)
    o += header_len
    for part in (topic_b, stored, keys_b, uniq_b):
        if part is not None:
            memcpy(o, PyBytes_AS_STRING(part), len(part))
            o += len(part)
    memcpy(o, body, body_len)
    return record
