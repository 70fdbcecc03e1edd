"""Typed results of the ACL admin requests. The accounts are remoting's PlainAccessConfig with the
secret dropped on arrival (Apache RocketMQ's GET_BROKER_CLUSTER_ACL_CONFIG sends it in clear), so
no view built from these models can print one."""

from __future__ import annotations

from dataclasses import dataclass

from mqtools.remoting.bodies import PlainAccessConfig


@dataclass(frozen=True, slots=True)
class AclConfig:
    """GET_BROKER_CLUSTER_ACL_CONFIG of one broker."""

    broker_addr: str
    global_white_addrs: list[str]
    accounts: list[PlainAccessConfig]


@dataclass(frozen=True, slots=True)
class AclVersion:
    """GET_BROKER_CLUSTER_ACL_INFO of one broker: the ACL file's data version."""

    cluster: str
    broker_name: str
    broker_addr: str
    counter: int | None
    timestamp: int | None
