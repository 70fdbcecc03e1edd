"""A client stub of apache.rocketmq.v2.MessagingService for tests, made from the service's descriptor (the product
serves through generic handlers and ships no generated `_pb2_grpc` modules)."""

from __future__ import annotations

from typing import Any

import grpc

from mqtools.apis.apache.rocketmq.v2 import service_pb2


class MessagingServiceStub:
    """One callable per method of the service, named as the protos name it (SendMessage, QueryRoute, ...)."""

    def __init__(self, channel: grpc.Channel) -> None:
        service = service_pb2.DESCRIPTOR.services_by_name["MessagingService"]
        for method in service.methods:
            kind = ("stream_" if method.client_streaming else "unary_") + \
                ("stream" if method.server_streaming else "unary")
            reply = getattr(service_pb2, method.output_type.name)
            setattr(self, method.name, getattr(channel, kind)(
                f"/{service.full_name}/{method.name}", request_serializer=_serialize,
                response_deserializer=reply.FromString))


def _serialize(message: Any) -> bytes:
    return message.SerializeToString()
