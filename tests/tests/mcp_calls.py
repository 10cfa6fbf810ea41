"""Runs a list of tool calls against `engram-scorer mcp` with the official MCP
Python SDK (`mcp` on PyPI), in one client session.

Used by the scenario tests (tests/tests/knowledge.rs, through
`common::mcp_calls`): `python mcp_calls.py SERVER_BINARY` with ENGRAM_HOME
set and a JSON list `[{"name": ..., "arguments": {...}}, ...]` on stdin.
Prints one JSON list: for each call, `{"result": CallToolResult}` as the SDK
parsed it, or `{"error": ...}` when the SDK raised. The Rust test makes the
assertions.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def dump(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def main():
    server = sys.argv[1]
    calls = json.load(sys.stdin)
    env = {k: os.environ[k] for k in ("ENGRAM_HOME", "HOME", "PATH") if k in os.environ}
    params = StdioServerParameters(command=server, args=["mcp"], env=env)
    out = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for call in calls:
                try:
                    result = await session.call_tool(call["name"], call.get("arguments") or {})
                    out.append({"result": dump(result)})
                except Exception as exc:  # noqa: BLE001 - the test wants to see what the SDK raised
                    out.append({"error": {"type": type(exc).__name__, "message": str(exc)}})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
