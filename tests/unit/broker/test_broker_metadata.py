"""brokerIdentity and brokerIdentity-temp: RocketMQ's format, whole-or-nothing reads."""

from __future__ import annotations

from mqtools.server.broker import broker_metadata as bm
from mqtools.server.broker.broker_metadata import BrokerMetadata


def test_files_are_written_and_read_in_rocketmqs_format(tmp_path):
    path = bm.metadata_path(tmp_path)
    assert path == tmp_path / "brokerIdentity" and bm.temp_path(path) == tmp_path / "brokerIdentity-temp"
    bm.write(path, BrokerMetadata("DefaultCluster", "broker-a", 2))
    assert path.read_text() == "DefaultCluster#broker-a#2"
    assert bm.read(path) == BrokerMetadata("DefaultCluster", "broker-a", 2)
    temp = BrokerMetadata("DefaultCluster", "broker-a", 3, "127.0.0.1:30911;1700000000000")
    bm.write(bm.temp_path(path), temp)
    assert bm.temp_path(path).read_text() == "DefaultCluster#broker-a#3#127.0.0.1:30911;1700000000000"
    assert bm.read(bm.temp_path(path), temp=True) == temp
    bm.remove(bm.temp_path(path))
    bm.remove(bm.temp_path(path))
    assert bm.read(bm.temp_path(path), temp=True) is None


def test_broken_or_partial_files_read_as_absent(tmp_path):
    path = tmp_path / "brokerIdentity"
    for text in ("", "DefaultCluster#broker-a", "#broker-a#1", "DefaultCluster#broker-a#x"):
        path.write_text(text)
        assert bm.read(path) is None, text
    path.write_text("DefaultCluster#broker-a#1")
    assert bm.read(path, temp=True) is None  # a temp file needs its check code
    assert bm.metadata_path(tmp_path, str(tmp_path / "elsewhere")) == tmp_path / "elsewhere"
