"""PropertyMap: dataclass fields <-> RocketMQ camelCase properties, typed, with aliases."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from mqtools.common.brokerrole import BrokerRole
from mqtools.common.configkeys import ConfigError, PropertyMap


@dataclass
class Sample:
    listen_port: int = 1
    auto_create: bool = True
    broker_ip1: str = "127.0.0.1"
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    mapped_file_size: int = 10
    extra: dict[str, str] = field(default_factory=dict)


SAMPLE = PropertyMap(Sample, overrides={"broker_ip1": "brokerIP1"},
                     aliases={"mapedFileSize": "mappedFileSize"})


def test_keys_types_and_round_trip() -> None:
    assert list(SAMPLE.fields) == ["listenPort", "autoCreate", "brokerIP1", "brokerRole", "mappedFileSize"]
    cfg = SAMPLE.build({" listenPort": " 9 ", "autoCreate": "FALSE", "brokerRole": "slave",
                        "mapedFileSize": "64", "unknownKey": "x"})
    assert cfg == Sample(listen_port=9, auto_create=False, broker_role=BrokerRole.SLAVE, mapped_file_size=64)
    props = SAMPLE.to_properties(cfg, {"unknownKey": "x"})
    assert props["autoCreate"] == "false" and props["brokerRole"] == "SLAVE" and props["unknownKey"] == "x"
    assert "mapedFileSize" not in props and SAMPLE.build(props) == cfg
    assert SAMPLE.unknown({"unknownKey": "x", "mapedFileSize": "1", "listenPort": "2"}) == {"unknownKey": "x"}


@pytest.mark.parametrize(("props", "message"), [
    ({"listenPort": "abc"}, "listenPort must be an integer, not 'abc'"),
    ({"autoCreate": "yes"}, "autoCreate must be true or false, not 'yes'"),
    ({"brokerRole": "LEADER"}, "brokerRole must be one of ASYNC_MASTER, SYNC_MASTER, SLAVE, not 'LEADER'"),
    ({"mapedFileSize": "big"}, "mapedFileSize must be an integer"),
])
def test_bad_values_name_the_key(props: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SAMPLE.parse(props)


def test_fields_of_other_types_are_refused() -> None:
    @dataclass
    class Odd:
        ratio: float = 0.5

    with pytest.raises(TypeError, match="ratio"):
        PropertyMap(Odd)
