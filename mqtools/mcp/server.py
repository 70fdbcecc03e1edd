"""The MCP server over stdio (the official SDK's low-level Server): tools listed from the catalogue with
their input and output schemas, each call one admin session in this process.

A call opens an admin session on the target, makes the tool's call and returns the model's document (the
one `mq admin ... -o json` prints) as structured content and as text; a failure is an error result carrying
its one-line message. A partial answer, an unsafe `ha ready` or an action verdict of a diagnosis is a
result: the document says so. Secrets never reach a result: the documents mask them, and no tool reads
ACL accounts. Writes are not even listed without --allow-writes, and a call to one is refused by name.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from mqtools.common.errors import ToolkitError
from mqtools.common.presentation import View, load_schema
from mqtools.mcp.tools import READS, WRITES, Tool, catalogue

if TYPE_CHECKING:
    from collections.abc import Callable

    from mqtools.client.contexts import Target

#: Seconds a tool's call may take (the diagnoses sample for 10 s).
CALL_TIMEOUT = 120.0

class MQTools:
    """The tools of one `mq mcp` session: which exist, and how a call runs."""

    def __init__(self, target: Callable[[], Target], allow_writes: bool, timeout: float) -> None:
        self.target = target
        """Where the cluster tools connect, resolved per call (no name server known: that call's error)."""
        self.allow_writes = allow_writes
        self.timeout = timeout
        """Seconds one request to a broker or name server may take (`mq mcp --timeout`)."""
        self.tools = catalogue(allow_writes)

    def listing(self) -> list[types.Tool]:
        return [types.Tool(name=t.name, description=t.description, input_schema=t.input_schema(),
                           output_schema=load_schema(t.kind) if t.kind else None,
                           annotations=types.ToolAnnotations(read_only_hint=not t.write,
                                                             destructive_hint=t.write or None))
                for t in self.tools.values()]

    async def call(self, name: str, args: dict[str, Any]) -> types.CallToolResult:
        tool = self.tools.get(name)
        if tool is None:
            known = {t.name for t in WRITES}
            why = (f"{name} is a write: start `mq mcp` with --allow-writes to offer it" if name in known
                   else f"no tool named {name}")
            return _error(why)
        missing = [p for p in tool.required if args.get(p) in (None, "")]
        if missing:
            return _error(f"{name} needs {', '.join(missing)}")
        try:
            answer = await asyncio.wait_for(self._run(tool, args), CALL_TIMEOUT)
        except TimeoutError:
            return _error(f"{tool.name} took longer than {CALL_TIMEOUT:.0f} s")
        except (ToolkitError, ValueError, OSError) as exc:  # what the CLI's frame turns into one line
            return _error(exc.summary() if isinstance(exc, ToolkitError) else str(exc))
        if isinstance(answer, str):
            return _text(answer)
        doc = answer.document()
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(doc, default=str))],
                                    structured_content=json.loads(json.dumps(doc, default=str)))

    async def _run(self, tool: Tool, args: dict[str, Any]) -> View | str:
        if tool.local is not None:
            return tool.local(args)
        assert tool.build is not None
        from mqtools.client.admin import MQAdmin

        target = self.target()
        async with MQAdmin(target.namesrv, timeout=self.timeout, security=target.security) as admin:
            return await tool.build(admin, args)


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def build(tools: MQTools) -> Server[Any]:
    async def list_tools(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.listing())

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await tools.call(params.name, dict(params.arguments or {}))

    return Server("mq", version=_version(), instructions=(
        "Tools over one RocketMQ cluster (mq's or Apache's): each returns the JSON document `mq admin ... -o json` "
        f"prints, in this process. {len(READS)} reads" + (f"; {len(WRITES)} writes, each naming its risk." if tools.allow_writes
                                         else "; writes are off (start with --allow-writes).")),
        on_list_tools=list_tools, on_call_tool=call_tool)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mqtools")
    except PackageNotFoundError:
        return ""


async def serve(tools: MQTools) -> None:
    server = build(tools)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
