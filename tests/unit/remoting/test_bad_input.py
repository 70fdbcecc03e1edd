"""Bad input is told apart from our bugs: header and body decoding raise BadRequestError subclasses,
names are checked by RocketMQ's rules, and what peers do wrong is logged through a rate limiter."""

from __future__ import annotations

import logging

import orjson
import pytest

from mqtools.common.log_limiter import MAX_LINE, LimitedLog, LogLimiter, one_line
from mqtools.common.validation import ValidationError, check_group, check_queue_nums, check_topic
from mqtools.remoting.bodies import REQUEST_LENIENT_MAX, HeartbeatData
from mqtools.remoting.command import decode_json_header
from mqtools.remoting.errors import BadRequestError, BodyError, HeaderError, ProtocolError
from mqtools.remoting.headers import PullMessageRequestHeader, TopicRequestHeader


@pytest.mark.parametrize("name", ["../..", "a/b", "a\x00b", "a\n", "t\u00e9", "", "  ", "x" * 128, ".", "a b"])
def test_bad_topic_names_are_refused(name: str) -> None:
    with pytest.raises(ValidationError):
        check_topic(name)


@pytest.mark.parametrize("name", ["../..", "g\x00", "g\n", "", "g" * 256])
def test_bad_group_names_are_refused(name: str) -> None:
    with pytest.raises(ValidationError):
        check_group(name)


def test_legal_names_pass() -> None:
    assert check_topic("%RETRY%a|b_c-9") == "%RETRY%a|b_c-9"
    assert check_topic("t" * 127) and check_group("g" * 255)


@pytest.mark.parametrize(("read", "write"), [(0, 1), (1, -1), (1025, 1), (1, 10**9)])
def test_queue_nums_out_of_range(read: int, write: int) -> None:
    with pytest.raises(ValidationError):
        check_queue_nums(read, write)


def test_header_errors_are_bad_requests() -> None:
    good = {"consumerGroup": "g", "topic": "t", "queueId": "0", "queueOffset": "0", "maxMsgNums": "1",
            "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0"}
    assert PullMessageRequestHeader.from_ext(good).queue_id == 0
    for field, value in (("queueId", "x"), ("queueId", "9" * 5000), ("queueOffset", str(2**63)),
                         ("maxMsgNums", "")):
        with pytest.raises(HeaderError) as info:
            PullMessageRequestHeader.from_ext({**good, field: value})
        assert field in str(info.value) and len(str(info.value)) < 200
    with pytest.raises(BadRequestError):
        TopicRequestHeader.from_ext({})


@pytest.mark.parametrize("body", [b"\xff\xfe", b"{", b"[1]", b"[" * 5000, b'{"clientID": "c", "producerDataSet": 5}',
                                  b'{"consumerDataSet": [{}]}', b""])
def test_body_errors_are_bad_requests(body: bytes) -> None:
    with pytest.raises(BodyError) as info:
        HeartbeatData.from_json(body)
    assert isinstance(info.value, ValueError) and "HeartbeatData" in str(info.value)


def test_json_header_numbers_outside_java_int_are_protocol_errors() -> None:
    with pytest.raises(ProtocolError):
        decode_json_header(orjson.dumps({"code": 2**40, "opaque": 1, "flag": 0, "version": 1}))
    assert decode_json_header(orjson.dumps({"code": 10, "opaque": 2**31 - 1})).opaque == 2**31 - 1
    for key in ("code", "opaque", "flag", "version"):  # each field, at both edges of Java's int
        for edge, fits in ((-(2**31), True), (2**31 - 1, True), (-(2**31) - 1, False), (2**31, False)):
            raw = orjson.dumps({"code": 10, "opaque": 1, "flag": 0, "version": 1, key: edge})
            if fits:
                assert getattr(decode_json_header(raw), key) == edge
            else:
                with pytest.raises(ProtocolError):
                    decode_json_header(raw)


def test_limiter_admits_limit_per_interval_then_reports_what_it_left_out() -> None:
    limiter = LogLimiter(limit=3, interval=10.0)
    got = [limiter.admit("a", 0.5 * i) for i in range(8)]
    assert got == [0, 0, 0, None, None, None, None, None]
    assert limiter.admit("b", 4.0) == 0  # kinds are counted apart
    assert limiter.admit("a", 10.0) == 5  # the next window's first line reports the five left out
    assert limiter.admit("a", 10.1) == 0


def test_limited_log_writes_one_bounded_line(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    limited = LimitedLog(logging.getLogger("test.limited"), lambda: now[0], limit=2, interval=60.0)
    with caplog.at_level(logging.WARNING, "test.limited"):
        for _ in range(100):
            limited.warning("kind", "bad value %s", "v\n" * 10_000)
        now[0] = 60.0
        limited.warning("kind", "again")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3 and all("\n" not in line and len(line) < MAX_LINE + 50 for line in lines)
    assert lines[-1] == "again (suppressed 98 similar)"
    assert one_line("a\x00b\r") == "a\\x00b\\x0d"


def test_a_failing_duty_logs_the_machines_errors_in_one_line_and_bugs_with_their_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    limited = LimitedLog(logging.getLogger("test.duty"), lambda: 0.0, limit=2, interval=60.0)
    with caplog.at_level(logging.ERROR, "test.duty"):
        for _ in range(5):
            try:
                raise OSError(24, "Too many open files")
            except OSError:
                limited.failure("flush", "flush of %s failed", "timercheck")
        try:
            raise KeyError("bug")
        except KeyError:
            limited.failure("bug", "round failed")
    machine, bug = caplog.records[:2], caplog.records[2]
    assert len(caplog.records) == 3
    assert [r.getMessage() for r in machine] == ["flush of timercheck failed: [Errno 24] Too many open files"] * 2
    assert all(r.exc_info in (None, False) for r in machine)
    assert bug.getMessage() == "round failed" and bug.exc_info and bug.exc_info[0] is KeyError


def test_request_bodies_take_the_slow_fastjson_path_only_when_small() -> None:
    fastjson_style = b'{"clientID": "c", "consumerDataSet": [], "x": {' + b",".join(
        b"%d:0" % i for i in range(40_000)) + b"}}"
    assert len(fastjson_style) > REQUEST_LENIENT_MAX
    assert HeartbeatData.from_json(fastjson_style).client_id == "c"  # a client reading a Java peer's answer
    with pytest.raises(BodyError, match="fastjson fallback"):
        HeartbeatData.from_request(fastjson_style)  # a server reading a request on its event loop
    standard = orjson.dumps({"clientID": "c", "x": {str(i): 0 for i in range(40_000)}})
    assert HeartbeatData.from_request(standard).client_id == "c"  # standard JSON of any size is fine
    assert HeartbeatData.from_request(b'{"clientID": "c", "x": {1: 2}}').client_id == "c"
