# cython: language_level=3, boundscheck=False, wraparound=False
"""A master's put of one message, compiled: checks, append, dispatch and settle in one typed pass.

MessageStore.put_message_inline (message_store.py) is the source of truth and what runs without this module
(not built, or MQ_PURE_PYTHON set). `put_message` takes the puts a running master makes of a message to any
topic but the schedule topic (a SYNC_MASTER's too: its wait for the slave is MessageStore._settle's) while nothing
holds dispatch back (a controller-mode master waiting to catch up);
for anything else it returns None before it has changed anything, and the Python method decides. `put_plain`
is the same put from the message's fields, for the compiled SEND_MESSAGE_V2 (processors/_csend.pyx): no message
object, and a put that needs no wait answers with its figures alone; with `later`, a SYNC_MASTER's put that waits
for its slave alone answers with its figures too, and the caller registers the wait (the compiled send's
ReplicatedAnswer). tests/unit/store/test_cput.py holds both
to the same commitlog, consume queues, index and results; tests/unit/broker/test_csend.py the sends.
"""

from cpython.unicode cimport PyUnicode_DecodeASCII
from libc.stdint cimport int32_t, int64_t

from mqtools.common._layout cimport BORNHOST_V6_FLAG, FIXED_V4, STOREHOST_V6_FLAG, put_hex, wr64, write_entry

from mqtools.common import codec, sysflag
from mqtools.common.brokerrole import BrokerRole
from mqtools.common.codec import host_flags
from mqtools.common.hashing import cached_java_hash
from mqtools.common.ids import host_address_bytes, offset_id_prefix
from mqtools.common import properties
from mqtools.common.properties import dispatch_values
from mqtools.common.topics import SCHEDULE_TOPIC
from mqtools.server.store import consume_queue, encoding, index
from mqtools.server.store.commitlog import EntryTooLarge
from mqtools.server.store.results import AppendMessageResult, PutMessageResult, PutMessageStatus

cdef extern from "zlib.h":
    unsigned long crc32(unsigned long crc, const unsigned char *buf, unsigned int length) nogil

cdef extern from "Python.h":
    char *PyBytes_AS_STRING(object b)

cdef int64_t HOST_V6_FLAGS = BORNHOST_V6_FLAG | STOREHOST_V6_FLAG
cdef int64_t MAX_TOPIC_LEN = codec.MAX_TOPIC_LEN_V1
cdef int64_t TRANSACTION_MASK = sysflag.TRANSACTION_MASK
cdef int64_t TRANSACTION_PREPARED = sysflag.TRANSACTION_PREPARED_TYPE
cdef int64_t TRANSACTION_ROLLBACK = sysflag.TRANSACTION_ROLLBACK_TYPE
cdef Py_ssize_t MAX_PROPERTIES_LEN = codec.MAX_PROPERTIES_LEN
cdef Py_ssize_t MAX_TOPIC_BYTES = encoding.MAX_TOPIC_BYTES
cdef object PUT_OK = PutMessageStatus.PUT_OK
cdef object CREATE_MAPPED_FILE_FAILED = PutMessageStatus.CREATE_MAPPED_FILE_FAILED
cdef object SYNC_MASTER = BrokerRole.SYNC_MASTER
cdef object SLAVE = BrokerRole.SLAVE
cdef str WAIT = properties.WAIT
cdef int64_t END_BLANK = codec.END_FILE_MIN_BLANK_LENGTH
cdef int64_t UNIT_SIZE = consume_queue.UNIT_SIZE
cdef object pack_unit = consume_queue.UNIT.pack_into
cdef int64_t WAITING_LIMIT = index.WAITING_LIMIT


cdef str _offset_msg_id(object store_host, int64_t phys):
    """create_offset_msg_id: the host's cached prefix and the offset's 16 upper-case hex digits."""
    cdef unsigned char raw[8]
    cdef char digits[16]
    wr64(raw, phys)
    put_hex(digits, raw, 8)
    return offset_id_prefix(store_host) + PyUnicode_DecodeASCII(digits, 16, NULL)


cdef bint _cq_put(object cq, int64_t phys, int64_t size, int64_t tags, int64_t cq_offset) except -1:
    """ConsumeQueue.put where the unit is the next of the queue's last file, which has room; else put itself."""
    if phys + size <= <int64_t>cq.max_physic_offset:
        return False
    files = cq.queue.files
    if files:
        mf = files[len(files) - 1]  # not [-1]: this module is compiled with wraparound=False
        wrote = <int64_t>mf.wrote
        if <int64_t>mf.start + wrote == cq_offset * UNIT_SIZE and wrote + UNIT_SIZE <= <int64_t>mf.reserved:
            pack_unit(mf.mm, wrote, phys, size, tags)
            mf.wrote = wrote + UNIT_SIZE
            cq.max_physic_offset = phys + size
            return True
    return cq.put(phys, size, tags, cq_offset)


