"""A failed send is `fail` only when no attempt of the client's send loop could have stored the message."""

from __future__ import annotations

from mqtools.client.errors import MQBrokerError, MQClientError
from mqtools.drills.history import FAIL, SEND, UNKNOWN, Op
from mqtools.drills.load import record_failure
from mqtools.remoting.errors import RemotingConnectError


def op() -> Op:
    return Op("producer-0", SEND, "r-1", 1.0, 1.0, UNKNOWN)


def test_refused_on_every_attempt_is_a_definite_failure_with_the_last_code() -> None:
    sent = op()
    record_failure(sent, MQClientError("send failed after 3 attempts"), [("none", None), ("none", 17)])
    assert (sent.result, sent.code) == (FAIL, 17)


def test_an_attempt_that_timed_out_makes_the_send_unknown() -> None:
    sent = op()
    record_failure(sent, MQClientError("budget spent"), [("maybe", None), ("none", None)])
    assert sent.result == UNKNOWN and sent.error is not None and "budget spent" in sent.error


def test_an_ordered_send_refused_by_the_connection_is_a_failure() -> None:
    sent = op()
    record_failure(sent, RemotingConnectError("127.0.0.1:1", "refused"), [("none", None)])
    assert sent.result == FAIL and sent.code is None and sent.error.startswith("RemotingConnectError")


def test_a_broker_refusal_keeps_its_code() -> None:
    sent = op()
    record_failure(sent, MQBrokerError(13, "message illegal"), [("none", 13)])
    assert (sent.result, sent.code) == (FAIL, 13)
