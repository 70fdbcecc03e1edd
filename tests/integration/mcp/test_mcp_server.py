"""`mq mcp` driven by the mcp SDK's own client over stdio against a live cluster: every read tool answers
with a document valid against its output schema (the `-o json` schema), secrets never show, and writes
exist only with --allow-writes."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from support.presetcluster import PresetCluster, preset_cluster

from mqtools.client.admin import SyncMQAdmin
from mqtools.client.admin.models.groups import ResetTarget
from mqtools.mcp.tools import READS, WRITES
from mqtools.remoting.bodies import SubscriptionGroupConfig, TopicConfig

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TOPIC, GROUP, KEY = "McpTopic", "McpGroup", "mcp-key-1"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PresetCluster]:
    with preset_cluster(tmp_path_factory.mktemp("mcp"), "2m-2s-async") as running:
        with SyncMQAdmin(running.namesrv) as admin:
            admin.topics.create_topic(TopicConfig(TOPIC, 4, 4), broker_addr=admin.master_addrs()["broker-a"])
            admin.messages.send_message(TOPIC, b"hello", broker_name="broker-a", queue_id=0, keys=KEY)
            admin.groups.create_subscription_group(SubscriptionGroupConfig(GROUP), cluster="DefaultCluster")
            admin.offsets.reset_offsets(GROUP, TOPIC, ResetTarget("offset", 0))
        yield running


async def session_run(namesrv: str, *extra: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list, list]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "mqtools.cli.main", "mcp", "-n", namesrv, *extra])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = (await session.list_tools()).tools
        # concurrently, as an agent's client may: each call is its own admin session in the server
        results = list(await asyncio.gather(*(session.call_tool(name, args, read_timeout_seconds=120)
                                              for name, args in calls)))
    return listed, results


async def test_every_read_tool_answers_with_a_document_its_schema_accepts(cluster: PresetCluster) -> None:
    args = {"topic_status": {"topic": TOPIC}, "topic_route": {"topic": TOPIC}, "group_progress": {"group": GROUP},
            "group_connections": {"group": GROUP, "proxies": "127.0.0.1:1"}, "group_consume_mode": {"group": GROUP, "topic": TOPIC},
            "ha_ready": {"broker": "broker-a"}, "proxy_clients": {"proxies": "127.0.0.1:1"},
            "message_by_key": {"topic": TOPIC, "key": KEY}, "diagnose_group": {"group": GROUP},
            "diagnose_broker": {"broker": "broker-a"}}
    skip = {"drill_check", "message_by_id", "diagnose_cluster"}  # a file of a drill run; an id found below; 10 s more
    calls = [(t.name, args.get(t.name, {})) for t in READS if t.name not in skip]
    listed, results = await session_run(cluster.namesrv, calls=calls)
    tools = {t.name: t for t in listed}
    assert set(tools) == {t.name for t in READS}  # no write without --allow-writes
    assert all(t.annotations.read_only_hint for t in listed)
    docs: dict[str, dict[str, Any]] = {}
    for (name, _), result in zip(calls, results, strict=True):
        assert not result.is_error, (name, result.content)
        doc = result.structured_content
        jsonschema.validate(doc, tools[name].output_schema)
        assert json.loads(result.content[0].text) == doc
        docs[name] = doc
    assert docs["group_progress"]["diffTotal"] == 1
    assert {(b["mode"], b["origin"]) for b in docs["group_consume_mode"]["brokers"]} == {("PULL", "default")}
    assert [u["addr"] for u in docs["proxy_clients"]["unreachable"]] == ["127.0.0.1:1"]  # partial, not an error
    assert [u["addr"] for u in docs["group_connections"]["unreachable"]] == ["127.0.0.1:1"]  # the proxies asked too
    assert docs["diagnose_group"]["verdict"] == "offline"  # a document with a verdict's exit code is a result
    found = docs["message_by_key"]["messages"]
    assert len(found) == 1 and found[0]["keys"] == [KEY]
    _, (by_id,) = await session_run(cluster.namesrv, calls=[("message_by_id", {"msg_id": found[0]["offsetMsgId"]})])
    assert not by_id.is_error and by_id.structured_content["message"]["msgId"] == found[0]["msgId"]


async def test_writes_only_with_allow_writes_and_a_reset_is_a_dry_run_first(cluster: PresetCluster) -> None:
    _, (refused,) = await session_run(cluster.namesrv, calls=[("perm_wipe", {"broker": "broker-a"})])
    assert refused.is_error and "--allow-writes" in refused.content[0].text
    listed, (dry, bad) = await session_run(
        cluster.namesrv, "--allow-writes",
        calls=[("offset_reset", {"group": GROUP, "topic": TOPIC, "to": "latest"}), ("topic_status", {})])
    assert {t.name for t in listed} == {t.name for t in READS + WRITES}
    assert all(not t.annotations.read_only_hint for t in listed if t.name in {w.name for w in WRITES})
    assert not dry.is_error, dry.content
    assert bad.is_error and "needs topic" in bad.content[0].text
    with SyncMQAdmin(cluster.namesrv) as admin:  # the dry run changed nothing
        assert admin.groups.consumer_progress(GROUP).total_diff == 1
