"""The exceptions the client raises, one class per RocketMQ response code a caller may want to catch.

`MQClientError` is the base of everything mq-specific. A server's refusal is an `MQBrokerError`
subclass chosen by its response code (`for_code`, `broker_error`), so a caller writes
`except TopicNotExistError` rather than comparing numbers; `.code` and `.remark` keep the server's
own answer. A peer that cannot be reached, or does not answer in time, is `UnreachableError`, one
subclass per way it happens, because a sender must know whether its request may have arrived. The
transport's own exceptions stop at the client's one gateway (`ClientInstance.invoke`), which turns them
into these (`unreachable_error`).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

from mqtools.common.errors import ToolkitError
from mqtools.common.exitcodes import EXIT_UNREACHABLE, EXIT_USAGE
from mqtools.remoting.codes import GROUP_CONSUME_DISABLED, ResponseCode, code_name
from mqtools.remoting.errors import RemotingConnectError, RemotingError, RemotingTimeoutError


class MQClientError(ToolkitError):
    """A client-side failure: validation, no route, no broker, a budget spent."""


class NoMasterError(MQClientError):
    """A write needs every broker set it targets to have a master, and some have none registered: nothing
    was written (a half-applied change would leave the sets disagreeing in silence)."""

    def __init__(self, broker_names: list[str], what: str) -> None:
        self.broker_names = broker_names
        sets = ", ".join(broker_names)
        super().__init__(f"broker set {sets} has no master registered (read-only until one returns or is "
                         f"elected): {what} not written anywhere")


class UnreachableError(MQClientError):
    """No connection to a name server or broker, or it dropped, or no answer came in time."""

    exit_code = EXIT_UNREACHABLE


class ConnectFailedError(UnreachableError):
    """No connection could be made: the request never left, so it surely did nothing."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        #: Why, in a few words (connection refused, connect timed out, TLS: certificate has expired, ...).
        self.reason = reason or message


class RequestTimeoutError(UnreachableError):
    """No answer within the timeout: the server may still have done what was asked."""


class ConnectionDroppedError(UnreachableError):
    """The connection closed while the request waited: the server may have done it."""


def unreachable_error(exc: RemotingError) -> UnreachableError:
    """The client error for a transport failure."""
    if isinstance(exc, RemotingConnectError):
        return ConnectFailedError(str(exc), exc.reason)
    if isinstance(exc, RemotingTimeoutError):
        return RequestTimeoutError(str(exc))
    return ConnectionDroppedError(str(exc))


class UnknownTargetError(MQClientError):
    """The broker name, address or cluster is unknown to the name servers: a usage error, not an outage."""

    exit_code = EXIT_USAGE


class MessageNotFoundError(MQClientError):
    """No message has the id, or stands at the queue offset, asked for (a lookup's not found: exit 1)."""


class MQBrokerError(MQClientError):
    """A broker or name server answered with a non-success response code."""

    CODE: int | None = None
    """The response code this class stands for; None on the base (any code without a class)."""
    REMARK: str | None = None
    """Set on a subclass of a code's class that stands for one of that code's answers, told apart by the remark it
    starts with (both Apache's brokers word it so): a refusal no retry outlasts, where others of the code pass."""

    def __init__(self, code: int, remark: str | None = None) -> None:
        super().__init__(f"CODE: {int(code)} DESC: {remark}")
        self.code = int(code)
        self.remark = remark

    @property
    def code_name(self) -> str:
        """ResponseCode's name for the code (the number itself when RocketMQ has no name for it)."""
        return code_name(self.code, response=True)

    def summary(self) -> str:
        return f"{self.remark or 'refused'} (CODE {self.code} {self.code_name})"


class BrokerSystemError(MQBrokerError):
    CODE = ResponseCode.SYSTEM_ERROR


class SystemBusyError(MQBrokerError):
    CODE = ResponseCode.SYSTEM_BUSY


class NotAvailable(MQBrokerError):
    """The server does not offer this request (e.g. an mq-private code sent to Apache RocketMQ)."""

    CODE = ResponseCode.REQUEST_CODE_NOT_SUPPORTED


class TransactionFailedError(MQBrokerError):
    CODE = ResponseCode.TRANSACTION_FAILED


class FlushDiskTimeoutError(MQBrokerError):
    CODE = ResponseCode.FLUSH_DISK_TIMEOUT


