"""The broker's identity at its controller: `brokerIdentity` and `brokerIdentity-temp` in the store root.

Controller mode gives each broker of a set an id of its own, applied for in two steps so a broker that
dies between them neither loses its id nor takes two: the id the controller offered is first written to
the temp file with a check code ("brokerAddr;millis") that marks this broker's application; once the
controller confirms it, the id goes to the metadata file and the temp file goes. Both are RocketMQ's
format ("cluster#brokerName#brokerId[#checkCode]", no newline), so mq and Apache brokers can take over
each other's store.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from mqtools.common.atomic_file import write_atomic

FILE_NAME = "brokerIdentity"
TEMP_SUFFIX = "-temp"


@dataclass(frozen=True, slots=True)
class BrokerMetadata:
    cluster_name: str
    broker_name: str
    broker_id: int
    register_check_code: str | None = None

    def render(self) -> str:
        parts = [self.cluster_name, self.broker_name, str(self.broker_id)]
        if self.register_check_code is not None:
            parts.append(self.register_check_code)
        return "#".join(parts)


def metadata_path(store_root: Path, configured: str = "") -> Path:
    """storePathBrokerIdentity, or brokerIdentity in the store root."""
    return Path(configured) if configured else store_root / FILE_NAME


def temp_path(path: Path) -> Path:
    return path.with_name(path.name + TEMP_SUFFIX)


def read(path: Path, *, temp: bool = False) -> BrokerMetadata | None:
    """The file's content when it is whole (a temp file also needs its check code); else None."""
    try:
        parts = path.read_text(encoding="utf-8").strip().split("#")
    except (OSError, UnicodeDecodeError):
        return None
    if len(parts) < 3 or not parts[0] or not parts[1]:
        return None
    try:
        broker_id = int(parts[2])
    except ValueError:
        return None
    code = "#".join(parts[3:]) if len(parts) > 3 else None
    if temp and not code:
        return None
    return BrokerMetadata(parts[0], parts[1], broker_id, code if temp else None)


def write(path: Path, meta: BrokerMetadata) -> None:
    write_atomic(path, meta.render().encode())


def remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
