"""How a send whose every attempt failed is raised: a refusal (exit 1) or an unknown outcome (exit 3).

A review with a 2m-2s SYNC cluster: both masters SIGSTOPped, `mq admin msg send T x` exited 1 ("refused") after
its attempts timed out, while the same outage with --broker/--queue (one attempt, its RequestTimeoutError as is)
exited 3; and with both slaves stopped the message was stored three times though the command said it failed. The
send loop now ends on the kind of its last failure, and names where a copy may be (Apache's "BrokersSent")."""

from __future__ import annotations

import pytest
from unit.client.fake_remoting import FakeRemoting
from unit.client.test_producer_send import A, B, Step, make_producer, timed_out

from mqtools.client.errors import MQClientError, SendUnansweredError, UnreachableError
from mqtools.common.exitcodes import EXIT_REFUSED, EXIT_UNREACHABLE
from mqtools.common.message import Message
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.errors import RemotingConnectError, RemotingConnectionClosed


def refused_connect(addr: str) -> RemotingConnectError:
    return RemotingConnectError(addr, "connection refused")


def brokers_tried(remoting: FakeRemoting) -> list[str | None]:
    return [s.addr for s in remoting.broker_requests(RequestCode.SEND_MESSAGE_V2)]


async def failure(steps: list[Step]) -> tuple[MQClientError, FakeRemoting]:
    producer, remoting, _ = make_producer(steps)
    with pytest.raises(MQClientError) as caught:
        await producer.send(Message("T", b"hello"))
    return caught.value, remoting


async def test_attempts_that_timed_out_end_in_an_unreachable_error_naming_where_a_copy_may_be() -> None:
    exc, remoting = await failure([(0.5, timed_out(A, 0.5)), (0.5, timed_out(B, 0.5)), (0.5, timed_out(A, 0.5))])
    assert brokers_tried(remoting) == [A, B, A]
    assert isinstance(exc, SendUnansweredError) and isinstance(exc, UnreachableError)
    assert exc.exit_code == EXIT_UNREACHABLE, "the same outage to a chosen queue exits 3: so does this"
    assert exc.maybe_stored == ["broker-a", "broker-b"]
    assert str(exc).startswith("send to T failed after 1.500s (budget 3.000s): request code ")
    assert str(exc).endswith("; a copy may have been stored on broker-a, broker-b (no answer came from there)")
    assert isinstance(exc.__cause__, UnreachableError), "the last attempt's own error stays the cause"


async def test_a_dropped_connection_may_have_stored_a_copy_and_a_refused_connect_did_not() -> None:
    exc, _ = await failure([(0.1, RemotingConnectionClosed(A)), (0.1, ResponseCode.SYSTEM_BUSY),
                            (0.1, refused_connect(A))])
    assert isinstance(exc, SendUnansweredError) and exc.exit_code == EXIT_UNREACHABLE
    assert exc.maybe_stored == ["broker-a"] and "connection refused" in str(exc)


async def test_connects_that_all_failed_are_unreachable_with_no_copy_anywhere() -> None:
    exc, _ = await failure([(0.1, refused_connect(A)), (0.1, refused_connect(B)), (0.1, refused_connect(A))])
    assert isinstance(exc, SendUnansweredError) and exc.exit_code == EXIT_UNREACHABLE
    assert exc.maybe_stored == [] and "may have been stored" not in str(exc)


async def test_attempts_that_ended_on_a_refusal_stay_a_refusal_and_still_say_where_a_copy_may_be() -> None:
    exc, _ = await failure([(0.5, timed_out(A, 0.5)), (0.1, ResponseCode.SYSTEM_BUSY), (0.1, ResponseCode.SYSTEM_BUSY)])
    assert type(exc) is MQClientError and exc.exit_code == EXIT_REFUSED
    assert str(exc).endswith("; a copy may have been stored on broker-a (no answer came from there)")
    refused, _ = await failure([(0.1, ResponseCode.SYSTEM_BUSY)] * 3)
    assert type(refused) is MQClientError and "may have been stored" not in str(refused)
