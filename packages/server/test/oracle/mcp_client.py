"""A second, independent MCP client (the Python `mcp` SDK) for AtomStudio's MCP server.

Reads JSON on stdin:
  {"http_url": ".../mcp", "token": str | null,
   "stdio": {"command": str, "args": [str], "env": {str: str}},
   "calls": [{"name": str, "arguments": {...}}]}
For each transport (streamable HTTP, then stdio) it lists the tools and makes the calls, and
prints JSON on stdout:
  {"http": {"tools": [{"name", "inputSchema"}], "results": [CallToolResult as JSON]},
   "stdio": {...}}
With a token, it also tries HTTP without it and reports the failure under "http_without_token".
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def session(server: Any, calls: list[dict[str, Any]]) -> dict[str, Any]:
    async with Client(server) as client:
        tools = await client.list_tools()
        results = [dump(await client.call_tool(c["name"], c["arguments"])) for c in calls]
    return {
        "tools": [{"name": t.name, "inputSchema": dump(t)["inputSchema"]} for t in tools.tools],
        "results": results,
    }


def http_transport(url: str, token: str | None) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))


async def main() -> None:
    spec = json.load(sys.stdin)
    calls = spec["calls"]
    out: dict[str, Any] = {"http": await session(http_transport(spec["http_url"], spec.get("token")), calls)}
    if spec.get("token"):
        try:
            await session(http_transport(spec["http_url"], None), calls[:1])
            out["http_without_token"] = "accepted"
        except BaseException as e:  # noqa: BLE001 - report whatever the refusal looks like
            out["http_without_token"] = f"refused: {type(e).__name__}: {e}"
    stdio = spec["stdio"]
    params = StdioServerParameters(command=stdio["command"], args=stdio["args"], env=stdio.get("env"))
    out["stdio"] = await session(params, calls)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    anyio.run(main)