cdef _index(ix, str topic, keys, uniq, int64_t phys, int64_t store_ts):
    """IndexService.build without its call: the unit joins the waiting ones (written WAITING_LIMIT at a time)."""
    waiting = ix._waiting
    unit = (phys, 0, 0, keys, uniq)
    if waiting:
        last = waiting[len(waiting) - 1]
        if last[0] == topic and last[1] == store_ts:
            last[2].append(unit)
        else:
            waiting.append((topic, store_ts, [unit]))
    else:
        waiting.append((topic, store_ts, [unit]))
    ix._waiting_units += 1
    if ix._waiting_units >= WAITING_LIMIT:
        ix.write_header()


cdef bint _wanted(list watching, tuple key):
    """Whether a listener watches the queue (or every queue): on the loop, the others would return at once."""
    for w in watching:
        if w is None or key in w:
            return True
    return False


def put_message(store, msg):
    """put_message_inline's result for a plain put on a running master, or None for the Python path."""
    props_s = msg.properties_string  # encoded_properties() without its call when the string is there
    return _put(store, msg, msg.topic, msg.body, msg.queue_id, msg.flag, msg.sys_flag, msg.born_timestamp,
                msg.born_host, msg.store_host, msg.reconsume_times, msg.prepared_transaction_offset,
                (props_s if props_s is not None else msg.encoded_properties()).encode(),
                msg.properties.get(WAIT) == "false", -1, None)


def put_plain(store, str topic, bytes body, int64_t queue_id, int64_t flag, int64_t sys_flag, int64_t born_timestamp,
              tuple born_host, tuple store_host, int64_t reconsume_times, str properties_string, bint wait_false,
              bint later=False):
    """put_message of the message these fields make (no prepared transaction, its properties already encoded,
    WAIT=false given as `wait_false`): (msg id, queue offset, stored size) for a put settled at once; a
    PutMessageResult or an awaitable of one otherwise; None for the Python path. With `later`, a SYNC_MASTER put
    that waits for its slave alone gives (msg id, queue offset, stored size, physical offset, store timestamp) and
    the caller registers the wait (MessageStore.when_replicated)."""
    return _put(store, None, topic, body, queue_id, flag, sys_flag, born_timestamp, born_host, store_host,
                reconsume_times, 0, properties_string.encode(), wait_false, -1, None, later)


def put_prepared(store, str topic, bytes body, int64_t queue_id, int64_t flag, int64_t sys_flag,
                 int64_t born_timestamp, tuple born_host, tuple store_host, int64_t reconsume_times,
                 bytes properties, bint wait_false, int64_t body_crc, tuple dispatch, bint later=False):
    """put_plain of a message some of whose figures were made before (a front worker's record of a send): its
    properties as stored, UTF-8; its body's CRC as stored; its (tags code, KEYS, UNIQ_KEY), as the dispatch
    reads them from those properties."""
    return _put(store, None, topic, body, queue_id, flag, sys_flag, born_timestamp, born_host, store_host,
                reconsume_times, 0, properties, wait_false, body_crc, dispatch, later)


