"""MessageStoreConfig: RocketMQ property names and defaults."""

from __future__ import annotations

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

