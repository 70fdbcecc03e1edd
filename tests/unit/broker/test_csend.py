"""The compiled SEND_MESSAGE_V2 (processors/_csend.pyx) and the processor's Python path give the same answers,
the same refusals and the same stored bytes, send for send (issue 46: less work per request).

Two brokers in this process (a store each, no socket, one fixed clock) take the same requests, one with the
compiled path and one without; the frames their connections write (the compiled path writes its answer's frame
itself), then their whole commitlogs and their put statistics must be equal, and the plain sends must have been
answered by the compiled path (or this test would compare the Python path with itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from mqtools.common import properties as P
from mqtools.common.brokerrole import BrokerRole
from mqtools.common.codec import decode_entries
from mqtools.common.perm import PERM_READ
from mqtools.remoting.bodies import TopicConfig
from mqtools.remoting.codes import RequestCode, ResponseCode
from mqtools.remoting.command import RemotingCommand
from mqtools.remoting.frame import FrameDecoder
from mqtools.remoting.headers import send_v2_fields
from mqtools.remoting.server import reply
from mqtools.remoting.transport import RemotingConnection
from mqtools.server.broker import app
from mqtools.server.broker.config import BrokerConfig
from mqtools.server.broker.processors import send
from mqtools.server.broker.stats import BrokerStats
from mqtools.server.store.results import PutMessageStatus

pytestmark = pytest.mark.skipif(send._compiled is None, reason="the compiled send path is not built here "
                                "(no C compiler at install, or MQ_PURE_PYTHON set): nothing to compare")

NOW = 1_700_000_000.123
PEER = ("10.0.0.9", 51234)


class Wire:
    """A connection's transport that keeps what is written."""

    def __init__(self) -> None:
        self.written = b""

    def write(self, data: bytes) -> None:
        self.written += data

    def writelines(self, parts: list[bytes]) -> None:
        self.written += b"".join(parts)

    def get_extra_info(self, name: str, default: object = None) -> object:
        return PEER if name == "peername" else default

    def is_closing(self) -> bool:
        return False


def fields(topic: str = "T", queue_id: int = 3, props: str | None = None, **changes: str | None) -> dict[str, str]:
    if props is None:
        props = P.properties_to_string({P.UNIQ_KEY: "AC11000100002A9F0000000000000001", P.WAIT: "true",
                                        P.TAGS: "TagA", P.KEYS: "k1 k2"})
    ext = send_v2_fields("PG", topic, "TBW102", "4", queue_id, 0, 1_700_000_000_000, 0, props)
    for key, value in changes.items():
        if value is None:
            ext.pop(key, None)
        else:
            ext[key] = value
    return ext


