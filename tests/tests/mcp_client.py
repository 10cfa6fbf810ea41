"""Drives `engram-scorer mcp` with the official MCP Python SDK (`mcp` on PyPI).

Used by tests/tests/mcp.rs: `python mcp_client.py SERVER_BINARY` with
ENGRAM_HOME set. Connects as a real client (initialize handshake; with SDKs
that speak the 2026-07-28 revision, also a second connection that probes
`server/discover`), lists the tools, calls each one with good arguments and
with bad ones, and prints one JSON object with every result as the SDK parsed
it. The Rust test makes the assertions.
"""

import asyncio
import json
import os
import sys
from importlib import metadata

import mcp
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def dump(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def error_of(exc):
    """(code, message) of an MCP error raised by the SDK (1.x McpError, 2.x MCPError)."""
    data = getattr(exc, "error", None)
    code = getattr(exc, "code", None) or getattr(data, "code", None)
    message = getattr(data, "message", None) or str(exc)
    return {"code": code, "message": message, "type": type(exc).__name__}


async def call(session, name, arguments):
    try:
        return {"result": dump(await session.call_tool(name, arguments))}
    except Exception as exc:  # noqa: BLE001 - the test wants to see what the SDK raised
        return {"error": error_of(exc)}


async def legacy(params):
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            out["initialize"] = dump(await session.initialize())
            out["ping"] = dump(await session.send_ping())
            out["tools"] = dump(await session.list_tools())["tools"]
            calls = {}
            save = await call(
                session,
                "memory_save",
                {
                    "content": "The staging deploy needs VPN access; run make deploy-staging from the ops repo.",
                    "type": "convention",
                    "tags": ["deploy", "staging"],
                    "project": "web",
                    "session_id": "claude:mcp-conformance",
                },
            )
            calls["memory_save"] = save
            memory_id = save.get("result", {}).get("structuredContent", {}).get("id")
            second = await call(
                session,
                "memory_save",
                {"content": "Old note about the legacy billing cron, safe to drop.", "type": "fact", "project": "web"},
            )
            calls["memory_save_second"] = second
            second_id = second.get("result", {}).get("structuredContent", {}).get("id")
            calls["memory_search"] = await call(
                session, "memory_search", {"query": "staging deploy VPN", "session_id": "claude:mcp-conformance"}
            )
            calls["memory_get"] = await call(session, "memory_get", {"ids": [memory_id], "include_context": True})
            calls["memory_list"] = await call(session, "memory_list", {"project": "web", "limit": 10})
            calls["memory_pin"] = await call(session, "memory_pin", {"id": memory_id})
            calls["memory_list_pinned"] = await call(session, "memory_list", {"pinned": True})
            calls["memory_unpin"] = await call(session, "memory_unpin", {"id": memory_id})
            calls["memory_feedback"] = await call(
                session,
                "memory_feedback",
                {"id": memory_id, "relevance": 0.9, "reason": "it was the answer", "session_id": "claude:mcp-conformance"},
            )
            calls["memory_timeline"] = await call(session, "memory_timeline", {"project": "web"})
            calls["memory_stats"] = await call(session, "memory_stats", {})
            calls["memory_forget_dry_run"] = await call(session, "memory_forget", {"ids": [second_id], "dry_run": True})
            calls["memory_forget"] = await call(session, "memory_forget", {"ids": [second_id], "reason": "obsolete"})
            calls["memory_list_after_forget"] = await call(session, "memory_list", {"project": "web"})
            out["calls"] = calls
            # Errors: tool-level failures are results with isError; an unknown tool is a protocol error.
            out["errors"] = {
                "get_unknown_id": await call(session, "memory_get", {"ids": ["mem_does_not_exist"]}),
                "save_missing_content": await call(session, "memory_save", {"type": "fact"}),
                "save_bad_type": await call(session, "memory_save", {"content": "x", "type": "poem"}),
                "feedback_out_of_range": await call(session, "memory_feedback", {"id": memory_id, "relevance": 7}),
                "search_unknown_argument": await call(session, "memory_search", {"query": "x", "colour": "red"}),
                "pin_unknown_id": await call(session, "memory_pin", {"id": "mem_nope"}),
                "forget_without_condition": await call(session, "memory_forget", {}),
                "unknown_tool": await call(session, "memory_teleport", {}),
            }
    return out


async def modern(params):
    """The 2026-07-28 revision (server/discover probe), when the SDK speaks it."""
    client_cls = getattr(mcp, "Client", None)
    if client_cls is None:
        return None
    try:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS  # noqa: F401
    except ImportError:
        return None
    async with client_cls(params, mode="auto") as client:
        tools = await client.list_tools()
        stats = await client.call_tool("memory_stats", {})
        return {
            "protocol_version": client.protocol_version,
            "server_info": dump(client.server_info) if client.server_info else None,
            "tools": [t.name for t in tools.tools],
            "stats": dump(stats),
        }


async def main():
    server = sys.argv[1]
    env = {k: os.environ[k] for k in ("ENGRAM_HOME", "HOME", "PATH") if k in os.environ}
    params = StdioServerParameters(command=server, args=["mcp"], env=env)
    report = {"sdk_version": metadata.version("mcp"), "legacy": await legacy(params)}
    report["modern"] = await modern(params)
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
