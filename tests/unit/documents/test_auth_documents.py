"""The ACL 2.0 documents, rendered from hand-made models (no broker): users without passwords, rules one
row per entry, changes and dry runs, and a partial read naming the broker it missed."""

from __future__ import annotations

import json

from support.documents import check

from mqtools.cli.output import plain
from mqtools.client.admin.models.auth import (
    AuthAcl,
    AuthChange,
    AuthPolicy,
    AuthRule,
    AuthUser,
    BrokerAcls,
    BrokerUsers,
    acl_rule_list_view,
    auth_change_view,
    user_list_view,
)
from mqtools.common.presentation import Unreachable

ROOT = AuthUser("rocketmq", "s3cr3t-pw", "Super", "enable")
APP = AuthUser("app1", "app-pw-XYZZY", "Normal", "disable")
RULES = AuthAcl("User:app1", (AuthPolicy("Custom", (AuthRule("Topic:ord*", ("Pub", "Sub")),
                                                    AuthRule("Topic:orders_secret", ("Pub",), ("10.0.0.0/8",), "Deny"))),
                              AuthPolicy("Default", (AuthRule("Group:*", ("Sub",)),))))


def test_user_list_never_shows_a_password() -> None:
    view = user_list_view([BrokerUsers("10.0.0.1:10911", [ROOT, APP]), BrokerUsers("10.0.0.3:10911", [])])
    doc = check(view)
    assert view.rows == [["10.0.0.1:10911", "rocketmq", "Super", "enable"],
                         ["10.0.0.1:10911", "app1", "Normal", "disable"]]
    assert doc["brokers"][0]["users"][1] == {"username": "app1", "password": "****", "userType": "Normal",
                                             "userStatus": "disable"}
    assert doc["brokers"][1] == {"brokerAddr": "10.0.0.3:10911", "users": []}
    for secret in (ROOT.password, APP.password):
        assert secret not in json.dumps(doc) and secret not in plain(view)
    assert "app-pw" not in repr(APP)


def test_a_user_without_type_or_password_and_a_partial_read() -> None:
    view = user_list_view([BrokerUsers("10.0.0.1:10911", [AuthUser("bare")])],
                          [Unreachable(None, "10.0.0.3:10911", "timed out")])
    doc = check(view)
    assert doc["partial"] is True and doc["unreachable"] == [
        {"brokerName": None, "addr": "10.0.0.3:10911", "reason": "timed out"}]
    assert doc["brokers"][0]["users"][0] == {"username": "bare", "password": None, "userType": None,
                                             "userStatus": None}
    assert plain(view).splitlines()[-1] == "partial: could not read 10.0.0.3:10911: timed out"


def test_acl_rules_one_row_per_entry() -> None:
    view = acl_rule_list_view([BrokerAcls("10.0.0.1:10911", [RULES])])
    doc = check(view)
    assert view.rows == [
        ["10.0.0.1:10911", "User:app1", "Custom", "Topic:ord*", "Pub,Sub", None, "Allow"],
        ["10.0.0.1:10911", "User:app1", "Custom", "Topic:orders_secret", "Pub", "10.0.0.0/8", "Deny"],
        ["10.0.0.1:10911", "User:app1", "Default", "Group:*", "Sub", None, "Allow"]]
    assert doc["brokers"][0]["acls"][0]["policies"][0]["entries"][1] == {
        "resource": "Topic:orders_secret", "actions": ["Pub"], "sourceIps": ["10.0.0.0/8"], "decision": "Deny"}
    assert plain(view).splitlines()[1].split()[5] == "n/a"
    empty = acl_rule_list_view([], [Unreachable(None, "10.0.0.1:10911", "connection refused")])
    assert check(empty)["partial"] is True and empty.rows == []


def test_changes_say_whether_they_were_only_planned() -> None:
    view = auth_change_view([AuthChange("create-user", "app1", ["10.0.0.1:10911", "10.0.0.2:10911"], True,
                                        "type=Normal password"),
                             AuthChange("skip-user", "ops", ["10.0.0.1:10911"], False, "already exists")])
    doc = check(view)
    assert view.rows[0] == ["create-user", "app1", "10.0.0.1:10911,10.0.0.2:10911", True, "type=Normal password"]
    assert doc["changes"][1] == {"action": "skip-user", "target": "ops", "brokers": ["10.0.0.1:10911"],
                                 "dryRun": False, "detail": "already exists"}
