"""MessageStoreConfig property names and the config/ JSON files (fastjson keys, atomic writes, .bak)."""

from __future__ import annotations

import json

from mqtools.server.store import config_files as cf
from mqtools.server.store.config import STORE_PROPERTIES, MessageStoreConfig


def test_defaults_and_property_names():
    c = MessageStoreConfig(store_path_root_dir="/x")
    assert c.mapped_file_size_commit_log == 1 << 30 and c.mapped_file_size_consume_queue == 6_000_000
    assert c.sync_flush_timeout == 5000 and c.file_reserved_time == 72 and c.delete_when == "04"
    assert STORE_PROPERTIES.keys["check_crc_on_recover"] == "checkCRCOnRecover"
    assert STORE_PROPERTIES.keys["os_page_cache_busy_time_out_mills"] == "osPageCacheBusyTimeOutMills"
    assert str(c.commit_log_dir) == "/x/commitlog"


def test_from_properties_parses_types_and_legacy_names():
    c = MessageStoreConfig.from_properties({
        "storePathRootDir": " /data/s ", "flushDiskType": "SYNC_FLUSH", "mapedFileSizeCommitLog": "8192",
        "checkCRCOnRecover": "false", "brokerIP1": "10.0.0.9", "listenPort": "10915", "unknownKey": "1"})
    assert c.store_path_root_dir == "/data/s" and str(c.commit_log_dir) == "/data/s/commitlog"
    assert c.sync_flush and c.mapped_file_size_commit_log == 8192 and c.check_crc_on_recover is False
    assert c.store_host == ("10.0.0.9", 10915)
    again = MessageStoreConfig.from_properties(c.to_properties())
    assert again == c


def test_fastjson_unquoted_integer_keys_are_read():
    text = '{\n\t"offsetTable":{\n\t\t"T@g":{0:12,1:3,10:7},\n\t\t"a,1:b@g":{"2":5}\n\t}\n}'
    data = cf.loads(text)
    assert data["offsetTable"]["T@g"] == {"0": 12, "1": 3, "10": 7}
    assert "a,1:b@g" in data["offsetTable"]


def test_persist_keeps_bak_and_falls_back(tmp_path):
    path = tmp_path / "config" / "consumerOffset.json"
    cf.persist_consumer_offsets(path, {"T@g": {0: 1}})
    cf.persist_consumer_offsets(path, {"T@g": {0: 2}})
    assert json.loads(path.read_text())["offsetTable"]["T@g"] == {"0": 2}
    assert cf.load_consumer_offsets(path.with_name("consumerOffset.json.bak")) == {"T@g": {0: 1}}
    path.write_text("{broken")
    assert cf.load_consumer_offsets(path) == {"T@g": {0: 1}}
    path.write_text("")
    assert cf.load_consumer_offsets(path) == {"T@g": {0: 1}}
    assert not path.with_name("consumerOffset.json.tmp").exists()


def test_delay_offsets_roundtrip(tmp_path):
    path = tmp_path / "delayOffset.json"
    path.write_text('{"offsetTable":{1:5,3:9}}')
    assert cf.load_delay_offsets(path) == {1: 5, 3: 9}
    cf.persist_delay_offsets(path, {2: 4, 1: 6})
    assert cf.load_delay_offsets(path) == {1: 6, 2: 4}
    assert cf.load(tmp_path / "missing.json") is None
