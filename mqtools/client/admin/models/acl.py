"""Typed results of the ACL admin requests. The accounts are remoting's PlainAccessConfig with the
secret dropped on arrival (Apache RocketMQ's GET_BROKER_CLUSTER_ACL_CONFIG sends it in clear), so
no view built from these models can print one. Their documents are rendered here."""

from __future__ import annotations

from dataclasses import dataclass

from mqtools.common.presentation import Column, Unreachable, View, renders
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


# -- documents ---------------------------------------------------------------------------------------


def account_doc(account: PlainAccessConfig) -> dict[str, object]:
    """An account as `-o json` shows it: every field but the secret, None where unset."""
    return {"accessKey": account.access_key, "admin": account.admin,
            "whiteRemoteAddress": account.white_remote_address, "defaultTopicPerm": account.default_topic_perm,
            "defaultGroupPerm": account.default_group_perm, "topicPerms": list(account.topic_perms),
            "groupPerms": list(account.group_perms)}


@renders("AclConfig")
def acl_config_view(found: list[AclConfig], unreachable: list[Unreachable] | None = None) -> View:
    """Every account of every broker read, one row each, and each broker's global white addresses; partial
    where a broker set could not be read."""
    rows = [[c.broker_addr, a.access_key, "yes" if a.admin else "no", a.white_remote_address or None,
             a.default_topic_perm or None, a.default_group_perm or None, ",".join(a.topic_perms) or None,
             ",".join(a.group_perms) or None] for c in found for a in c.accounts]
    doc = {"brokers": [{"brokerAddr": c.broker_addr, "globalWhiteAddrs": c.global_white_addrs,
                        "accounts": [account_doc(a) for a in c.accounts]} for c in found]}
    columns = [Column("BROKER"), Column("ACCESS KEY"), Column("ADMIN"), Column("WHITE ADDRESS"),
               Column("DEFAULT TOPIC"), Column("DEFAULT GROUP"), Column("TOPIC PERMS"), Column("GROUP PERMS")]
    return View("AclConfig", columns, rows, doc, unreachable=list(unreachable or []))


@renders("AclVersion")
def acl_version_view(found: list[AclVersion], unreachable: list[Unreachable] | None = None) -> View:
    rows = [[v.cluster, v.broker_name, v.broker_addr, v.counter, v.timestamp] for v in found]
    doc = {"brokers": [{"cluster": v.cluster, "brokerName": v.broker_name, "brokerAddr": v.broker_addr,
                        "counter": v.counter, "timestamp": v.timestamp} for v in found]}
    return View("AclVersion", [Column("CLUSTER"), Column("BROKER NAME"), Column("ADDR"), Column("COUNTER"),
                               Column("TIMESTAMP")], rows, doc, unreachable=list(unreachable or []))
