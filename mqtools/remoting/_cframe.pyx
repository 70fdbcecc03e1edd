# cython: language_level=3, boundscheck=False, wraparound=False
"""Frames to commands and commands to frames, compiled: every request and answer of every connection.

frame.py's FrameDecoder and command.py's encoders are the source of truth and what runs without this module
(not built, or MQ_PURE_PYTHON set). `frames` is FrameDecoder.feed's loop over complete frames; a JSON header
whose fields are all of the types peers send (int numbers, string extFields, a language name) is decoded here,
any other (ROCKETMQ headers, numbers sent as other types) by command.py's decoders, which also name every fault.
`encode_parts` is RemotingCommand.encode_parts. tests/unit/remoting/test_cframe.py holds both forms to the same
commands, bytes and errors.
"""

from cpython.buffer cimport PyBUF_WRITE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.memoryview cimport PyMemoryView_FromMemory
from libc.stdint cimport int64_t
from libc.string cimport memcmp

from mqtools.common._layout cimport rd32, wr32
from mqtools.remoting._header cimport FIXED_FIELDS_SIZE, LANGUAGE_MAX, put_fixed_fields
from mqtools.remoting._json cimport json_int as _number, json_key as _key, json_string as _string, json_ws as _ws

import orjson

from mqtools.common import javanum
from mqtools.remoting import command as C
from mqtools.remoting.codes import SerializeType
from mqtools.remoting.errors import ProtocolError

cdef object RemotingCommand = C.RemotingCommand
cdef object decode_header = C.decode_header
cdef object encode_rocketmq_header = C.encode_rocketmq_header
cdef object loads = orjson.loads
cdef object dumps = orjson.dumps
cdef object JSONDecodeError = orjson.JSONDecodeError
cdef dict LANG_BY_NAME = C._LANG_BY_NAME
#: The language names as the JSON header spells them, as bytes for encode_parts.
cdef dict NAME_BY_LANG = {lang: name.encode() for lang, name in C._NAME_BY_LANG.items()}
cdef object JSON = SerializeType.JSON
cdef object ROCKETMQ = SerializeType.ROCKETMQ
cdef int JSON_TYPE = SerializeType.JSON
cdef int64_t INT_MIN = javanum.INT_MIN
cdef int64_t INT_MAX = javanum.INT_MAX


cdef int64_t JAVA_LANG = LANG_BY_NAME["JAVA"]


cdef object _read_json_command(const unsigned char *p, Py_ssize_t n):
    """The usual JSON header read straight into a command (what _json_command makes of it through orjson), or
    None for any header it leaves to that path: a flat object of these fields, extFields of strings only."""
    cdef Py_ssize_t i = _ws(p, 0, n), at, length
    cdef int64_t value, code = 0, opaque = 0, flag = 0, version = 0
    cdef int64_t *field
    language = JAVA_LANG
    remark = None
    ext = None
    if i >= n or p[i] != 123:
        return None
    i = _ws(p, i + 1, n)
    if i < n and p[i] == 125:
        i += 1
    else:
        while True:
            if i >= n or p[i] != 34:
                return None
            at = i + 1
            i = at
            while i < n and 32 <= p[i] < 127 and p[i] != 34 and p[i] != 92:
                i += 1
            if i >= n or p[i] != 34:
                return None  # an escape, a control character or a byte past ASCII in a key: orjson's
            length = i - at
            i = _ws(p, i + 1, n)
            if i >= n or p[i] != 58:
                return None
            i = _ws(p, i + 1, n)
            if i >= n:
                return None
            field = NULL
            if _key(p, at, length, b"code", 4):
                field = &code
            elif _key(p, at, length, b"opaque", 6):
                field = &opaque
            elif _key(p, at, length, b"flag", 4):
                field = &flag
            elif _key(p, at, length, b"version", 7):
                field = &version
            if field != NULL:
                if not _number(p, &i, n, &value) or not INT_MIN <= value <= INT_MAX:
                    return None
                field[0] = value
            elif _key(p, at, length, b"extFields", 9):
                ext = _ext(p, &i, n)
                if ext is None:
                    return None
            elif _key(p, at, length, b"language", 8):
                if p[i] != 34:
                    return None
                name = _string(p, &i, n)
                language = LANG_BY_NAME.get(name) if name is not None else None
                if language is None:
                    return None
            elif _key(p, at, length, b"remark", 6) and p[i] == 34:
                remark = _string(p, &i, n)
                if remark is None:
                    return None
            elif p[i] == 34:  # serializeTypeCurrentRPC, or a field no decoder reads
                if _string(p, &i, n) is None:
                    return None
            elif p[i] == 110 and i + 4 <= n and memcmp(p + i, b"null", 4) == 0:
                if _key(p, at, length, b"remark", 6):
                    remark = None
                i += 4
            elif not _number(p, &i, n, &value) or _key(p, at, length, b"remark", 6):
                return None
            i = _ws(p, i, n)
            if i < n and p[i] == 44:
                i = _ws(p, i + 1, n)
                continue
            if i < n and p[i] == 125:
                i += 1
                break
            return None
    if _ws(p, i, n) != n:
        return None
    return RemotingCommand(code, {} if ext is None else ext, None, remark, opaque, flag, language, version, JSON)


