"""The timer's files byte for byte against the layouts of Apache RocketMQ 5's TimerLog, Slot/TimerWheel,
TimerCheckpoint and TimerMetrics (store/timer/*.java), written out here by hand."""

from __future__ import annotations

import json

import pytest

from mqtools.server.store.timer import timer_log as TL
from mqtools.server.store.timer.timer_checkpoint import DataVersion, TimerCheckpoint, TimerCheckpointFile
from mqtools.server.store.timer.timer_metrics import TimerMetrics
from mqtools.server.store.timer.timer_wheel import (
    EMPTY_SLOT,
    IGNORE,
    SLOTS_TOTAL,
    Slot,
    TimerWheel,
    WheelGeometry,
)


def be(value: int, size: int) -> bytes:
    return value.to_bytes(size, "big", signed=True)


# ---------------------------------------------------------------- TimerLog


def test_record_layout_is_apaches_52_bytes() -> None:
    rec = TL.TimerRecord(
        prev_pos=104,
        magic=TL.MAGIC_DEFAULT | TL.MAGIC_ROLL,
        write_time=1_700_000_000_000,
        delay=172_800_000,
        offset_py=4096,
        size_py=321,
        topic_hash=-123456,
    )
    expected = (
        be(52, 4)
        + be(104, 8)
        + be(3, 4)
        + be(1_700_000_000_000, 8)
        + be(172_800_000, 4)
        + be(4096, 8)
        + be(321, 4)
        + be(-123456, 4)
        + be(0, 8)
    )
    assert TL.UNIT_SIZE == 52 == len(expected)
    assert rec.encode() == expected
    assert TL.TimerRecord.decode(expected) == rec
    assert rec.delayed_time == 1_700_000_000_000 + 172_800_000
    # offsetPy / sizePy and the topic hash sit where Apache's UNIT_PRE_SIZE_FOR_MSG / _FOR_METRIC say
    assert expected[TL.UNIT_PRE_SIZE_FOR_MSG : TL.UNIT_PRE_SIZE_FOR_MSG + 12] == be(4096, 8) + be(321, 4)
    assert expected[TL.UNIT_PRE_SIZE_FOR_METRIC : TL.UNIT_PRE_SIZE_FOR_METRIC + 4] == be(-123456, 4)


def test_blank_magic_and_last_unit_offset() -> None:
    # Java: 0xBBCCDDEE ^ 1880681586 + 8 (+ binds first), an int
    java = (0xBBCCDDEE ^ (1880681586 + 8)) & 0xFFFFFFFF
    assert TL.BLANK_MAGIC_CODE == java - (1 << 32) == -875286124
    size = 100 * 1024 * 1024
    last = TL.offset_for_last_unit(size)
    assert last % 52 == 0 and size - (last + 52) >= 16 and size - (last + 52 + 52) < 16
    assert TL.is_magic_ok(0b1111) and not TL.is_magic_ok(0x10) and not TL.is_magic_ok(TL.BLANK_MAGIC_CODE)


def test_log_closes_a_full_file_with_apaches_blank(tmp_path) -> None:
    log = TL.TimerLog(tmp_path / "timerlog", 52 * 3 + 20)  # three records and 20 bytes left: the 4th rolls
    rec = TL.TimerRecord(-1, 1, 1000, 0, 0, 10, 0)
    positions = [log.append(rec.encode()) for _ in range(4)]
    assert positions == [0, 52, 104, 176]
    first = log.queue.files[0]
    assert bytes(first.mv[156:172]) == be(20, 4) + be(0, 8) + be(TL.BLANK_MAGIC_CODE, 4)
    assert [f.path.name for f in log.queue.files] == ["00000000000000000000", "00000000000000000176"]
    end, found = log.scan_valid(0, check=True)
    assert end == 176 + 52 and [p for p, _ in found] == positions
    log.close()


def test_scan_stops_at_a_torn_record_and_truncate_cuts_it(tmp_path) -> None:
    log = TL.TimerLog(tmp_path / "timerlog", 52 * 10)
    for i in range(3):
        log.append(TL.TimerRecord(-1, 1, 1000, i, i, 10, 0).encode())
    mf = log.queue.files[0]
    mf.mm[156:160] = be(52, 4)  # a torn 4th record: size written, a magic Apache's isMagicOK refuses
    mf.mm[168:172] = be(0x7F, 4)
    end, found = log.scan_valid(0, check=True)
    assert end == 156 and len(found) == 3
    log.truncate_dirty(end)
    assert log.max_offset == 156 and bytes(mf.mv[156:172]) == b"\0" * 16
    log.close()