#: (name, the header's short fields, body, whether the compiled path answers it)
CASES: list[tuple[str, dict[str, str], bytes, bool]] = [
    ("plain", fields(), b"hello", True),
    ("no properties", fields(props=""), b"x", True),
    ("WAIT in the middle", fields(props="A\x011\x02WAIT\x01false\x02B\x012\x02"), b"x", True),
    ("WAIT first", fields(props="WAIT\x01true\x02A\x011\x02"), b"x", True),
    ("WAIT last", fields(props="UNIQ_KEY\x01U1\x02WAIT\x01true\x02"), b"x", True),
    ("WAIT alone, unclosed", fields(props="WAIT\x01true"), b"x", True),
    ("WAIT twice", fields(props="WAIT\x01truex\x02A\x011\x02WAIT\x01true\x02"), b"x", True),
    ("no closing separator", fields(props="A\x011\x02B\x012"), b"x", True),
    ("short and bare items", fields(props="A\x02\x02zz\x02C\x01\x02D\x01d\x02"), b"x", True),
    ("empty body", fields(), b"", True),
    ("reconsume times", fields(j="2"), b"x", True),
    ("queue 0", fields(queue_id=0), b"x", True),
    ("spaces in numbers", fields(e=" 1 ", h="+7"), b"x", True),
    ("transaction", fields(props="TRAN_MSG\x01true\x02PGROUP\x01PG\x02"), b"half", False),
    ("transaction false", fields(props="TRAN_MSG\x01false\x02"), b"x", False),
    ("delay level", fields(props="DELAY\x013\x02"), b"x", False),
    ("timer", fields(props="TIMER_DELAY_SEC\x0110\x02"), b"x", False),
    ("own CLUSTER", fields(props="CLUSTER\x01other\x02"), b"x", False),
    ("retry topic", fields(topic="%RETRY%G1", queue_id=0), b"x", False),
    ("new topic", fields(topic="Fresh"), b"x", False),
    ("queue out of range", fields(queue_id=8), b"x", False),
    ("negative queue", fields(queue_id=-1), b"x", False),
    ("flag over an int", fields(h=str(2**31)), b"x", False),
    ("sys flag not a number", fields(f="nine"), b"x", False),
    ("born over a long", fields(g=str(2**63)), b"x", False),
    ("reconsume not a number", fields(j="x"), b"x", False),
    ("max reconsume given", fields(l="3"), b"x", False),
    ("no group", fields(a=None), b"x", False),
    ("no default queue count", fields(d=None), b"x", False),
    ("bad default queue count", fields(d="many"), b"x", False),
    ("read-only topic", fields(topic="RO", queue_id=0), b"x", False),
    ("template topic", fields(topic="TBW102", queue_id=0), b"x", False),
    ("schedule topic", fields(topic="SCHEDULE_TOPIC_XXXX", queue_id=0), b"x", False),
    ("bad topic name", fields(topic="bad topic!"), b"x", False),
    ("body too large", fields(), b"x" * (4 * 1024 * 1024 + 1), False),
    ("numbers with leading zeros and signs", fields(e="-0", f="007", h="-00", j="+0"), b"x", True),
    ("numbers as int() reads them", fields(e="0_1", f="0_0", h="\u0661"), b"x", True),
    ("born at a long's edges", fields(g=str(-2**63)), b"x", True),
    ("born of 19 digits", fields(g=str(2**63 - 1)), b"x", True),
    ("born of 18 digits", fields(g="-999999999999999999"), b"x", True),
    ("a bare minus", fields(e="-"), b"x", False),
    ("characters next to the digits", fields(f="1:"), b"x", False),
    ("a digit past a sign", fields(h="-/"), b"x", False),
    ("an int's edges", fields(h=str(-2**31), f=str(2**31 - 1)), b"x", True),
    ("under an int", fields(h=str(-2**31 - 1)), b"x", False),
    ("an int of 25 digits", fields(h="9" * 25), b"x", False),
    ("default queue count of int() only", fields(d=" 4"), b"x", True),
    ("Latin-1 properties", fields(props="K\x01v\xe9\x02WAIT\x01false\x02\xe9t\xe9\x01x\x02"), b"x", True),
    ("wide properties", fields(props="K\x01\u4e2d\x02WAIT\x01true\x02"), b"x", True),
    ("wide properties with a delay", fields(props="\u4e2d\x01x\x02DELAY\x012\x02"), b"x", False),
    ("Latin-1 WAIT value", fields(props="WAIT\x01f\xe4lse\x02"), b"x", True),
    ("a special name as a value", fields(props="K\x01DELAY\x02V\x01TRAN_MSG\x02"), b"x", True),
    ("a special name's prefix", fields(props="DELA\x011\x02DELAYS\x011\x02"), b"x", True),
]


def random_properties(rng: random.Random) -> str:
    """A properties string of names, values and separators, some of them the ones the compiled send reads."""
    tokens = ["WAIT", "true", "false", "DELAY", "TRAN_MSG", "CLUSTER", "K", "v", "\xe9", "\u4e2d", "", "ab"]
    return "".join(rng.choice(tokens) + rng.choice(["\x01", "\x02", "", "\x01\x02"]) for _ in range(rng.randint(0, 8)))


def specials_in(props: str) -> bool:
    names = {P.TRAN_MSG, P.DELAY, P.CLUSTER, P.TIMER_DELIVER_MS, P.TIMER_DELAY_SEC, P.TIMER_DELAY_MS}
    return bool(names & set(P.string_to_properties(props)))


_rng = random.Random(46)
CASES += [(f"random properties {i}", fields(props=props), b"x", not specials_in(props))
          for i, props in enumerate(random_properties(_rng) for _ in range(60))]


