"""RemotingCommand: one request or response, with RocketMQ's two header serializations.

Frame layout (all big-endian):
    int32 length            bytes that follow this field
    int32 serialize|hlen    high byte: serialize type (0 JSON, 1 ROCKETMQ); low 24 bits: header length
    header                  JSON object or the binary ROCKETMQ layout
    body                    the rest (length - 4 - hlen bytes)
"""

from __future__ import annotations

import itertools
import struct
from dataclasses import dataclass, field

import orjson

from mqtools.common.javanum import INT_MAX, INT_MIN
from mqtools.remoting.codes import PROTOCOL_VERSION, LanguageCode, SerializeType
from mqtools.remoting.errors import ProtocolError

FLAG_RESPONSE = 1
FLAG_ONEWAY = 2

_LANG_BY_NAME = {lang.name: int(lang) for lang in LanguageCode}
_NAME_BY_LANG = {int(lang): lang.name for lang in LanguageCode}
_FIXED = struct.Struct(">hbhii")  # code, language, version, opaque, flag
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_PREFIX = struct.Struct(">ii")
_opaque_counter = itertools.count(1)
_JAVA = int(LanguageCode.JAVA)


def next_opaque() -> int:
    """Process-wide request id; wraps inside the positive int32 range like Java's AtomicInteger use."""
    return next(_opaque_counter) & 0x7FFFFFFF


class GatheredBody:
    """A body kept as the parts it is made of (a pull's messages: slices of the mapped commitlog). Its frame
    goes to the socket in one vectored write, the parts never copied into one buffer first: in a backlog drain
    the two copies of each 32 KiB answer were a sixth of the broker's time."""

    __slots__ = ("parts", "size")

    def __init__(self, parts: list[memoryview], size: int) -> None:
        self.parts = parts
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(self.parts)


@dataclass(slots=True)
class RemotingCommand:
    code: int
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes | bytearray | memoryview | GatheredBody | None = None
    remark: str | None = None
    opaque: int = 0
    flag: int = 0
    language: int = LanguageCode.PYTHON
    version: int = PROTOCOL_VERSION
    serialize_type: SerializeType = SerializeType.JSON

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: bytes | None = None,
        *,
        oneway: bool = False,
        serialize_type: SerializeType = SerializeType.JSON,
        language: int = LanguageCode.PYTHON,
    ) -> RemotingCommand:
        return cls(
            code=code,
            ext_fields=ext_fields or {},
            body=body,
            opaque=next_opaque(),
            flag=FLAG_ONEWAY if oneway else 0,
            serialize_type=serialize_type,
            language=language,
        )

    def response(
        self,
        code: int = 0,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: bytes | memoryview | None = None,
    ) -> RemotingCommand:
        """The response to this request, in the request's own serialize type. Fields positional, in
        declaration order: keywords cost a slots dataclass twice the time, and every request has one."""
        return RemotingCommand(int(code), ext_fields or {}, body, remark, self.opaque, FLAG_RESPONSE, _JAVA,
                               PROTOCOL_VERSION, self.serialize_type)

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    def encode_header(self) -> bytes:
        if self.serialize_type == SerializeType.ROCKETMQ:
            return encode_rocketmq_header(self)
        return encode_json_header(self)

    def encode_parts(self) -> tuple[bytes, bytes | bytearray | memoryview | GatheredBody | None]:
        """Length prefix + header, and the body, kept apart so large bodies are not copied."""
        serialize_type = self.serialize_type
        if serialize_type == SerializeType.ROCKETMQ:
            header = encode_rocketmq_header(self)
        else:
            header = encode_json_header(self)
        body = self.body
        body_len = len(body) if body is not None else 0
        prefix = _PREFIX.pack(4 + len(header) + body_len, (serialize_type << 24) | len(header))
        return prefix + header, body if body_len else None

    def encode(self) -> bytes:
        head, body = self.encode_parts()
        return head + bytes(body) if body is not None else head


def encode_json_header(cmd: RemotingCommand) -> bytes:
    obj: dict[str, object] = {
        "code": cmd.code,
        "language": _NAME_BY_LANG.get(cmd.language, "OTHER"),
        "version": cmd.version,
        "opaque": cmd.opaque,
        "flag": cmd.flag,
        "serializeTypeCurrentRPC": "JSON",
    }
    if cmd.remark is not None:
        obj["remark"] = cmd.remark
    if cmd.ext_fields:
        obj["extFields"] = cmd.ext_fields
    return orjson.dumps(obj)


