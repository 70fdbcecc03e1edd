# cython: language_level=3, boundscheck=False, wraparound=False
"""Frames to commands and commands to frames, compiled: every request and answer of every connection.

frame.py's FrameDecoder and command.py's encoders are the source of truth and what runs without this module
(not built, or MQ_PURE_PYTHON set). `frames` is FrameDecoder.feed's loop over complete frames; a JSON header
whose fields are all of the types peers send (int numbers, string extFields, a language name) is decoded here,
any other (ROCKETMQ headers, numbers sent as other types) by command.py's decoders, which also name every fault.
`encode_parts` is RemotingCommand.encode_parts. tests/unit/remoting/test_cframe.py holds both forms to the same
commands, bytes and errors.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport int64_t, uint32_t
from libc.stdio cimport snprintf

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
#: The language names as the JSON header spells them, ready for snprintf.
cdef dict NAME_BY_LANG = {lang: name.encode() for lang, name in C._NAME_BY_LANG.items()}
cdef object JSON = SerializeType.JSON
cdef object ROCKETMQ = SerializeType.ROCKETMQ
cdef int JSON_TYPE = SerializeType.JSON
cdef int64_t INT_MIN = javanum.INT_MIN
cdef int64_t INT_MAX = javanum.INT_MAX


cdef inline void _wr32(unsigned char *p, int64_t v) noexcept nogil:
    p[0] = (v >> 24) & 0xFF
    p[1] = (v >> 16) & 0xFF
    p[2] = (v >> 8) & 0xFF
    p[3] = v & 0xFF


cdef inline int64_t _rd32(const unsigned char *p) noexcept nogil:
    return <int64_t><int>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3])


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
    cdef bint is_bytes = type(buf) is bytes
    while size - pos >= 4:
        length = _rd32(&view[pos])
        if length < 4:
            raise ProtocolError(f"frame length {length} is too small")
        if length > max_frame:
            raise ProtocolError(f"frame length {length} exceeds the {max_frame} byte limit")
        end = pos + 4 + length
        if end > size:
            break
        ori = _rd32(&view[pos + 4])
        header_len = ori & 0xFFFFFF
        hstart = pos + 8
        hend = hstart + header_len
        if hend > end:
            raise ProtocolError(f"header length {header_len} exceeds the frame")
        if (ori >> 24) & 0xFF == JSON_TYPE:
            cmd = _json_command(buf[hstart:hend])
        else:
            cmd = decode_header((ori >> 24) & 0xFF, buf[hstart:hend])
        if end > hend:
            cmd.body = buf[hend:end] if is_bytes else bytes(view[hend:end])
        out.append(cmd)
        pos = end
    return out, pos


def encode_parts(cmd):
    """RemotingCommand.encode_parts: (length prefix + header, the body or None). The JSON header is written
    as orjson writes encode_json_header's dict (its keys in that order, no spaces), orjson writing only the
    remark and the extFields; test_cframe.py compares the bytes."""
    cdef Py_ssize_t body_len, header_len
    cdef int64_t code, version, opaque, flag
    cdef char fixed[200]
    cdef int fixed_len
    cdef unsigned char prefix[8]
    serialize_type = cmd.serialize_type
    if serialize_type == ROCKETMQ:
        header = encode_rocketmq_header(cmd)
    else:
        code, version, opaque, flag = cmd.code, cmd.version, cmd.opaque, cmd.flag
        language = NAME_BY_LANG.get(cmd.language, b"OTHER")
        fixed_len = snprintf(fixed, sizeof(fixed),
                             b'{"code":%lld,"language":"%s","version":%lld,"opaque":%lld,"flag":%lld,'
                             b'"serializeTypeCurrentRPC":"JSON"', <long long>code, <char *>language,
                             <long long>version, <long long>opaque, <long long>flag)
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
    _wr32(prefix, 4 + header_len + body_len)
    _wr32(prefix + 4, (<int64_t>serialize_type << 24) | header_len)
    return PyBytes_FromStringAndSize(<char *>prefix, 8) + header, body if body_len else None