@contextlib.asynccontextmanager
async def broker(store: Path) -> AsyncIterator[app.BrokerController]:
    cfg = BrokerConfig(listen_port=0, bind_address="127.0.0.1", store_path_root_dir=str(store), broker_name="b1",
                       broker_cluster_name="C1")
    cfg.extra["mappedFileSizeCommitLog"] = str(8 * 1024 * 1024)
    cfg.extra["maxMessageSize"] = str(4 * 1024 * 1024)
    cfg.validate()
    controller = app.BrokerController(cfg, clock=lambda: NOW)
    await controller.store.start()
    for name, perm in (("T", 6), ("RO", PERM_READ)):
        controller.topics.update(TopicConfig(name, 8, 8, perm))
    try:
        yield controller
    finally:
        await controller.store.shutdown()


async def answer(processor: Callable, ext: dict[str, str], body: bytes, opaque: int = 7) -> tuple:
    """The answer's code, remark and fields and the frame the connection wrote, as the remoting server answers
    what the processor returns; or the error a malformed header raises (the server answers it with
    SYSTEM_ERROR and its text)."""
    req = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, dict(ext), body)
    req.opaque = opaque
    random.seed(7)  # a negative queue id takes a random writable queue: the same one on both sides
    wire, conn = Wire(), RemotingConnection()
    conn.connection_made(wire)  # type: ignore[arg-type]
    try:
        resp = processor(conn, req)
        if resp is not None and not isinstance(resp, RemotingCommand):
            resp = await resp
    except Exception as exc:  # noqa: BLE001 - compared, not handled
        return type(exc).__name__, str(exc)
    reply(conn, req, resp)
    await asyncio.sleep(0)  # the connection's flush
    (frame,) = FrameDecoder().feed(wire.written)
    return frame.code, frame.remark, frame.ext_fields, wire.written


def entries(controller: app.BrokerController) -> list:
    cl = controller.store.commitlog
    return decode_entries(cl.slice(0, cl.max_offset))


async def test_the_compiled_send_answers_and_stores_what_the_python_path_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    general: list[str] = []
    header: Callable = send.SendProcessor._header
    monkeypatch.setattr(send.SendProcessor, "_header", lambda self, req: general.append("") or header(self, req))
    async with broker(tmp_path / "compiled") as fast, broker(tmp_path / "python") as slow:
        compiled_v2, python_v2 = send.SendProcessor(fast).send_v2, send.SendProcessor(slow).send_message
        assert isinstance(compiled_v2, send._compiled.SendV2)
        for name, ext, body, compiled in CASES:
            general.clear()
            got = await answer(compiled_v2, ext, body)
            assert bool(general) is not compiled, f"{name}: {'general' if general else 'compiled'} path answered"
            want = await answer(python_v2, ext, body)
            assert got == want, name
        assert fast.store.commitlog.max_offset == slow.store.commitlog.max_offset > 0
        assert entries(fast) == entries(slow)
        assert fast.stats.put_msgs.total == slow.stats.put_msgs.total > 0
        assert vars_of(fast.stats) == vars_of(slow.stats)


async def test_the_answer_carries_any_opaque_as_the_python_path_writes_it(tmp_path: Path) -> None:
    """A Java client's opaque counts up from 0 and wraps past 2**31 - 1 to negative numbers."""
    async with broker(tmp_path / "compiled") as fast, broker(tmp_path / "python") as slow:
        compiled_v2, python_v2 = send.SendProcessor(fast).send_v2, send.SendProcessor(slow).send_message
        for opaque in (0, 1, 9, 10, 2**31 - 1, -(2**31), -1, -10):
            assert await answer(compiled_v2, fields(), b"x", opaque) == await answer(python_v2, fields(), b"x", opaque)


def vars_of(stats: BrokerStats) -> dict:
    """The put figures of a broker's statistics (the compiled path counts most sends itself)."""
    counters = {"total": stats.put_msgs, **{f"topic {t}": c for t, c in stats.topic_put.items()}}
    return {"bytes": stats.put_bytes_total, "times": stats.put_times_total, "topic bytes": stats.topic_put_bytes,
            **{name: (c.total, c.secs, c.mins, c._sec, c._cur) for name, c in counters.items()}}


