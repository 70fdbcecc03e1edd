"""rows_from_batches: Spark's Arrow batches of a write become the rows row_message takes, as Spark's own Rows did."""

from __future__ import annotations

import pyarrow as pa

from mqtools.common import properties as P
from mqtools.spark.writer import row_message, rows_from_batches

PROPS = pa.map_(pa.string(), pa.string())


def batch() -> pa.RecordBatch:
    return pa.record_batch({
        "topic": pa.array(["A", None, "B", "C"]),
        "body": pa.array([b"one", b"", None, b"four"], pa.binary()),
        "tags": pa.array(["T1", None, "T3", ""]),
        "keys": pa.array([["k1", "k2"], None, ["k3"], []], pa.list_(pa.string())),
        "properties": pa.array([[("a", "1")], None, [("b", "2"), ("c", "3")], []], PROPS),
    })


def test_each_row_has_every_column_and_maps_become_dicts() -> None:
    assert list(rows_from_batches([batch()])) == [
        {"topic": "A", "body": b"one", "tags": "T1", "keys": ["k1", "k2"], "properties": {"a": "1"}},
        {"topic": None, "body": b"", "tags": None, "keys": None, "properties": None},
        {"topic": "B", "body": None, "tags": "T3", "keys": ["k3"], "properties": {"b": "2", "c": "3"}},
        {"topic": "C", "body": b"four", "tags": "", "keys": [], "properties": {}},
    ]


def test_a_sliced_batch_keeps_its_own_rows_maps() -> None:
    """A map column's offsets point into values shared with the rows sliced away."""
    rows = list(rows_from_batches([batch().slice(2, 2), batch().slice(0, 1)]))
    assert [r["properties"] for r in rows] == [{"b": "2", "c": "3"}, {}, {"a": "1"}]
    assert [r["topic"] for r in rows] == ["B", "C", "A"]


def test_the_rows_make_the_messages_a_spark_row_made() -> None:
    first, missing_topic, *_ = rows_from_batches([batch()])
    msg = row_message(first, "Default")
    assert (msg.topic, msg.body) == ("A", b"one")
    assert msg.properties == {"a": "1", P.TAGS: "T1", P.KEYS: "k1 k2"}
    assert row_message(missing_topic, "Default").topic == "Default"
