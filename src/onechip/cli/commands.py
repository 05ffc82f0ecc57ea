"""The list of command modules; each has `register(app)`."""

from onechip.cli import engine_cmds

MODULES = [engine_cmds]
