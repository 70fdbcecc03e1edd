"""`mq mcp`'s tools run in the server's process: a local tool returns the model's document, and a failure is
an error result with one line, never a traceback or a dead server."""

from __future__ import annotations

from pathlib import Path

import jsonschema

from mqtools.client.contexts import NoNamesrvError, Target
from mqtools.common.presentation import load_schema
from mqtools.mcp.server import MQTools
from mqtools.mcp.tools import READS, WRITES


def _nowhere() -> Target:
    raise NoNamesrvError("no name server: give -n, --context or NAMESRV_ADDR")


async def test_a_local_tool_returns_the_document_its_schema_accepts() -> None:
    result = await MQTools(_nowhere, allow_writes=False, timeout=5.0).call("drill_list", {})
    assert not result.is_error, result.content
    jsonschema.validate(result.structured_content, load_schema("DrillScenarioList"))
    assert {s["name"] for s in result.structured_content["scenarios"]} >= {"kill-master", "kill-slave"}


async def test_failures_are_one_line_error_results(tmp_path: Path) -> None:
    tools = MQTools(_nowhere, allow_writes=False, timeout=5.0)
    no_cluster = await tools.call("topic_list", {})
    assert no_cluster.is_error and no_cluster.content[0].text.startswith("no name server")
    missing = await tools.call("drill_check", {"file": str(tmp_path / "absent.jsonl")})
    assert missing.is_error and "absent.jsonl" in missing.content[0].text
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    unreadable = await tools.call("drill_check", {"file": str(bad)})
    assert unreadable.is_error and "\n" not in unreadable.content[0].text.strip()
    write = await tools.call("perm_wipe", {"broker": "broker-a"})
    assert write.is_error and "--allow-writes" in write.content[0].text


def test_every_tool_has_a_call_and_a_schema_for_its_document() -> None:
    for tool in READS + WRITES:
        assert (tool.build is None) != (tool.local is None), tool.name
        assert set(tool.required) <= set(tool.params), tool.name
        if tool.kind is not None:
            load_schema(tool.kind)  # raises when the kind ships no schema
