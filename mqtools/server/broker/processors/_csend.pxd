# cython: language_level=3
"""What the front worker's splitter (front/_csplit.pyx) reads a send's fields with, as the compiled send reads
them: one reading of numbers and properties for both sides of a record."""

from libc.stdint cimport int64_t


cdef bint _decimal(const unsigned char *p, Py_ssize_t n, int64_t *out) noexcept nogil
cdef bint _digits(str text, int64_t *out) noexcept
cdef bint _long(object text, int64_t *out) except -1
cdef bint _int(object text, int64_t *out) except -1
cdef bint _is_general(object wait) noexcept
cdef object _wait_of(str text)
cdef str _stored_properties(str text, wait, str cluster)
