# cython: language_level=3
"""The JSON header's fixed fields as the compiled writers write them (_cframe.encode_parts for every answer,
_csend's answer to a plain send): encode_json_header's keys in its order, no spaces, numbers as printf's
"%lld"; the caller goes on with the remark, the extFields and the closing brace."""

from libc.stdint cimport int64_t
from libc.string cimport memcpy, strlen

from mqtools.common._layout cimport put_decimal

cdef enum:
    #: Room for the fixed fields: their names, a language name of up to 40 bytes and four numbers of up to 20
    #: characters (a sign and 19 digits).
    FIXED_FIELDS_SIZE = 200
    LANGUAGE_MAX = 40


cdef inline char *put_text(char *dst, const char *text) noexcept nogil:
    """A NUL-terminated text at `dst` (a literal: its length is known when compiled); the end."""
    cdef size_t n = strlen(text)
    memcpy(dst, text, n)
    return dst + n


cdef inline char *put_fixed_fields(char *dst, int64_t code, const char *language, int64_t version,
                                   int64_t opaque, int64_t flag) noexcept nogil:
    """`{"code":..,"language":"..","version":..,"opaque":..,"flag":..,"serializeTypeCurrentRPC":"JSON"` at
    `dst` (FIXED_FIELDS_SIZE bytes for a language of up to LANGUAGE_MAX); the end."""
    dst = put_decimal(put_text(dst, b'{"code":'), code)
    dst = put_text(put_text(put_text(dst, b',"language":"'), language), b'","version":')
    dst = put_decimal(dst, version)
    dst = put_decimal(put_text(dst, b',"opaque":'), opaque)
    dst = put_decimal(put_text(dst, b',"flag":'), flag)
    return put_text(dst, b',"serializeTypeCurrentRPC":"JSON"')
