"""The ACL documents, rendered from hand-made models (no broker): never a secret."""

from __future__ import annotations

import json

from support.documents import check

from mqtools.cli.output import plain
from mqtools.client.admin.models.acl import (
    AclConfig,
    AclVersion,
    account_doc,
    acl_config_view,
    acl_version_view,
)
from mqtools.remoting.bodies import PlainAccessConfig

ADMIN = PlainAccessConfig("RocketMQ", "s3cr3t", None, True, "PUB", "SUB", ["T1=PUB", "T2=SUB"], [])
APP = PlainAccessConfig("app1", None, "192.168.1.*", False, None, None, [], ["G1=SUB"])


def test_acl_config_shows_every_account_but_no_secret() -> None:
    view = acl_config_view([AclConfig("10.0.0.1:10911", ["10.0.0.*"], [ADMIN, APP]),
                            AclConfig("10.0.0.3:10911", [], [])])
    doc = check(view)
    assert view.rows[0] == ["10.0.0.1:10911", "RocketMQ", "yes", None, "PUB", "SUB", "T1=PUB,T2=SUB", None]
    assert view.rows[1] == ["10.0.0.1:10911", "app1", "no", "192.168.1.*", None, None, None, "G1=SUB"]
    assert plain(view).splitlines()[1].split()[3] == "n/a"
    assert doc["brokers"][0]["globalWhiteAddrs"] == ["10.0.0.*"]
    assert doc["brokers"][0]["accounts"][1] == {
        "accessKey": "app1", "admin": False, "whiteRemoteAddress": "192.168.1.*", "defaultTopicPerm": None,
        "defaultGroupPerm": None, "topicPerms": [], "groupPerms": ["G1=SUB"]}
    assert doc["brokers"][1] == {"brokerAddr": "10.0.0.3:10911", "globalWhiteAddrs": [], "accounts": []}
    assert "s3cr3t" not in json.dumps(doc) and "s3cr3t" not in plain(view)


def test_account_doc_has_no_secret_key() -> None:
    assert "secretKey" not in account_doc(ADMIN)
    assert list(account_doc(ADMIN)) == ["accessKey", "admin", "whiteRemoteAddress", "defaultTopicPerm",
                                        "defaultGroupPerm", "topicPerms", "groupPerms"]


def test_acl_version_of_a_broker_that_did_not_tell() -> None:
    view = acl_version_view([AclVersion("DefaultCluster", "broker-a", "10.0.0.1:10911", 3, 1_700_000_000_000),
                             AclVersion("DefaultCluster", "broker-b", "10.0.0.3:10911", None, None)])
    doc = check(view)
    assert view.rows[0] == ["DefaultCluster", "broker-a", "10.0.0.1:10911", 3, 1_700_000_000_000]
    assert doc["brokers"][1] == {"cluster": "DefaultCluster", "brokerName": "broker-b",
                                 "brokerAddr": "10.0.0.3:10911", "counter": None, "timestamp": None}
    assert plain(view).splitlines()[2].split()[-2:] == ["n/a", "n/a"]
