"""The proxy's refusals: a gRPC-level `Code` with a message, as Apache's proxy builds them (ResponseBuilder).

A method that fails for a reason the client should see raises `ProxyError(code, message)`; the service turns it
into the response's `status`. Broker answers and client-side failures map to codes here, once.
"""

from __future__ import annotations

from mqtools.apis.apache.rocketmq.v2 import definition_pb2 as pb
from mqtools.client.errors import MQBrokerError, MQClientError, RequestTimeoutError, UnreachableError
from mqtools.remoting.codes import ResponseCode

Code = pb.Code

#: Remoting response code -> gRPC Code (ResponseBuilder.RESPONSE_CODE_MAPPING); anything else is
#: INTERNAL_SERVER_ERROR, as in Apache (a broker's NO_PERMISSION too). TOPIC_NOT_EXIST is answered TOPIC_NOT_FOUND
#: (TopicRouteHelper).
_BY_RESPONSE_CODE: dict[int, int] = {
    ResponseCode.SUCCESS: Code.OK,
    ResponseCode.SYSTEM_BUSY: Code.TOO_MANY_REQUESTS,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: Code.NOT_IMPLEMENTED,
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: Code.CONSUMER_GROUP_NOT_FOUND,
    ResponseCode.TOPIC_NOT_EXIST: Code.TOPIC_NOT_FOUND,
}


class ProxyError(Exception):
    """A refusal the client sees as `status {code, message}`."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def code_for_response(response_code: int) -> int:
    return _BY_RESPONSE_CODE.get(int(response_code), Code.INTERNAL_SERVER_ERROR)


def status(code: int, message: str | None = None) -> pb.Status:
    return pb.Status(code=code, message=message if message is not None else Code.Name(code))


def ok() -> pb.Status:
    return status(Code.OK)


def status_of(exc: BaseException) -> pb.Status:
    """The status for an error raised while serving a call (ResponseBuilder.buildStatus(Throwable))."""
    if isinstance(exc, ProxyError):
        return status(exc.code, exc.message)
    if isinstance(exc, MQBrokerError):
        return status(code_for_response(exc.code), exc.remark or str(exc))
    if isinstance(exc, RequestTimeoutError):
        return status(Code.PROXY_TIMEOUT, str(exc))
    if isinstance(exc, UnreachableError):
        return status(Code.PROXY_TIMEOUT, str(exc))
    if isinstance(exc, MQClientError):
        return status(Code.INTERNAL_SERVER_ERROR, str(exc))
    return status(Code.INTERNAL_SERVER_ERROR, f"{type(exc).__name__}: {exc}")
