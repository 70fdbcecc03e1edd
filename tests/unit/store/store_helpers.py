"""Shared builders for store tests: tiny files so rolls happen after a few messages."""

from __future__ import annotations

from mqtools.common.codec import encode_batch
from mqtools.common.message import Message, MessageExtBatch, MessageExtBrokerInner
from mqtools.server.store.config import MessageStoreConfig


def tiny_config(root, **kw) -> MessageStoreConfig:
    base = {"store_path_root_dir": str(root), "mapped_file_size_commit_log": 4096,
                "mapped_file_size_consume_queue": 20 * 16, "max_hash_slot_num": 64, "max_index_num": 32,
                "flush_interval_commit_log": 20, "flush_interval_consume_queue": 20}
    base.update(kw)
    return MessageStoreConfig(**base)


def inner(topic="T", body=b"x" * 100, queue_id=0, **props) -> MessageExtBrokerInner:
    return MessageExtBrokerInner(topic=topic, body=body, queue_id=queue_id, properties=dict(props),
                                 born_host=("10.0.0.1", 4000), store_host=("10.0.0.2", 10911),
                                 born_timestamp=1)


def batch(topic, queue_id, bodies, **props) -> MessageExtBatch:
    body = encode_batch([Message(topic, b, 0, dict(props)) for b in bodies])
    return MessageExtBatch(topic=topic, body=body, queue_id=queue_id, born_host=("10.0.0.1", 4000),
                           store_host=("10.0.0.2", 10911))
