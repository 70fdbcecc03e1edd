"""Delay levels: parsing, the level table, redirection to SCHEDULE_TOPIC_XXXX, delayOffset.json.

Load/persist rules (backup, newest wins) are ConfigManager's, tested in test_config_manager."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from mqtools.server.store.delay_levels import DEFAULT_DELAY_LEVELS, DelayLevelTable, parse_delay_levels
from mqtools.server.store.schedule import ScheduleMessageService, redirect_to_schedule


def test_default_table_matches_rocketmq() -> None:
    table = DelayLevelTable(DEFAULT_DELAY_LEVELS)
    assert table.max_level == 18
    assert table.delay_ms(1) == 1000 and table.delay_ms(3) == 10_000 and table.delay_ms(18) == 7_200_000
    assert table.deliver_timestamp(5, 1_000) == 61_000
    assert table.deliver_timestamp(99, 0) == 7_200_000  # clamped to the last level
    assert table.delay_ms(0) == 1000  # unknown level: 1 s


def test_parse_units() -> None:
    assert parse_delay_levels("1s 2m 3h 1d") == [1000, 120_000, 10_800_000, 86_400_000]
    assert parse_delay_levels("  5S\t10s ") == [5000, 10_000]


def _msg(**props: str) -> SimpleNamespace:
    return SimpleNamespace(topic="Real", queue_id=3, properties=dict(props))


def test_redirect_moves_delayed_messages_only() -> None:
    table = DelayLevelTable("1s 5s 10s")
    plain = _msg(TAGS="a")
    assert not redirect_to_schedule(plain, table)
    assert plain.topic == "Real" and plain.properties == {"TAGS": "a"}
    bad = _msg(DELAY="x")
    assert not redirect_to_schedule(bad, table)

    msg = _msg(DELAY="2", TAGS="a")
    assert redirect_to_schedule(msg, table)
    assert (msg.topic, msg.queue_id) == ("SCHEDULE_TOPIC_XXXX", 1)
    assert msg.properties["REAL_TOPIC"] == "Real" and msg.properties["REAL_QID"] == "3"

    high = _msg(DELAY="40")
    assert redirect_to_schedule(high, table)
    assert high.queue_id == 2 and high.properties["DELAY"] == "3"


def test_delay_offsets_roundtrip_in_rocketmq_bytes_and_fastjson_file(tmp_path: Path) -> None:
    svc = ScheduleMessageService(None, tmp_path, "1s 2s")
    assert not svc.load()
    svc.offset_table = {2: 9, 1: 4, 10: 0}
    svc.persist()
    assert (tmp_path / "delayOffset.json").read_bytes() == b'{"offsetTable":{"1":4,"2":9,"10":0}}'
    again = ScheduleMessageService(None, tmp_path, "1s 2s")
    assert again.load() and again.offset_table == {1: 4, 2: 9, 10: 0}
    (tmp_path / "delayOffset.json").write_text('{\n\t"offsetTable":{1:7,2:0}\n}')  # as fastjson writes it
    assert again.load() and again.offset_table == {1: 7, 2: 0}


@pytest.mark.parametrize("spec", ["", "1x", "s", "5 m", "1.5s"])
def test_bad_delay_spec(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_delay_levels(spec)
