"""`mq admin` with no command, `mq admin help`, `mq admin schema` and named contexts."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from support.adminsupport import json_of, mq_here, one_line_error
from support.clientsupport import Cluster

from mqtools.common.presentation import load_schema, schema_kinds

pytestmark = pytest.mark.integration

CLASSIC = ["updateTopic", "deleteTopic", "topicList", "topicRoute", "topicStatus", "topicClusterList", "clusterList",
           "brokerStatus", "getBrokerConfig", "updateBrokerConfig", "brokerConsumeStats", "cleanExpiredCQ",
           "clusterRT", "consumerProgress", "consumerStatus", "consumerConnection", "updateSubGroup",
           "deleteSubGroup", "resetOffsetByTime", "statsAll", "producerConnection", "queryMsgById",
           "queryMsgByKey", "queryMsgByUniqueKey", "queryMsgByOffset", "printMsg", "sendMessage", "consumeMessage",
           "getNamesrvConfig", "updateNamesrvConfig", "updateKvConfig", "deleteKvConfig", "wipeWritePerm",
           "addWritePerm"]


def test_no_command_lists_every_classic_command_with_its_twin() -> None:
    out = mq_here("admin")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "The most commonly used mqadmin commands are:"
    listed = {line.split()[0]: line for line in lines[1:] if line.startswith("   ")}
    assert set(CLASSIC) <= set(listed)
    assert all("[mq admin " in listed[name] for name in CLASSIC)
    assert "See 'mq admin help <command>'" in lines[-1]


@pytest.mark.parametrize("name", ["updatetopic", "UPDATETOPIC", "topic"])
def test_help_of_either_dialect(name: str) -> None:
    out = mq_here("admin", "help", name)
    assert out.returncode == 0 and "Usage:" in out.stdout


def test_help_of_an_unknown_command() -> None:
    one_line_error(mq_here("admin", "help", "nope"), 2, "The sub command nope not exist.")


def test_every_shipped_schema_is_a_valid_versioned_schema() -> None:
    kinds = schema_kinds()
    assert "ClusterList" in kinds and len(kinds) >= 20
    for kind in kinds:
        schema = load_schema(kind)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["properties"]["kind"] == {"const": kind}
        assert isinstance(schema["properties"]["schemaVersion"]["const"], int)
    printed = mq_here("admin", "schema", "ClusterList")
    assert printed.returncode == 0 and json.loads(printed.stdout) == load_schema("ClusterList")


def test_contexts_serve_admin_and_show_where_the_address_came_from(cluster: Cluster, tmp_path: Path) -> None:
    env = {"MQ_CONFIG_DIR": str(tmp_path / "cfg")}
    one_line_error(mq_here("admin", "cluster", "list", env=env), 2, "mq context add")
    assert mq_here("context", "add", "it", "-n", cluster.namesrv.addr, env=env).returncode == 0
    assert mq_here("context", "add", "dead", "-n", "127.0.0.1:1", env=env).returncode == 0
    listed = mq_here("context", "list", env=env).stdout.splitlines()
    assert listed[0].startswith("  dead") and listed[1].startswith("* it")  # by name; the first added is current
    doc = json_of(mq_here("admin", "cluster", "list", "-o", "json", env=env), "ClusterList")
    assert doc["namesrv"] == [cluster.namesrv.addr]
    shown = mq_here("context", "show", env=env).stdout
    assert f"namesrv: {cluster.namesrv.addr}" in shown and "context it" in shown
    assert mq_here("context", "use", "dead", env=env).returncode == 0
    one_line_error(mq_here("admin", "cluster", "list", env=env), 3, "127.0.0.1:1")
    env_wins = mq_here("context", "show", env={**env, "NAMESRV_ADDR": "10.0.0.1:9876"}).stdout
    assert "namesrv: 10.0.0.1:9876" in env_wins and "NAMESRV_ADDR" in env_wins
    one_line_error(mq_here("context", "use", "nope", env=env), 2, "no context named 'nope'")
    assert mq_here("context", "remove", "dead", env=env).returncode == 0
    one_line_error(mq_here("admin", "cluster", "list", env=env), 2, "no name server")
