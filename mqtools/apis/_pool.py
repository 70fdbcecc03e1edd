"""The private descriptor pool of the generated apache.rocketmq.v2 modules (why: see generate.py).

It holds its own copies of the well-known types the protos import (Duration, Timestamp).
"""

from __future__ import annotations

from google.protobuf import descriptor_pool, duration_pb2, timestamp_pb2

POOL = descriptor_pool.DescriptorPool()
for _wkt in (duration_pb2, timestamp_pb2):
    POOL.AddSerializedFile(_wkt.DESCRIPTOR.serialized_pb)