cdef object _ext(const unsigned char *p, Py_ssize_t *pos, Py_ssize_t n):
    """extFields: an object of string values (a new map for null), pos moved past it; None for anything else."""
    cdef Py_ssize_t i = pos[0]
    cdef dict ext = {}
    if p[i] == 110 and i + 4 <= n and memcmp(p + i, b"null", 4) == 0:
        pos[0] = i + 4
        return ext
    if p[i] != 123:
        return None
    i = _ws(p, i + 1, n)
    if i < n and p[i] == 125:
        pos[0] = i + 1
        return ext
    while True:
        if i >= n or p[i] != 34:
            return None
        key = _string(p, &i, n)
        if key is None:
            return None
        i = _ws(p, i, n)
        if i >= n or p[i] != 58:
            return None
        i = _ws(p, i + 1, n)
        if i >= n or p[i] != 34:
            return None
        value = _string(p, &i, n)
        if value is None:
            return None
        ext[key] = value
        i = _ws(p, i, n)
        if i < n and p[i] == 44:
            i = _ws(p, i + 1, n)
            continue
        if i < n and p[i] == 125:
            pos[0] = i + 1
            return ext
        return None


cdef object _json_command(object header):
    """decode_json_header for the usual header; command.py's for anything else (and its exact error)."""
    try:
        obj = loads(header)
    except JSONDecodeError:
        return decode_header(JSON_TYPE, header)
    if type(obj) is not dict:
        return decode_header(JSON_TYPE, header)
    get = (<dict>obj).get
    code = get("code", 0)
    opaque = get("opaque", 0)
    flag = get("flag", 0)
    version = get("version", 0)
    if type(code) is not int or type(opaque) is not int or type(flag) is not int or type(version) is not int \
            or not (INT_MIN <= code <= INT_MAX and INT_MIN <= opaque <= INT_MAX and INT_MIN <= flag <= INT_MAX
                    and INT_MIN <= version <= INT_MAX):
        return decode_header(JSON_TYPE, header)
    ext = get("extFields") or {}
    if type(ext) is not dict:
        return decode_header(JSON_TYPE, header)
    for value in (<dict>ext).values():
        if type(value) is not str:
            return decode_header(JSON_TYPE, header)
    language = get("language", "JAVA")
    lang = LANG_BY_NAME.get(language) if type(language) is str else None
    if lang is None:
        return decode_header(JSON_TYPE, header)
    remark = get("remark")
    return RemotingCommand(code, ext, None, None if remark is None else str(remark), opaque, flag, lang, version,
                           JSON)