# ---------------------------------------------------------------- TimerWheel


def test_wheel_geometry_is_apaches() -> None:
    assert SLOTS_TOTAL == 7 * 24 * 3600
    g = WheelGeometry(precision_ms=1000)
    assert g.length == SLOTS_TOTAL * 2 * 32 == 38_707_200
    assert g.slot_index(1_700_000_123_456) == 1_700_000_123 % (2 * SLOTS_TOTAL)
    assert WheelGeometry(precision_ms=100).slot_index(1_700_000_123_456) == 17_000_001_234 % (2 * SLOTS_TOTAL)


def test_slot_bytes_and_laps(tmp_path) -> None:
    wheel = TimerWheel(tmp_path / "timerwheel", slots_total=100, precision_ms=500)
    assert (tmp_path / "timerwheel").stat().st_size == 100 * 2 * 32
    t = 1_700_000_001_500
    wheel.put_slot(t, 52, 520, 7, 0)
    index = t // 500 % 200
    raw = bytes(wheel.mm[index * 32 : index * 32 + 32])
    assert raw == be(t // 500, 8) + be(52, 8) + be(520, 8) + be(7, 4) + be(0, 4)
    assert wheel.get_slot(t + 499) == Slot(t, 52, 520, 7, 0)  # same tick
    assert wheel.get_slot(t + 200 * 500) == EMPTY_SLOT  # same index, next lap
    assert wheel.get_raw_slot(t + 200 * 500).time_ms == t
    wheel.revise_slot(t, IGNORE, 572, force=False)
    assert wheel.get_slot(t) == Slot(t, 52, 572, 7, 0)
    wheel.revise_slot(t + 200 * 500, IGNORE, 624, force=True)  # another lap: replaced, count from 0
    assert wheel.get_slot(t + 200 * 500) == Slot(t + 200 * 500, 624, 624, 0, 0)
    wheel.put_slot(t + 1000, 700, 800, 3)
    assert (
        wheel.get_all_num(t) == 3 and wheel.check_phy_pos(t, 750) == 700 and wheel.check_phy_pos(t, 900) > 900
    )
    wheel.close()


def test_wheel_of_the_wrong_size_is_refused(tmp_path) -> None:
    (tmp_path / "timerwheel").write_bytes(b"\0" * 100)
    with pytest.raises(ValueError, match="length"):
        TimerWheel(tmp_path / "timerwheel", slots_total=100)


# ---------------------------------------------------------------- checkpoint and metrics


def test_checkpoint_layout_and_file(tmp_path) -> None:
    cp = TimerCheckpoint(1_700_000_000_000, 5200, 41, 42, DataVersion(3, 1_699_999_999_000, 9))
    data = cp.encode()
    assert data == b"".join(be(v, 8) for v in (1_700_000_000_000, 5200, 41, 42, 3, 1_699_999_999_000, 9))
    assert TimerCheckpoint.decode(data) == cp
    assert TimerCheckpoint.decode(data[:32]) == TimerCheckpoint(1_700_000_000_000, 5200, 41, 42)
    f = TimerCheckpointFile(tmp_path / "config" / "timercheck")
    assert not f.existed and f.value == TimerCheckpoint()
    f.value = cp
    f.flush()
    raw = (tmp_path / "config" / "timercheck").read_bytes()
    assert len(raw) == 4096 and raw[:56] == data and raw[56:] == b"\0" * 4040
    again = TimerCheckpointFile(tmp_path / "config" / "timercheck")
    assert again.existed and again.value == cp


def test_metrics_json_is_the_serialize_wrapper(tmp_path) -> None:
    now = [1_700_000_000_000]
    m = TimerMetrics(tmp_path / "timermetrics", lambda: now[0])
    m.add("TopicA", 1)
    now[0] += 5
    m.add("TopicA", 1)
    m.add(None, 1)  # no REAL_TOPIC: not counted
    body = json.loads(m.encode())
    assert body == {
        "dataVersion": {"counter": 2, "stateVersion": 0, "timestamp": now[0]},
        "timingCount": {"TopicA": {"count": 2, "timeStamp": now[0]}},
    }
    m.persist()
    other = TimerMetrics(tmp_path / "timermetrics", lambda: 0)
    assert other.load() and other.count("TopicA") == 2 and other.data_version["counter"] == 2
