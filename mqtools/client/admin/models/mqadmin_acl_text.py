"""ACL answers as Apache's mqadmin prints them: 4.9's getAclConfig and clusterAclConfigVersion (ACL 1.0),
5.5's getUser, listUser, getAcl and listAcl (ACL 2.0). A secret is never printed: `****` where mqadmin shows
what the broker sent."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from mqtools.client.admin.models.acl import account_doc
from mqtools.common.javatext import java_format, java_list
from mqtools.common.presentation import NA
from mqtools.common.security import MASK

if TYPE_CHECKING:
    from mqtools.client.admin.models.acl import AclConfig, AclVersion
    from mqtools.client.admin.models.auth import AuthAcl, AuthUser

USER_ROW = "%-16s %-22s %-22s %-22s"
USER_LIST_ROW = "%-16s  %-22s  %-22s  %-22s"
ACL_ROW = "%-16s %-10s %-22s %-20s %-24s %-10s"
VERSION_ROW = "%-16s  %-22s  %-22s  %-20s  %-22s  %-22s"
ACCOUNT_FIELDS = ("accessKey", "secretKey", "whiteRemoteAddress", "admin", "defaultTopicPerm", "defaultGroupPerm",
                  "topicPerms", "groupPerms")


def acl_config_lines(config: AclConfig) -> list[str]:
    """getAclConfig for one broker: its global white addresses, then each account's fields."""
    lines = ["", java_format("%-20s: %s", "globalWhiteRemoteAddresses", "[" + ", ".join(config.global_white_addrs) + "]"),
             "", "accounts:"]
    for account in config.accounts:
        fields = {**account_doc(account), "secretKey": MASK}
        for name in ACCOUNT_FIELDS:
            value = fields[name]
            shown = "" if value is None else ("[" + ", ".join(value) + "]" if isinstance(value, list)
                                              else str(value).lower() if isinstance(value, bool) else value)
            lines.append(java_format("%-1s %-18s: %s", "", name, shown))
        lines.append("")
    return lines


def acl_version_lines(versions: list[AclVersion], *, of_cluster: bool) -> list[str]:
    """clusterAclConfigVersion: each broker's plain_acl.yml version and when it changed (n/a where not read)."""
    lines = [java_format(VERSION_ROW, "#Cluster Name", "#Broker Name", "#Broker Addr", "#AclFilePath",
                         "#AclConfigVersionNum", "#AclLastUpdateTime")]
    for v in versions:
        when = (datetime.fromtimestamp(v.timestamp / 1000).strftime("%Y-%m-%d %H:%M:%S")
                if v.timestamp is not None else NA)
        lines.append(java_format(VERSION_ROW, v.cluster, v.broker_name, v.broker_addr, "plain_acl.yml",
                                 NA if v.counter is None else str(v.counter), when))
    return [*lines, "get cluster's plain access config version success." if of_cluster
            else "get broker's plain access config version success."]


def user_lines(users: list[AuthUser], pattern: str) -> list[str]:
    """getUser (USER_ROW) and listUser (USER_LIST_ROW): mqadmin prints the password the broker sends, mq a mask."""
    lines = [java_format(pattern, "#UserName", "#Password", "#UserType", "#UserStatus")]
    lines += [java_format(pattern, u.username, MASK if u.password else None, u.user_type, u.user_status) for u in users]
    return lines


def acl_lines(acls: list[AuthAcl]) -> list[str]:
    """getAcl and listAcl: a line per policy entry, a subject without policies on one line of its own."""
    lines = [java_format(ACL_ROW, "#Subject", "#PolicyType", "#Resource", "#Actions", "#SourceIp", "#Decision")]
    for acl in acls:
        if not acl.policies:
            lines.append(java_format(ACL_ROW, acl.subject, "", "", "", "", ""))
        for p in acl.policies:
            lines += [java_format(ACL_ROW, acl.subject, p.policy_type, e.resource, java_list(e.actions),
                                  java_list(e.source_ips), e.decision) for e in p.entries]
    return lines
