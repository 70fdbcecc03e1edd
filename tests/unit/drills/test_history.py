"""A drill history survives JSON lines: written, read back, the same records and the same report."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqtools.drills.history import OK, RECEIVE, SEND, UNKNOWN, History, HistoryError, Op
from mqtools.drills.report import build, render, to_json


def sample() -> History:
    h = History(meta={"scenario": "pause-master", "settings": {"keys": 2, "rate": 10}, "criteria": {"maxRto": 5}})
    h.event(0.0, "load-start", "consumers balanced")
    h.ops.append(Op("producer-0", SEND, "r-1", 0.1, 0.12, OK, key="k0", seq=0, planned=0.1, status="SEND_OK",
                    attempts=1, msg_id="U1", broker="broker-a", queue=1, offset=7, commitlog_offset=4096,
                    store_host="127.0.0.1:10911"))
    h.ops.append(Op("producer-1", SEND, "r-2", 1.1, 2.3, UNKNOWN, key="k1", seq=0, planned=1.0,
                    error="RemotingTimeoutError: timed out", attempts=3))
    h.ops.append(Op("consumer-0", RECEIVE, "r-1", 0.2, 0.2, OK, key="k0", seq=0, msg_id="U1", broker="broker-a",
                    queue=1, offset=7, commitlog_offset=4096, size=420, store_host="127.0.0.1:10911"))
    h.event(1.0, "fault", "SIGSTOP broker-a", signal="SIGSTOP")
    h.event(2.0, "offsets-at-return", master={"1": 7}, slave={"1": 8})
    return h


def test_jsonl_round_trip(tmp_path: Path) -> None:
    h = sample()
    path = tmp_path / "drill.jsonl"
    h.write(path)
    lines = path.read_text().splitlines()
    assert lines[0].startswith('{"type":"meta"') and len(lines) == 1 + len(h.ops) + len(h.events)
    back = History.read(path)
    assert back.meta == h.meta
    assert sorted(back.ops, key=lambda o: o.complete) == sorted(h.ops, key=lambda o: o.complete)
    assert back.events == sorted(h.events, key=lambda e: e.time)
    assert to_json(build(back)) == to_json(build(h))
    assert render(build(back)) == render(build(h))


def test_optional_fields_are_left_out_of_each_line() -> None:
    line = Op("consumer-1", RECEIVE, "x", 1.0, 1.0, OK).to_json()
    assert line == {"type": "op", "client": "consumer-1", "op": "receive", "id": "x", "invoke": 1.0,
                    "complete": 1.0, "result": "ok"}


@pytest.mark.parametrize("text, fragment", [
    (b'{"type":"meta","scenario":"kill-master"}\nnot json\n', "line 2"),
    (b'{"type":"meta","scenario":"kill-master"}\n{"type":"op","client":"c"}\n', "line 2"),
    (b'{"type":"op","client":"c","op":"send","id":"a","invoke":0,"complete":0,"result":"ok"}\n', "no meta"),
    (b'{"kind":"something else"}\n', "line 1"),
])
def test_a_file_that_is_not_a_history_is_refused_with_its_line(tmp_path: Path, text: bytes, fragment: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(text)
    with pytest.raises(HistoryError, match=fragment):
        History.read(path)


def test_a_missing_file_is_a_history_error(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="cannot read"):
        History.read(tmp_path / "nope.jsonl")