class SlaveNotAvailableError(MQBrokerError):
    CODE = ResponseCode.SLAVE_NOT_AVAILABLE


class FlushSlaveTimeoutError(MQBrokerError):
    CODE = ResponseCode.FLUSH_SLAVE_TIMEOUT


class MessageIllegalError(MQBrokerError):
    CODE = ResponseCode.MESSAGE_ILLEGAL


class ServiceNotAvailableError(MQBrokerError):
    CODE = ResponseCode.SERVICE_NOT_AVAILABLE


class VersionNotSupportedError(MQBrokerError):
    CODE = ResponseCode.VERSION_NOT_SUPPORTED


class NoPermissionError(MQBrokerError):
    CODE = ResponseCode.NO_PERMISSION


class GroupConsumeDisabledError(NoPermissionError):
    """The consumer group has consuming switched off on that broker (consumeEnable=false): an operator's doing, which
    no retry outlasts, where a broker or topic refusing reads (NO_PERMISSION too) may be for a while."""

    REMARK = GROUP_CONSUME_DISABLED


class TopicNotExistError(MQBrokerError):
    CODE = ResponseCode.TOPIC_NOT_EXIST


class TopicExistAlreadyError(MQBrokerError):
    CODE = ResponseCode.TOPIC_EXIST_ALREADY


class QueryNotFoundError(MQBrokerError):
    CODE = ResponseCode.QUERY_NOT_FOUND


class SubscriptionParseFailedError(MQBrokerError):
    CODE = ResponseCode.SUBSCRIPTION_PARSE_FAILED


class SubscriptionNotExistError(MQBrokerError):
    CODE = ResponseCode.SUBSCRIPTION_NOT_EXIST


class SubscriptionNotLatestError(MQBrokerError):
    CODE = ResponseCode.SUBSCRIPTION_NOT_LATEST


class SubscriptionGroupNotExistError(MQBrokerError):
    CODE = ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST


class InvalidParameterError(MQBrokerError):
    CODE = ResponseCode.INVALID_PARAMETER


class ConsumerNotOnlineError(MQBrokerError):
    CODE = ResponseCode.CONSUMER_NOT_ONLINE


class ConsumeMessageTimeoutError(MQBrokerError):
    CODE = ResponseCode.CONSUME_MSG_TIMEOUT


class NoMessageError(MQBrokerError):
    CODE = ResponseCode.NO_MESSAGE


class BrokerNotExistError(MQBrokerError):
    CODE = ResponseCode.BROKER_NOT_EXIST


class FlowControlError(MQBrokerError):
    CODE = ResponseCode.FLOW_CONTROL


class IllegalOperationError(MQBrokerError):
    CODE = ResponseCode.ILLEGAL_OPERATION


class GoAwayError(MQBrokerError):
    CODE = ResponseCode.GO_AWAY


def _by_code() -> tuple[dict[int, type[MQBrokerError]], dict[int, list[type[MQBrokerError]]]]:
    """The class of each code, and the classes that narrow a code's by the remark."""
    table: dict[int, type[MQBrokerError]] = {}
    narrower: dict[int, list[type[MQBrokerError]]] = {}
    pending = list(MQBrokerError.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.REMARK is not None:
            narrower.setdefault(int(cls.CODE), []).append(cls)  # type: ignore[arg-type]
        elif cls.CODE is not None:
            table[int(cls.CODE)] = cls
    return table, narrower


_CLASSES, _BY_REMARK = _by_code()


def for_code(code: int) -> type[MQBrokerError]:
    """The class for a response code; MQBrokerError itself for a code without its own class."""
    return _CLASSES.get(int(code), MQBrokerError)


def broker_error(code: int, remark: str | None) -> MQBrokerError:
    """The exception to raise for a server's non-success answer."""
    for cls in _BY_REMARK.get(int(code), ()):
        if remark and remark.startswith(cls.REMARK):  # type: ignore[arg-type]
            return cls(code, remark)
    return for_code(code)(code, remark)


T = TypeVar("T")


async def settled(call: Awaitable[T]) -> T | MQClientError:
    """The call's result, or the client error it raised: for optional figures (one dead broker, one member
    that does not answer) that must not sink everything read beside them."""
    try:
        return await call
    except MQClientError as exc:
        return exc
