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

from collections.abc import Awaitable, Mapping, Sequence
from typing import TypeVar

from mqtools.common.errors import ToolkitError
from mqtools.common.exitcodes import EXIT_REFUSED, EXIT_UNREACHABLE, EXIT_USAGE
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


class SendUnansweredError(UnreachableError):
    """Every attempt of a send failed, the last for want of a connection or an answer: the outcome is not known
    where an attempt timed out or its connection dropped, and `maybe_stored` names those brokers (Apache's
    "BrokersSent" names every broker tried), where a copy may be stored. A script tells it from a refusal by
    the exit code, as it tells a single attempt's RequestTimeoutError."""

    def __init__(self, message: str, maybe_stored: list[str]) -> None:
        super().__init__(message)
        self.maybe_stored = maybe_stored


def send_failed(topic: str, spent: float, budget: float, last_error: MQClientError | None,
                maybe_stored: list[str]) -> MQClientError:
    """The error of a send whose every attempt failed: of the last failure's kind, a refusal or no answer (exit 1
    or 3, as one attempt's own error would be), naming the brokers where a copy may be."""
    text = f"send to {topic} failed after {spent:.3f}s (budget {budget:.3f}s)"
    if last_error is not None:
        text += f": {last_error}"
    if maybe_stored:
        text += f"; a copy may have been stored on {', '.join(maybe_stored)} (no answer came from there)"
    if isinstance(last_error, UnreachableError):
        return SendUnansweredError(text, maybe_stored)
    return MQClientError(text)


class ProducerShutDownError(MQClientError):
    """The producer was shut down before this async send went out (it waited for room in auto-batching's
    memory bound): nothing was sent."""


class SendAbandonedError(ProducerShutDownError, UnreachableError):
    """The producer was shut down while this async send still waited on a broker (its answer, or a retry), past
    the shutdown's wait of send_timeout: the send was stopped then, and the message may have been stored, as
    after a timeout."""


def unreachable_error(exc: RemotingError) -> UnreachableError:
    """The client error for a transport failure."""
    if isinstance(exc, RemotingConnectError):
        return ConnectFailedError(str(exc), exc.reason)
    if isinstance(exc, RemotingTimeoutError):
        return RequestTimeoutError(str(exc))
    return ConnectionDroppedError(str(exc))


def reason_of(exc: UnreachableError) -> str:
    """The short reason a document names for a replica that did not answer."""
    if isinstance(exc, ConnectFailedError):
        return exc.reason
    if isinstance(exc, RequestTimeoutError):
        return "timed out"
    return str(exc) or type(exc).__name__


def may_have_applied(exc: MQClientError) -> bool:
    """Whether a failed request may still have been carried out: it left, and no answer came (a timeout, a dropped
    connection); a connection never made and a refusal did nothing."""
    return isinstance(exc, UnreachableError) and not isinstance(exc, ConnectFailedError)


def write_outcome(exc: MQClientError) -> str:
    """Why a target does not have a write, as a rerun is decided: it refused it, no connection was made (not
    applied either), or no answer came in time or the connection dropped (it may have applied). The words of the
    ACL 2.0 writes too, so every write says it alike."""
    if may_have_applied(exc):
        return f"no answer, not known to have applied: {reason_of(exc)}"
    if isinstance(exc, ConnectFailedError):
        return f"no answer, not applied: {exc.reason}"
    return f"refused, not applied: {exc.summary()}"


class PartialWriteError(MQClientError):
    """A write sent to several brokers at once that some did not apply, as one error: where it applied, each other
    target with its outcome (write_outcome), and the name servers a step after it left alone; one target's failure
    never hides where the others applied it, so the operator knows what to run again. Exit 3 when a target did
    not answer (run it again once it does), else 1 (refused)."""

    def __init__(self, what: str, applied: Sequence[str], failed: Mapping[str, MQClientError],
                 namesrvs: Mapping[str, MQClientError | None] | None = None) -> None:
        self.what = what
        self.applied = list(applied)
        self.failed = dict(failed)
        self.namesrvs = dict(namesrvs or {})
        """The name servers not updated: each one's failure, or None where it was not asked (the brokers' step
        did not land everywhere first)."""
        errors = [*self.failed.values(), *(e for e in self.namesrvs.values() if e is not None)]
        self.exit_code = EXIT_UNREACHABLE if any(isinstance(e, UnreachableError) for e in errors) else EXIT_REFUSED
        parts = [f"applied on {', '.join(self.applied)}" if self.applied else "applied on no broker"]
        parts += [f"{target}: {write_outcome(exc)}" for target, exc in self.failed.items()]
        super().__init__(f"{what}: {'; '.join(parts + self.namesrv_notes())}")

    def namesrv_notes(self) -> list[str]:
        """A clause per name server not updated, and why (those not asked in one)."""
        skipped = [addr for addr, exc in self.namesrvs.items() if exc is None]
        notes = [f"name servers {', '.join(skipped)} not updated: not asked, as not every broker applied it"
                 ] if skipped else []
        return notes + [f"name server {addr} not updated: {write_outcome(exc)}"
                        for addr, exc in self.namesrvs.items() if exc is not None]


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


class GroupOffsetNotExistError(BrokerSystemError):
    """A broker's answer to a reset by time (INVOKE_BROKER_TO_RESET_OFFSET) when it holds no offset of the group on
    the topic (a queue of it, on Apache's): the group never consumed there, nobody online. Nothing was reset there,
    so the offsets are committed directly, as for CONSUMER_NOT_ONLINE (Apache 5's resetOffsetNewConcurrent counts
    it done: "not exist, never online")."""

    REMARK = "THe consumer group <"


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