def frames(buf, Py_ssize_t max_frame):
    """(the commands of the complete frames at the start of `buf`, the bytes they took): FrameDecoder.feed's
    loop. ProtocolError, as it raises it, for a frame length out of range or a header longer than its frame."""
    cdef const unsigned char[:] view = buf
    cdef Py_ssize_t size = view.shape[0], pos = 0, end, hstart, hend
    cdef int64_t length, ori, header_len
    cdef list out = []
    while size - pos >= 4:
        length = rd32(&view[pos])
        if length < 4:
            raise ProtocolError(f"frame length {length} is too small")
        if length > max_frame:
            raise ProtocolError(f"frame length {length} exceeds the {max_frame} byte limit")
        end = pos + 4 + length
        if end > size:
            break
        ori = rd32(&view[pos + 4])
        header_len = ori & 0xFFFFFF
        hstart = pos + 8
        hend = hstart + header_len
        if hend > end:
            raise ProtocolError(f"header length {header_len} exceeds the frame")
        if (ori >> 24) & 0xFF == JSON_TYPE:
            cmd = _read_json_command(&view[hstart], hend - hstart) if hend > hstart else None
            if cmd is None:
                cmd = _json_command(buf[hstart:hend])
        else:
            cmd = decode_header((ori >> 24) & 0xFF, buf[hstart:hend])
        if end > hend:
            cmd.body = PyBytes_FromStringAndSize(<const char *>&view[hend], end - hend)
        out.append(cmd)
        pos = end
    return out, pos


def empty_bytes(Py_ssize_t size):
    """(a new bytes object of `size` bytes, a writable view of them) for FrameDecoder to read a large body into:
    the body is bytes, as every other body is, with no copy after the socket's read. Only the decoder holds the
    object until the view is released and every byte is written, as CPython's own socket.recv fills a new bytes
    object before anyone sees it."""
    body = PyBytes_FromStringAndSize(NULL, size)
    return body, PyMemoryView_FromMemory(PyBytes_AS_STRING(body), size, PyBUF_WRITE)


assert max(map(len, NAME_BY_LANG.values())) <= LANGUAGE_MAX  # what put_fixed_fields has room for


def encode_parts(cmd):
    """RemotingCommand.encode_parts: (length prefix + header, the body or None). The JSON header is written
    as orjson writes encode_json_header's dict (its keys in that order, no spaces), orjson writing only the
    remark and the extFields; test_cframe.py compares the bytes."""
    cdef Py_ssize_t body_len, header_len
    cdef int64_t code, version, opaque, flag
    cdef char fixed[FIXED_FIELDS_SIZE]
    cdef Py_ssize_t fixed_len
    cdef unsigned char prefix[8]
    serialize_type = cmd.serialize_type
    if serialize_type == ROCKETMQ:
        header = encode_rocketmq_header(cmd)
    else:
        code, version, opaque, flag = cmd.code, cmd.version, cmd.opaque, cmd.flag
        language = NAME_BY_LANG.get(cmd.language, b"OTHER")
        fixed_len = put_fixed_fields(fixed, code, language, version, opaque, flag) - fixed
        parts = [PyBytes_FromStringAndSize(fixed, fixed_len)]
        remark = cmd.remark
        if remark is not None:
            parts.append(b',"remark":')
            parts.append(dumps(remark))
        ext = cmd.ext_fields
        if ext:
            parts.append(b',"extFields":')
            parts.append(dumps(ext))
        parts.append(b"}")
        header = b"".join(parts)
    body = cmd.body
    body_len = len(body) if body is not None else 0
    header_len = PyBytes_GET_SIZE(header)
    wr32(prefix, 4 + header_len + body_len)
    wr32(prefix + 4, (<int64_t>serialize_type << 24) | header_len)
    return PyBytes_FromStringAndSize(<char *>prefix, 8) + header, body if body_len else None
