"""The agent check's MCP tool server: `count_ids(where)` over a hidden table of integer ids, over stdio.

Run as `python -m onechip.checks.mcp_server --ids 0,2,3,20`; the agent check starts it this way
through the MCP client's stdio transport, so the model can only learn the table through the tool.
Built on the official SDK's high-level server (mcp 2.x: `mcp.server.mcpserver.MCPServer`; the 1.x
`mcp.server.fastmcp` module is gone).
"""

from __future__ import annotations

import argparse
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from onechip.checks.id_table import FilterError, count_ids

TOOL_DESCRIPTION = (
    "Count the ids in a hidden table that match a filter. `where` is clauses joined with 'and', such as "
    "'id >= 7', 'id < 5', 'id == 3', 'id != 3' or 'id between 3 and 7 inclusive'; an empty filter counts "
    "every id. Returns {where, count, min, max} (min/max of the matching ids)."
)


def build_server(ids: list[int]) -> MCPServer:
    """An MCPServer with one tool, `count_ids`, answering over `ids`."""
    server = MCPServer(name="onechip-ids", instructions="Count ids with count_ids; never guess.")

    @server.tool(name="count_ids", description=TOOL_DESCRIPTION)
    def count_ids_tool(where: str) -> dict[str, Any]:
        try:
            return count_ids(ids, where)
        except FilterError as exc:
            raise ToolError(str(exc)) from exc

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", required=True, help="Comma-separated integer ids.")
    args = parser.parse_args(argv)
    ids = [int(x) for x in args.ids.split(",") if x.strip()]
    build_server(ids).run("stdio")


if __name__ == "__main__":
    main()