def encode_rocketmq_header(cmd: RemotingCommand) -> bytes:
    parts = [_FIXED.pack(cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag)]
    remark = cmd.remark.encode() if cmd.remark else b""
    parts.append(_I32.pack(len(remark)))
    parts.append(remark)
    ext = bytearray()
    for key, value in cmd.ext_fields.items():
        kb, vb = key.encode(), str(value).encode()
        ext += _I16.pack(len(kb))
        ext += kb
        ext += _I32.pack(len(vb))
        ext += vb
    parts.append(_I32.pack(len(ext)))
    parts.append(bytes(ext))
    return b"".join(parts)


def decode_header(serialize_type: int, data: bytes | memoryview) -> RemotingCommand:
    if serialize_type == SerializeType.JSON:
        return decode_json_header(data)
    if serialize_type == SerializeType.ROCKETMQ:
        return decode_rocketmq_header(data)
    raise ProtocolError(f"unknown serialize type {serialize_type}")


def _language(value: object) -> int:
    if isinstance(value, int):
        return value
    return _LANG_BY_NAME.get(str(value), LanguageCode.OTHER)


def _as_int(obj: dict, key: str, default: int = 0) -> int:
    value = obj.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"header field {key} is not an integer")
    return value


def decode_json_header(data: bytes | memoryview) -> RemotingCommand:
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(f"undecodable JSON header: {exc}") from None
    if type(obj) is not dict:
        raise ProtocolError("JSON header is not an object")
    code = obj.get("code", 0)
    opaque = obj.get("opaque", 0)
    flag = obj.get("flag", 0)
    version = obj.get("version", 0)
    if type(code) is not int or type(opaque) is not int or type(flag) is not int or type(version) is not int:
        code, opaque, flag, version = (_as_int(obj, k) for k in ("code", "opaque", "flag", "version"))
    if not (INT_MIN <= code <= INT_MAX and INT_MIN <= opaque <= INT_MAX and INT_MIN <= flag <= INT_MAX
            and INT_MIN <= version <= INT_MAX):
        # Java ints: a bigger number is not a frame a RocketMQ peer could send, nor could the answer carry it
        raise ProtocolError("code, opaque, flag or version is outside Java's int range")
    ext = obj.get("extFields") or {}
    if type(ext) is not dict:
        raise ProtocolError("extFields is not an object")
    for value in ext.values():
        if type(value) is not str:  # peers that send numbers or booleans: normalise them all
            ext = {str(k): v if isinstance(v, str) else _json_scalar(v) for k, v in ext.items()}
            break
    remark = obj.get("remark")
    language = obj.get("language", "JAVA")
    lang = _LANG_BY_NAME.get(language) if type(language) is str else None
    # positional, in declaration order (see response): this runs once per request
    return RemotingCommand(code, ext, None, None if remark is None else str(remark), opaque, flag,
                           _language(language) if lang is None else lang, version, SerializeType.JSON)


def _json_scalar(value: object) -> str:
    """extFields are strings on the wire; tolerate peers that send numbers or booleans."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return orjson.dumps(value).decode() if isinstance(value, (dict, list)) else str(value)


def decode_rocketmq_header(data: bytes | memoryview) -> RemotingCommand:
    view = memoryview(data)
    try:
        code, language, version, opaque, flag = _FIXED.unpack_from(view, 0)
        pos = _FIXED.size
        (remark_len,) = _I32.unpack_from(view, pos)
        pos += 4
        remark = _read_str(view, pos, remark_len)
        pos += remark_len
        (ext_len,) = _I32.unpack_from(view, pos)
        pos += 4
        if ext_len < 0 or pos + ext_len > len(view):
            raise ProtocolError("extFields length out of range")
        ext = _decode_ext(view[pos : pos + ext_len])
    except struct.error:
        raise ProtocolError("truncated ROCKETMQ header") from None
    return RemotingCommand(
        code=code,
        ext_fields=ext,
        remark=remark,
        opaque=opaque,
        flag=flag,
        language=language,
        version=version,
        serialize_type=SerializeType.ROCKETMQ,
    )


def _read_str(view: memoryview, pos: int, length: int) -> str | None:
    if length < 0 or pos + length > len(view):
        raise ProtocolError("string length out of range")
    if length == 0:
        return None
    try:
        return bytes(view[pos : pos + length]).decode()
    except UnicodeDecodeError:
        raise ProtocolError("string is not UTF-8") from None


def _decode_ext(view: memoryview) -> dict[str, str]:
    ext: dict[str, str] = {}
    pos = 0
    while pos < len(view):
        (klen,) = _I16.unpack_from(view, pos)
        pos += 2
        key = _read_str(view, pos, klen) or ""
        pos += klen
        (vlen,) = _I32.unpack_from(view, pos)
        pos += 4
        ext[key] = _read_str(view, pos, vlen) or ""
        pos += vlen
    return ext