async def test_a_slave_or_a_write_forbidden_broker_is_refused_as_before(tmp_path: Path) -> None:
    async with broker(tmp_path / "compiled") as fast, broker(tmp_path / "python") as slow:
        for controller in (fast, slow):
            controller.config.broker_permission = PERM_READ
        got = await answer(send.SendProcessor(fast).send_v2, fields(), b"x")
        want = await answer(send.SendProcessor(slow).send_message, fields(), b"x")
        assert got == want and got[0] != 0


async def test_a_send_that_waited_too_long_is_refused_as_before(tmp_path: Path) -> None:
    """Fast failure: the compiled processor asks it only once its probe is overdue, and then as the processor
    does (the remark names the wait, which moves by the millisecond between the two)."""
    loop = asyncio.get_running_loop()
    async with broker(tmp_path / "compiled") as fast, broker(tmp_path / "python") as slow:
        got = await answer(send.SendProcessor(fast).send_v2, fields(), b"x")
        assert got[0] == ResponseCode.SUCCESS  # a probe not yet due: nothing waited
        for controller in (fast, slow):
            controller.config.broker_fast_failure_enable = True
            controller.fast_failure._loop, controller.fast_failure._due = loop, loop.time() - 10.0
        got = await answer(send.SendProcessor(fast).send_v2, fields(), b"x")
        want = await answer(send.SendProcessor(slow).send_message, fields(), b"x")
        assert got[0] == want[0] == ResponseCode.SYSTEM_BUSY
        assert got[1].startswith("[TIMEOUT_CLEAN_QUEUE]broker busy") and want[1].startswith(got[1][:60])
        assert fast.fast_failure.wait.peak_ms >= 10_000 and slow.fast_failure.wait.peak_ms >= 10_000


class WaitsForSlave:
    """A SYNC_MASTER's HA service as the store sees it: the puts' waits for a slave, ended by the test."""

    def __init__(self) -> None:
        self.waits: list[tuple[int, Callable]] = []

    def refuse_put(self) -> None:
        return None

    def when_replicated(self, end_offset: int, timeout_s: float, done: Callable) -> None:
        self.waits.append((end_offset, done))


@pytest.mark.parametrize("status", [PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
                                    PutMessageStatus.SLAVE_NOT_AVAILABLE])
async def test_a_sync_master_send_is_answered_when_its_wait_ends_as_the_python_path_answers_it(
        tmp_path: Path, status: PutMessageStatus) -> None:
    """The compiled send registers its answer as the wait's callback (no future): nothing is written until the wait
    ends, then the frame the Python path's future-borne answer writes, for an ack as for a timeout or no slave."""
    async with broker(tmp_path / "compiled") as fast, broker(tmp_path / "python") as slow:
        wires, hooks = [], []
        for controller, processor in ((fast, send.SendProcessor(fast).send_v2),
                                      (slow, send.SendProcessor(slow).send_message)):
            controller.store.config.broker_role = BrokerRole.SYNC_MASTER
            controller.store.ha_hook = hook = WaitsForSlave()
            await controller.topics.until_written()  # a topic change still being written leaves sends to Python
            req = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, fields(), b"x")
            req.opaque = 7
            wire, conn = Wire(), RemotingConnection()
            conn.connection_made(wire)  # type: ignore[arg-type]
            result = processor(conn, req)
            if controller is fast:
                assert result is None  # answered by the wait's callback
            else:
                assert isinstance(result, asyncio.Future)
                controller.server.answer(conn, req, result)
            await asyncio.sleep(0)
            assert wire.written == b"" and len(hook.waits) == 1
            wires.append(wire)
            hooks.append(hook)
        assert hooks[0].waits[0][0] == hooks[1].waits[0][0] == fast.store.commitlog.max_offset
        assert type(hooks[0].waits[0][1]) is send._compiled.ReplicatedAnswer
        for hook in hooks:
            hook.waits[0][1](status)
        for _ in range(3):  # the future's callbacks, then the connection's flush
            await asyncio.sleep(0)
        assert wires[0].written == wires[1].written != b""
        assert FrameDecoder().feed(wires[0].written)[0].code == {
            PutMessageStatus.PUT_OK: ResponseCode.SUCCESS, PutMessageStatus.FLUSH_SLAVE_TIMEOUT:
            ResponseCode.FLUSH_SLAVE_TIMEOUT, PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE}[status]
        assert vars_of(fast.stats) == vars_of(slow.stats)
