"""onechip's MCP server: every onechip.api job as an MCP tool for an agent doing the devops (issue 16).

A thin shell beside onechip.cli, over onechip.api: `server` builds and runs it, `tools` is the tool table
(request model, result model, annotations, confirm gate), `bridge` turns request models into tool inputs
and runs jobs with progress and cancellation, `docs` writes docs/mcp-tools.md from the tool list.
Not to be confused with onechip.checks.mcp_server, the count_ids tool the agent check talks to.
"""
