"""Cluster presets shipped as package data (conf/<preset>/*.properties, as RocketMQ ships them)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from mqtools.common.brokerrole import BrokerRole
from mqtools.common.errors import ToolkitError
from mqtools.common.exitcodes import EXIT_USAGE
from mqtools.common.javaprops import parse_properties

#: A preset's name server settings (not a broker file); its namesrvCount key is the launcher's, not RocketMQ's.
NAMESRV_FILE = "namesrv.properties"
NAMESRV_COUNT_KEY = "namesrvCount"


class PresetError(ToolkitError, ValueError):
    """Unknown preset or a broken preset file; the message is one line for the user."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class BrokerSpec:
    """One broker of a preset: its file name (without .properties) is the process name."""

    name: str
    props: dict[str, str]

    @property
    def broker_name(self) -> str:
        return self.props.get("brokerName", self.name)

    @property
    def role(self) -> BrokerRole:
        return BrokerRole.parse(self.props.get("brokerRole", BrokerRole.ASYNC_MASTER))

    @property
    def broker_id(self) -> int:
        return int(self.props.get("brokerId", "0"))

    @property
    def is_slave(self) -> bool:
        return self.role is BrokerRole.SLAVE

    @property
    def controlled(self) -> bool:
        """Controller mode: the role and id in the file are placeholders the controllers replace."""
        return self.props.get("enableControllerMode", "false").strip().lower() == "true"


def _conf_root() -> resources.abc.Traversable:
    return resources.files("mqtools.cluster").joinpath("conf")


def list_presets() -> list[str]:
    return sorted(entry.name for entry in _conf_root().iterdir() if entry.is_dir())


def load_preset(name: str) -> list[BrokerSpec]:
    """The preset's brokers, masters first (slaves learn their master's HA address from it)."""
    if name not in list_presets():
        raise PresetError(f"unknown preset {name!r} (known: {', '.join(list_presets())})")
    specs = []
    for entry in _conf_root().joinpath(name).iterdir():
        if entry.name.endswith(".properties") and entry.name != NAMESRV_FILE:
            specs.append(BrokerSpec(entry.name.removesuffix(".properties"), parse_properties(entry.read_text())))
    if not specs:
        raise PresetError(f"preset {name!r} has no broker files")
    return sorted(specs, key=lambda s: (s.is_slave, s.broker_name, s.broker_id, s.name))


@dataclass(frozen=True)
class NamesrvSpec:
    """What every name server of a preset runs with (`namesrv.properties`, when the preset has one)."""

    props: dict[str, str]
    count: int | None
    """How many name servers the preset wants (its `namesrvCount` key); None: as many as asked for."""

    @property
    def with_controller(self) -> bool:
        return self.props.get("enableControllerInNamesrv", "false").strip().lower() == "true"


def load_namesrv_spec(name: str) -> NamesrvSpec:
    entry = _conf_root().joinpath(name).joinpath(NAMESRV_FILE)
    if not entry.is_file():
        return NamesrvSpec({}, None)
    props = parse_properties(entry.read_text())
    raw = props.pop(NAMESRV_COUNT_KEY, None)
    try:
        count = int(raw) if raw is not None else None
    except ValueError:
        raise PresetError(f"preset {name!r}: {NAMESRV_COUNT_KEY}={raw!r} is not a number") from None
    return NamesrvSpec(props, count)


def parse_sets(items: list[str], option: str = "--set") -> dict[str, str]:
    """Repeated `--set key=value` broker properties (`mq cluster up`, `mq admin drill run --preset`), or
    `--namesrv-set` name server ones, or `--proxy-set` proxy ones; a bad one is a PresetError naming it."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PresetError(f"{option} wants key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out
