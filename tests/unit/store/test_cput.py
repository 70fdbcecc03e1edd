"""A master's compiled put (store/_cput.pyx) and MessageStore.put_message_inline's Python path store the same
bytes, queues and index, and give the same results, put for put (issue 46: less work per request).

Two stores on tiny files (so the commitlog and the consume queues roll), one fixed clock, the same messages; one
puts through the compiled path, one without it. The plain puts must have been taken by the compiled path, or
this would compare the Python path with itself. The rest of the store suite runs on both paths as well: on
the compiled one in `make test`'s first phase, on the Python one in its pure-Python rerun.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from unit.store.store_helpers import inner, tiny_config

from mqtools.common.brokerrole import BrokerRole
from mqtools.common.sysflag import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from mqtools.common.topics import SCHEDULE_TOPIC
from mqtools.server.store import message_store
from mqtools.server.store.message_store import MessageStore
from mqtools.server.store.results import PutMessageResult, PutMessageStatus

pytestmark = pytest.mark.skipif(message_store._compiled is None, reason="the compiled put is not built here (no C "
                                "compiler at install, or MQ_PURE_PYTHON set): nothing to compare")


def puts() -> list[tuple[str, object, bool]]:
    """(name, message, whether the compiled path takes it)."""
    v6 = inner(body=b"six")
    v6.born_host = ("::1", 4000)
    return [
        ("plain", inner(TAGS="a", KEYS="k1 k2", UNIQ_KEY="U1"), True),
        ("no properties", inner(), True),
        ("WAIT false", inner(WAIT="false"), True),
        ("other queue", inner(queue_id=3, TAGS="b"), True),
        ("IPv6 born host", v6, True),
        ("prepared half", inner(UNIQ_KEY="H1", sys=TRANSACTION_PREPARED_TYPE), True),
        ("committed", inner(UNIQ_KEY="C1", sys=TRANSACTION_COMMIT_TYPE), True),
        ("rolled back", inner(UNIQ_KEY="R1", sys=TRANSACTION_ROLLBACK_TYPE), True),
        ("long topic", inner(topic="L" * 200), True),
        *((f"roll {i}", inner(body=bytes([i]) * 300, UNIQ_KEY=f"N{i}"), True) for i in range(30)),
        ("schedule topic", inner(topic=SCHEDULE_TOPIC, DELAY="3", REAL_TOPIC="T", REAL_QID="0"), False),
        ("empty topic", inner(topic=""), False),
        ("topic over 255 bytes", inner(topic="t" * 256), False),
        ("properties too long", inner(P="p" * 33000), False),
        ("body too large", inner(body=b"x" * 5000), False),
    ]


@contextlib.asynccontextmanager
async def store(root: Path) -> AsyncIterator[MessageStore]:
    s = MessageStore(tiny_config(root, max_message_size=4096), clock=lambda: 1_700_000_000.5)
    await s.start()
    try:
        yield s
    finally:
        await s.shutdown()


def result(put: object) -> tuple:
    return put.status, put.remark, put.append


def failing_listener(*_args: object) -> None:
    raise RuntimeError("a listener that fails")


async def test_the_compiled_put_stores_what_the_python_path_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    general: list[str] = []
    check = MessageStore._check_service
    async with store(tmp_path / "compiled") as fast, store(tmp_path / "python") as slow:
        arrivals: dict[MessageStore, list[tuple]] = {fast: [], slow: []}
        for side, seen in arrivals.items():  # one listener failing must not stop the next or fail the put
            side.add_arrival_listener(failing_listener)
            side.add_arrival_listener(lambda *args, seen=seen: seen.append(args))
        for (name, one, compiled), (_, two, _) in zip(puts(), puts(), strict=True):
            for msg in (one, two):
                sys_flag = msg.properties.pop("sys", None)
                if sys_flag is not None:
                    msg.sys_flag = sys_flag
            general.clear()
            monkeypatch.setattr(MessageStore, "_check_service", lambda self: general.append("") or check(self))
            got = fast.put_message_inline(one)
            assert bool(general) is not compiled, f"{name}: {'Python' if general else 'compiled'} path took it"
            monkeypatch.setattr(message_store, "_compiled", None)
            want = slow.put_message_inline(two)
            monkeypatch.undo()
            assert result(got) == result(want), name
            assert (one.store_timestamp, one.queue_offset, one.commit_log_offset, one.msg_id) == \
                (two.store_timestamp, two.queue_offset, two.commit_log_offset, two.msg_id), name
        assert len(fast.commitlog.queue.files) > 3
        for a, b in zip(fast.commitlog.queue.files, slow.commitlog.queue.files, strict=True):
            assert (a.start, a.wrote, bytes(a.mm[:a.wrote])) == (b.start, b.wrote, bytes(b.mm[:b.wrote]))
        assert fast.dispatcher.next_offset == slow.dispatcher.next_offset
        for cq in fast.dispatcher.all_cqs():
            twin = slow.dispatcher.cq(cq.topic, cq.queue_id)
            assert twin is not None and [bytes(f.mm[:f.wrote]) for f in cq.queue.files] == \
                [bytes(f.mm[:f.wrote]) for f in twin.queue.files]
        assert fast.query_message("T", "N7", 32, 0, 2**62) and fast.query_message("T", "k1", 32, 0, 2**62)
        for key in ("k1", "U1", "N7", "H1", "C1", "R1"):
            assert [m.commit_log_offset for m in fast.query_message("T", key, 32, 0, 2**62)] == \
                [m.commit_log_offset for m in slow.query_message("T", key, 32, 0, 2**62)], key
        assert (fast.stats.put_times, fast.stats.put_size, fast.stats.put_failures) == \
            (slow.stats.put_times, slow.stats.put_size, slow.stats.put_failures)
        assert (fast.dispatcher.reput_offset, fast.dispatcher.last_store_ts) == \
            (slow.dispatcher.reput_offset, slow.dispatcher.last_store_ts)
        assert arrivals[fast] and arrivals[fast] == arrivals[slow]
        failed = [r for r in caplog.records if r.getMessage().startswith("arrival listener") and r.exc_info]
        assert len(failed) == 2 * len(arrivals[fast])


class Replication:
    """A SYNC_MASTER's ha_hook: refuses puts with `why` (controller mode's minInSyncReplicas), else acknowledges."""

    def __init__(self, why: str | None = None) -> None:
        self.why = why
        self.waited: list[int] = []

    def refuse_put(self) -> str | None:
        return self.why

    def when_replicated(self, end_offset: int, timeout_s: float, done: Callable[[PutMessageStatus], None]) -> None:
        self.waited.append(end_offset)
        done(PutMessageStatus.PUT_OK)


@pytest.mark.parametrize("why", [None, "in-sync replicas not enough"])
async def test_a_sync_master_put_waits_for_its_slave_or_is_refused_as_the_python_path_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, why: str | None) -> None:
    general: list[str] = []
    check = MessageStore._check_service
    async with store(tmp_path / "compiled") as fast, store(tmp_path / "python") as slow:
        hooks = {}
        for side in (fast, slow):
            side.config.broker_role = BrokerRole.SYNC_MASTER
            side.ha_hook = hooks[side] = Replication(why)
        for name, one, two in (("plain", inner(UNIQ_KEY="S1"), inner(UNIQ_KEY="S1")),
                               ("WAIT false", inner(WAIT="false"), inner(WAIT="false"))):
            monkeypatch.setattr(MessageStore, "_check_service", lambda self: general.append("") or check(self))
            general.clear()
            got = fast.put_message_inline(one)
            assert bool(general) is (why is not None), name  # refused: the Python path answered
            monkeypatch.setattr(message_store, "_compiled", None)
            want = slow.put_message_inline(two)
            monkeypatch.undo()
            got = got if isinstance(got, PutMessageResult) else await got
            want = want if isinstance(want, PutMessageResult) else await want
            assert result(got) == result(want), name
        assert hooks[fast].waited == hooks[slow].waited and len(hooks[fast].waited) == (0 if why else 1)
        assert fast.commitlog.max_offset == slow.commitlog.max_offset