cdef object _put(store, msg, str topic, object body, int64_t queue_id, int64_t flag, int64_t sys_flag_in,
                 int64_t born_ts, tuple born_host, object store_host, int64_t reconsume, int64_t prepared,
                 bytes props_b, bint wait_false, int64_t body_crc, tuple dispatch, bint later=False):
    """The entries' put; with `msg` its store fields are set and the result is put_message_inline's. A body CRC
    of -1 and no `dispatch` are worked out here."""
    cdef int64_t sys_flag, total, qoff = 0, phys, store_ts, mask
    cdef Py_ssize_t body_len, topic_len, props_len, at
    cdef bint consumable
    cdef const unsigned char[:] body_view
    cdef const unsigned char *body_p
    cdef unsigned char[:] target
    cfg = store.config
    role = cfg.broker_role  # cfg.is_slave without its two property calls
    if not store._running or role is SLAVE or store.cleaner.disk_full or store.dispatch_limit is not None:
        return None
    ha_hook = store.ha_hook
    if ha_hook is not None and role is SYNC_MASTER and ha_hook.refuse_put() is not None:
        return None  # the Python path answers the refusal (controller mode's minInSyncReplicas)
    if topic == SCHEDULE_TOPIC:
        return None
    topic_b = topic.encode()
    body_len = len(body)
    topic_len = len(topic_b)
    props_len = len(props_b)
    if topic_len == 0 or topic_len > MAX_TOPIC_BYTES or props_len > MAX_PROPERTIES_LEN or body_len > cfg.max_message_size:
        return None
    if store_host is None:
        store_host = cfg.store_host
    sys_flag = (sys_flag_in & ~HOST_V6_FLAGS) | <int64_t>host_flags(born_host, store_host)
    store_ts = <int64_t>(store.clock() * 1000)
    total = FIXED_V4 + body_len + topic_len + props_len + (1 if topic_len <= MAX_TOPIC_LEN else 2)
    if sys_flag & BORNHOST_V6_FLAG:
        total += 12
    if sys_flag & STOREHOST_V6_FLAG:
        total += 12
    mask = sys_flag & TRANSACTION_MASK
    consumable = mask != TRANSACTION_PREPARED and mask != TRANSACTION_ROLLBACK
    d = store.dispatcher
    queue_offsets = d.next_offset
    key = (topic, queue_id)
    cq = None
    if consumable:
        qoff = queue_offsets.get(key, 0)
        queues = d.consume_queues.get(topic)
        cq = queues.get(queue_id) if queues is not None else None
        if cq is None:
            cq = d.cq(topic, queue_id, True)
        files = cq.queue.files
        last = files[len(files) - 1] if files else None
        # ConsumeQueue.ready unless the unit goes at the end of the last file, in blocks it has
        if last is None or <int64_t>last.start + <int64_t>last.wrote != qoff * UNIT_SIZE \
                or <int64_t>last.wrote + UNIT_SIZE > <int64_t>last.reserved:
            why = d.ready(topic, queue_id, 1)
            if why is not None:
                return store._illegal(CREATE_MAPPED_FILE_FAILED, why)
    commitlog = store.commitlog
    # CommitLog.reserve where the entry fits the last file's allocated blocks; else reserve itself
    files = commitlog.queue.files
    mf = files[len(files) - 1] if files else None
    if mf is not None and total + END_BLANK <= <int64_t>mf.size - <int64_t>mf.wrote \
            and <int64_t>mf.wrote + total <= <int64_t>mf.reserved:
        pos = mf.wrote
        warmer = commitlog.warmer
        if warmer is not None and (pos > warmer.due or mf is not warmer.file):
            warmer.request(mf, pos)
    else:
        try:
            mf, pos = commitlog.reserve(total)
        except (EntryTooLarge, OSError) as exc:
            return store._reserve_failed(exc)
    phys = <int64_t>mf.start + <int64_t>pos
    # codec.write_stored: the entry, whose size `total` is (checked here as write_stored checks it)
    target = mf.mm
    at = pos
    if at < 0 or at + total > target.shape[0]:
        raise ValueError(f"an entry of {total} bytes does not fit the target at {at}")
    body_p = NULL
    if body_len and type(body) is bytes:  # its own buffer: no view to make
        body_p = <const unsigned char *>PyBytes_AS_STRING(body)
    elif body_len:
        body_view = body
        body_p = &body_view[0]
    if body_crc < 0:
        body_crc = (crc32(0, body_p, body_len) & 0x7FFFFFFF) if body_len else 0
    born_ip = host_address_bytes(born_host[0])
    store_ip = host_address_bytes(store_host[0])
    write_entry(&target[at], total, body_crc, queue_id, flag, qoff, phys, sys_flag, born_ts,
                <const unsigned char *>PyBytes_AS_STRING(born_ip), len(born_ip), <int32_t>born_host[1], store_ts,
                <const unsigned char *>PyBytes_AS_STRING(store_ip), len(store_ip), <int32_t>store_host[1], reconsume,
                prepared, body_p, body_len, PyBytes_AS_STRING(topic_b), topic_len,
                PyBytes_AS_STRING(props_b), props_len)
    mf.wrote = at + total
    if consumable:
        queue_offsets[key] = qoff + 1
    msg_id = _offset_msg_id(store_host, phys)
    # dispatch (DispatchService.unit_values and dispatch)
    if dispatch is None:
        tag_value, keys, uniq = dispatch_values(props_b)
        tags = cached_java_hash(tag_value) if tag_value else 0  # hashing.tags_code without its call
    else:
        tags, keys, uniq = dispatch
    if consumable:
        if _cq_put(cq, phys, total, tags, qoff):
            d.last_dispatch_ts = store_ts
            if d.listeners and _wanted(d.watching, key):  # then one call into Python, which calls them all
                d._notify(topic, queue_id, qoff + 1, tags, store_ts)
    if (keys or uniq) and d.config.message_index_enable and mask != TRANSACTION_ROLLBACK:
        _index(d.index, topic, keys, uniq, phys, store_ts)
    d.reput_offset = phys + total
    d.last_store_ts = store_ts
    if msg is not None:
        msg.store_timestamp = store_ts
        msg.queue_offset = qoff
        msg.commit_log_offset = phys
        msg.msg_id = msg_id
    stats = store.stats
    stats.put_times += 1
    stats.put_size += total
    # MessageStore._settle
    gc = store._group_commit
    if wait_false or gc is None and not (role is SYNC_MASTER and ha_hook is not None):
        if wait_false and gc is not None:
            gc.wake()
        if msg is None:
            return msg_id, qoff, total
        return PutMessageResult(PUT_OK, AppendMessageResult(phys, total, msg_id, store_ts, qoff, 1))
    if later and gc is None and msg is None:
        return msg_id, qoff, total, phys, store_ts
    return store._settle(AppendMessageResult(phys, total, msg_id, store_ts, qoff, 1), True)
