"""A read's rows as Arrow columns: pull answers in, RecordBatches out, no per-row objects reach Spark.

`Columns` here is the reference: it decodes a pull answer into messages and gathers them column by
column. `_columns.pyx` compiles the same class (same rows, same refusals), writing each stored message
straight into the column buffers without a message object; it is used unless it was not built or
MQ_PURE_PYTHON is set (mqtools/common/speedups.py). tests/unit/spark/test_columns.py checks both give
equal batches.
"""

from __future__ import annotations

from collections.abc import Collection

import pyarrow as pa

from mqtools.client.client_api import decode_pull_body
from mqtools.common import properties as P
from mqtools.common import speedups
from mqtools.common.codec import CorruptMessageError
from mqtools.common.javanum import LONG_MAX
from mqtools.common.message import Host

#: The rows' schema as Spark DDL; ARROW_SCHEMA is the same in Arrow, as Spark's own conversion makes it
#: (timestamps in microseconds, UTC), which a batch must equal exactly.
SCHEMA = ("topic string, broker string, queue_id int, queue_offset long, msg_id string, keys string, tags string, "
          "body binary, properties map<string,string>, born_timestamp timestamp, store_timestamp timestamp, "
          "born_host string, store_host string")
ARROW_SCHEMA = pa.schema([
    ("topic", pa.string()), ("broker", pa.string()), ("queue_id", pa.int32()), ("queue_offset", pa.int64()),
    ("msg_id", pa.string()), ("keys", pa.string()), ("tags", pa.string()), ("body", pa.binary()),
    ("properties", pa.map_(pa.string(), pa.string())), ("born_timestamp", pa.timestamp("us", tz="UTC")),
    ("store_timestamp", pa.timestamp("us", tz="UTC")), ("born_host", pa.string()), ("store_host", pa.string())])
MAX_MILLIS = LONG_MAX // 1000
"""Timestamps are stored in milliseconds and shown in microseconds: one beyond this is damage."""


class Columns:
    """Rows of one broker's queue ranges, gathered until `batch()` hands them over as one RecordBatch."""

    def __init__(self, broker: str) -> None:
        self.broker = broker
        self.hosts: dict[Host, str] = {}
        self.clear()

    def clear(self) -> None:
        self.nbytes = 0
        """Body bytes gathered: the reader hands a batch over before it grows past its byte budget."""
        self.topic: list[str] = []
        self.queue_id: list[int] = []
        self.queue_offset: list[int] = []
        self.msg_id: list[str] = []
        self.keys: list[str | None] = []
        self.tags: list[str | None] = []
        self.body: list[bytes] = []
        self.prop_offsets: list[int] = [0]
        self.prop_keys: list[str] = []
        self.prop_values: list[str] = []
        self.born: list[int] = []
        self.stored: list[int] = []
        self.born_host: list[str] = []
        self.store_host: list[str] = []

    def __len__(self) -> int:
        return len(self.topic)

    def add_pull(self, body: bytes, low: int, high: int, tags: Collection[str]) -> int:
        """A pull answer's stored messages at queue offsets [low, high) whose tag is in `tags` (all when
        empty: the broker filtered by hash code only); how many rows went in. msg_id is the producer's
        unique key when there is one (what `mq admin msg` shows). A damaged entry raises
        CorruptMessageError and adds nothing."""
        msgs = [m for m in decode_pull_body(body)
                if low <= m.queue_offset < high and (not tags or m.properties.get(P.TAGS) in tags)]
        for m in msgs:
            if abs(m.born_timestamp) > MAX_MILLIS or abs(m.store_timestamp) > MAX_MILLIS:
                raise CorruptMessageError(f"timestamp out of range at physical offset {m.commit_log_offset}")
        props = [m.properties for m in msgs]
        self.topic.extend([m.topic for m in msgs])
        self.queue_id.extend([m.queue_id for m in msgs])
        self.queue_offset.extend([m.queue_offset for m in msgs])
        self.msg_id.extend([p.get(P.UNIQ_KEY) or m.msg_id for m, p in zip(msgs, props)])
        self.keys.extend([p.get(P.KEYS) for p in props])
        self.tags.extend([p.get(P.TAGS) for p in props])
        self.body.extend([m.body for m in msgs])
        self.nbytes += sum([len(m.body) for m in msgs])
        keys, values, offsets = self.prop_keys, self.prop_values, self.prop_offsets
        for p in props:
            keys.extend(p)
            values.extend(p.values())
            offsets.append(len(keys))
        self.born.extend([m.born_timestamp * 1000 for m in msgs])
        self.stored.extend([m.store_timestamp * 1000 for m in msgs])
        self.born_host.extend([self._host(m.born_host) for m in msgs])
        self.store_host.extend([self._host(m.store_host) for m in msgs])
        return len(msgs)

    def _host(self, host: Host) -> str:
        text = self.hosts.get(host)
        if text is None:
            text = self.hosts[host] = f"{host[0]}:{host[1]}"
        return text

    def batch(self) -> pa.RecordBatch:
        """The rows gathered so far, which are then forgotten."""
        n = len(self)
        props = pa.MapArray.from_arrays(pa.array(self.prop_offsets, pa.int32()), pa.array(self.prop_keys, pa.string()),
                                        pa.array(self.prop_values, pa.string()))
        ts = pa.timestamp("us", tz="UTC")
        arrays = [pa.array(self.topic, pa.string()), pa.array([self.broker] * n, pa.string()),
                  pa.array(self.queue_id, pa.int32()), pa.array(self.queue_offset, pa.int64()),
                  pa.array(self.msg_id, pa.string()), pa.array(self.keys, pa.string()),
                  pa.array(self.tags, pa.string()), pa.array(self.body, pa.binary()), props,
                  pa.array(self.born, ts), pa.array(self.stored, ts), pa.array(self.born_host, pa.string()),
                  pa.array(self.store_host, pa.string())]
        self.clear()
        return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def _compiled() -> type | None:
    if speedups.pure_python_forced():
        return None
    try:
        from mqtools.spark import _columns
    except ImportError:
        return None
    return _columns.Columns


Columns = _compiled() or Columns  # type: ignore[misc]
