"""ACL 1.0 signing against vectors computed outside this code (openssl dgst -sha1 -hmac ... | base64)."""

from __future__ import annotations

from mqtools.common.security import SessionCredentials
from mqtools.remoting import acl
from mqtools.remoting.command import RemotingCommand

CREDS = SessionCredentials("rocketmq", "12345678")


def _request(body: bytes | None) -> RemotingCommand:
    return RemotingCommand.request(310, {"b": "TopicTest", "a": "PG", "c": "0"}, body)


def test_signature_matches_hand_computed_vector() -> None:
    # content: values sorted by key (AccessKey < a < b < c) then the body:
    # printf 'rocketmqPGTopicTest0hello' | openssl dgst -sha1 -hmac 12345678 -binary | base64
    cmd = _request(b"hello")
    acl.sign(cmd, CREDS)
    assert cmd.ext_fields["AccessKey"] == "rocketmq"
    assert cmd.ext_fields["Signature"] == "oQaew0QwJPqN9a5Fn4ZLaUj+Bcs="


def test_security_token_is_signed_and_sent() -> None:
    # printf 'rocketmqtok1PGTopicTest0' | openssl dgst -sha1 -hmac 12345678 -binary | base64
    cmd = _request(None)
    acl.sign(cmd, SessionCredentials("rocketmq", "12345678", "tok1"))
    assert cmd.ext_fields["SecurityToken"] == "tok1"
    assert cmd.ext_fields["Signature"] == "VNlAEpwlvCwOXL8KVFSgRNH0neQ="


def test_verify_accepts_the_signed_request_and_rejects_tampering() -> None:
    cmd = _request(b"hello")
    acl.sign(cmd, CREDS)
    assert acl.verify(cmd, "12345678")
    assert not acl.verify(cmd, "wrong-secret")
    cmd.body = b"hellO"
    assert not acl.verify(cmd, "12345678")
    cmd.body = b"hello"
    cmd.ext_fields["b"] = "OtherTopic"
    assert not acl.verify(cmd, "12345678")


def test_signing_twice_is_stable_and_the_query_flag_is_signed() -> None:
    cmd = _request(b"x")
    acl.sign(cmd, CREDS)
    first = cmd.ext_fields["Signature"]
    acl.sign(cmd, CREDS)  # a retried request is signed again: same content, same signature
    assert cmd.ext_fields["Signature"] == first
    cmd.ext_fields["_UNIQUE_KEY_QUERY"] = "true"  # added after signing: 4.9.4+ clients sign it
    assert not acl.verify(cmd, "12345678")


def test_unsigned_request_does_not_verify() -> None:
    assert not acl.verify(_request(b"x"), "12345678")
