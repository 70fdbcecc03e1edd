"""`mq mcp`: a Model Context Protocol server over stdio for agents (the official mcp SDK)."""

from __future__ import annotations

from typing import Annotated

import typer

from mqtools.cli.admin.common import NO_OPTIONS, ClusterOptions, TimeoutOpt, cluster_command
from mqtools.cli.frame import needs_extra


@cluster_command
def mcp(
    where: ClusterOptions = NO_OPTIONS,
    allow_writes: Annotated[bool, typer.Option(
        "--allow-writes", help="Also offer the writes (topic create/update, offset reset, perm wipe/add).")] = False,
    timeout: TimeoutOpt = 5.0,
) -> None:
    """MCP server over stdio: the admin API's reads as tools (cluster, topics, groups, HA, messages, drills,
    diagnose), each returning the same JSON document as `-o json`, with its schema as output schema.

    Example (an MCP client's config): {"command": "mq", "args": ["mcp", "-n", "127.0.0.1:9876"]}
    """
    with needs_extra("mcp", "mq mcp (the mcp SDK)"):
        import anyio

        from mqtools.mcp.server import MQTools, serve
    anyio.run(serve, MQTools(where.resolve, allow_writes, timeout))
