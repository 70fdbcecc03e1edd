"""The MCP server over stdio (the official SDK's low-level Server): tools listed from the catalogue with
their input and output schemas, each call run as its `mq admin ... -o json` command.

A call runs the command as a child process (its own event loop, its own failure): the result is the
command's JSON document as structured content (and as text), or, when the command failed, an error result
carrying its one-line message. Secrets never reach a result: the commands mask them, and no tool reads ACL
accounts. Writes are not even listed without --allow-writes, and a call to one is refused by name.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from mqtools.common.exitcodes import EXIT_PARTIAL, EXIT_REFUSED, EXIT_UNREACHABLE
from mqtools.common.presentation import load_schema
from mqtools.mcp.tools import READS, WRITES, Tool, catalogue

#: Seconds a tool's command may take (the diagnoses sample for 10 s).
CALL_TIMEOUT = 120.0


class MQTools:
    """The tools of one `mq mcp` session: which exist, and how a call runs."""

    def __init__(self, connection: list[str], allow_writes: bool) -> None:
        self.connection = connection
        """-n NS or --context C, appended to every cluster command."""
        self.allow_writes = allow_writes
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
        return await self._run(tool, args)

    async def _run(self, tool: Tool, args: dict[str, Any]) -> types.CallToolResult:
        argv = [*tool.argv(args), *(self.connection if tool.cluster else []), *(["-o", "json"] if tool.kind else [])]
        child = await asyncio.create_subprocess_exec(sys.executable, "-m", "mqtools.cli.main", *argv,
                                                     stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                                                     stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(child.communicate(), CALL_TIMEOUT)
        except TimeoutError:
            child.kill()
            await child.wait()
            return _error(f"{tool.name} took longer than {CALL_TIMEOUT:.0f} s")
        text, problem = out.decode(), err.decode().strip()
        # a partial answer is a result: its document says what it could not read (partial, unreachable)
        ok = child.returncode in (0, EXIT_PARTIAL) or (tool.verdict and child.returncode in (EXIT_REFUSED,
                                                                                            EXIT_UNREACHABLE))
        if tool.kind is None:
            return _text(text) if child.returncode == 0 else _error(problem or text.strip())
        try:
            doc = json.loads(text) if ok else None
        except json.JSONDecodeError:
            doc = None
        if doc is None:
            return _error(problem.splitlines()[-1] if problem else f"{tool.name} printed no document")
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(doc))],
                                    structured_content=doc)


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
        f"prints. {len(READS)} reads" + (f"; {len(WRITES)} writes, each naming its risk." if tools.allow_writes
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
