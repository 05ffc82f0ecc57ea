"""The list of command modules; each has `register(app)`. Order is the order in `onechip --help`."""

from onechip.cli import bench_cmd, check_cmd, cost_cmd, demo_cmd, engine_cmds, mcp_cmd, plan_cmd, report_cmd

MODULES = [demo_cmd, plan_cmd, engine_cmds, check_cmd, bench_cmd, cost_cmd, report_cmd, mcp_cmd]
