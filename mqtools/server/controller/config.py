"""Controller configuration: RocketMQ's ControllerConfig keys, read from `controller.properties` or, with
`enableControllerInNamesrv=true`, from the name server's own file.

`controllerDLegerPeers` ("n0-127.0.0.1:9878;n1-127.0.0.1:9868;...") names every controller's remoting
address, which brokers (`controllerAddr`) and admin tools use, and `controllerDLegerSelfId` says which
of them this process is, as in RocketMQ. The controllers replicate their metadata with Raft (pysyncobj,
not DLedger: brokers never see it). Its traffic goes to `controllerRaftPeers` (mq's key, the same form),
by default each peer's port + 1; `controllerRaftPassword` encrypts and authenticates it. An empty peer
list runs one controller on `listenPort`, for development.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from mqtools.common.configkeys import ConfigError, PropertyMap

#: The standalone controller's port when no peer list names one (ControllerStartup's default).
DEFAULT_LISTEN_PORT = 19876


def _home_path(*parts: str) -> str:
    return str(Path.home().joinpath(*parts))


@dataclass
class ControllerConfig:
    listen_port: int = DEFAULT_LISTEN_PORT
    bind_address: str = "0.0.0.0"
    controller_d_leger_group: str = "mq-controller"
    controller_d_leger_peers: str = ""
    controller_d_leger_self_id: str = ""
    controller_raft_peers: str = ""
    #: mq's key: a secret the controllers share; their Raft traffic is then encrypted and authenticated
    #: (pysyncobj's Fernet session keys). Without it anyone who reaches a Raft port can write the log.
    controller_raft_password: str = ""
    controller_store_path: str = field(default_factory=lambda: _home_path("mqController"))
    config_store_path: str = field(default_factory=lambda: _home_path("controller", "controller.properties"))
    #: How often heartbeat timeouts are looked for at most (ms). Apache scans every 5 s; a scan here is a walk over
    #: a small table, so mq scans every second, and also when the first tracked broker's timeout falls due: a hung
    #: master is replaced at its heartbeat timeout, up to 5 s sooner than Apache's.
    scan_not_active_broker_interval: int = 1_000
    scan_inactive_master_interval: int = 5_000
    elect_master_max_retry_count: int = 3
    enable_elect_unclean_master: bool = False
    notify_broker_role_changed: bool = True
    config_black_list: str = "configBlackList;configStorePath;controllerRaftPassword"
    extra: dict[str, str] = field(default_factory=dict)

    def apply(self, props: dict[str, str]) -> None:
        """Set known keys from strings (ConfigError on bad values); keep the rest."""
        staged = CONTROLLER_PROPERTIES.parse(props)
        candidate = dataclasses.replace(self, **staged)
        candidate.peers()
        candidate.raft_peers()
        for name, value in staged.items():
            setattr(self, name, value)
        self.extra.update(CONTROLLER_PROPERTIES.unknown(props))

    def to_properties(self) -> dict[str, str]:
        return CONTROLLER_PROPERTIES.to_properties(self, self.extra)

    def black_list(self) -> set[str]:
        """Keys GET_CONTROLLER_CONFIG does not show (the Raft password among them)."""
        return {k.strip() for k in self.config_black_list.split(";") if k.strip()}

    def peers(self) -> dict[str, str]:
        """Controller id -> remoting "host:port", in the order of the file (a lone controller: itself on
        listenPort)."""
        peers = _parse_peers("controllerDLegerPeers", self.controller_d_leger_peers)
        if not peers:
            host = "127.0.0.1" if self.bind_address in ("0.0.0.0", "::", "") else self.bind_address
            return {self.self_id(): f"{host}:{self.listen_port}"}
        if self.controller_d_leger_self_id not in peers:
            raise ConfigError(f"controllerDLegerSelfId={self.controller_d_leger_self_id!r} is not one of "
                              f"controllerDLegerPeers ({', '.join(peers)})")
        return peers

    def raft_peers(self) -> dict[str, str]:
        """Controller id -> "host:port" of its Raft traffic."""
        peers = self.peers()
        if not self.controller_raft_peers.strip():
            return {pid: _next_port(addr) for pid, addr in peers.items()}
        raft = _parse_peers("controllerRaftPeers", self.controller_raft_peers)
        if set(raft) != set(peers):
            raise ConfigError("controllerRaftPeers must name the same ids as controllerDLegerPeers")
        return raft

    def self_id(self) -> str:
        return self.controller_d_leger_self_id or "n0"

    def address_port(self) -> int:
        """The port to serve brokers and tools on: this controller's peer entry (listenPort when alone)."""
        return int(self.peers()[self.self_id()].rsplit(":", 1)[1])


CONTROLLER_PROPERTIES = PropertyMap(ControllerConfig)


def _parse_peers(key: str, text: str) -> dict[str, str]:
    peers: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        pid, sep, addr = item.partition("-")
        host, colon, port = addr.rpartition(":")
        if not sep or not pid or not colon or not host or not port.isdigit() or not 0 < int(port) < 65535:
            raise ConfigError(f"{key}: {item!r} is not id-host:port")
        if pid in peers:
            raise ConfigError(f"{key}: id {pid} is listed twice")
        peers[pid] = addr
    return peers


def _next_port(addr: str) -> str:
    host, _, port = addr.rpartition(":")
    return f"{host}:{int(port) + 1}"
