"""`mq admin namesrv config` and `mq admin kv` in the mq dialect, and their mqadmin twins
(getNamesrvConfig, updateNamesrvConfig, updateKvConfig, deleteKvConfig) with mqadmin's text."""

from __future__ import annotations

import pytest
from support.adminsupport import json_of, mq_here, one_line_error
from support.clientsupport import Cluster

pytestmark = pytest.mark.integration


def test_namesrv_config_get_and_set(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    doc = json_of(mq_here("admin", "namesrv", "config", "get", "-o", "json", namesrv=ns), "NamesrvConfig")
    assert list(doc["namesrv"]) == [ns] and doc["namesrv"][ns]["orderMessageEnable"] == "false"
    changed = mq_here("admin", "namesrv", "config", "set", "orderMessageEnable", "true", namesrv=ns)
    assert changed.returncode == 0 and changed.stdout == f"{ns}: orderMessageEnable=true\n"
    doc = json_of(mq_here("admin", "namesrv", "config", "get", "-o", "json", namesrv=ns), "NamesrvConfig")
    assert doc["namesrv"][ns]["orderMessageEnable"] == "true"
    one_line_error(mq_here("admin", "namesrv", "config", "set", "kvConfigPath", "/tmp/x", namesrv=ns), 1, "black list")


def test_kv_set_get_list_delete(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    assert mq_here("admin", "kv", "set", "ADM_NS", "alpha", "1", namesrv=ns).stdout == "ADM_NS alpha=1\n"
    assert mq_here("admin", "kv", "set", "ADM_NS", "beta", "2;3", namesrv=ns).returncode == 0
    got = json_of(mq_here("admin", "kv", "get", "ADM_NS", "beta", "-o", "json", namesrv=ns), "KV")
    assert (got["namespace"], got["key"], got["value"]) == ("ADM_NS", "beta", "2;3")
    listed = json_of(mq_here("admin", "kv", "list", "ADM_NS", "-o", "json", namesrv=ns), "KVList")
    assert listed["entries"] == {"alpha": "1", "beta": "2;3"}
    assert mq_here("admin", "kv", "delete", "ADM_NS", "alpha", namesrv=ns).stdout == "ADM_NS alpha deleted\n"
    listed = json_of(mq_here("admin", "kv", "list", "ADM_NS", "-o", "json", namesrv=ns), "KVList")
    assert listed["entries"] == {"beta": "2;3"}
    one_line_error(mq_here("admin", "kv", "get", "ADM_NS", "alpha", namesrv=ns), 1, "alpha")
    empty = json_of(mq_here("admin", "kv", "list", "ADM_NONE", "-o", "json", namesrv=ns), "KVList")
    assert empty["entries"] == {}
    one_line_error(mq_here("admin", "kv", "list", "ADM_NS", namesrv="127.0.0.1:1"), 3, "127.0.0.1:1")


def test_mqadmin_kv_and_namesrv_config_text(cluster: Cluster) -> None:
    ns = cluster.namesrv.addr
    put = mq_here("admin", "updateKvConfig", "-s", "ADM_MQ", "-k", "gamma", "-v", "7", namesrv=ns)
    assert put.stdout == "create or update kv config to namespace success.\n"
    assert json_of(mq_here("admin", "kv", "get", "ADM_MQ", "gamma", "-o", "json", namesrv=ns), "KV")["value"] == "7"
    deleted = mq_here("admin", "DELETEKVCONFIG", "--namespace", "ADM_MQ", "--key", "gamma", namesrv=ns)
    assert deleted.stdout == "delete kv config from namespace success.\n"
    one_line_error(mq_here("admin", "kv", "get", "ADM_MQ", "gamma", namesrv=ns), 1)
    updated = mq_here("admin", "updateNamesrvConfig", "-k", "clusterTest", "-v", "true", namesrv=ns)
    assert updated.stdout == f"update name server config success![{ns}]\nclusterTest : true\n"
    shown = mq_here("admin", "getNamesrvConfig", namesrv=ns)
    lines = shown.stdout.splitlines()
    assert lines[0] == f"============{ns}============"
    assert "clusterTest" + " " * 39 + "=  true" in lines
    assert all(len(line.split("=  ")[0]) == 50 for line in lines[1:])
