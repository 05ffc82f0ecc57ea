"""What `onechip` pays for at start: `import onechip.cli.main` must not load the heavy parts of single jobs
(issue 11: openai 0.4 s and mcp 0.35 s through checks/agent.py made `onechip --version` take 1.27 s).
Times nothing: it asserts which modules load, in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys

# Loaded where they are used: mcp by the agent check, aiohttp by the bench runner, matplotlib by the HTML
# report's plots, transformers and torch by the embedded engine's model conversion; openai not at all.
HEAVY = ("openai", "mcp", "aiohttp", "matplotlib", "transformers", "torch")


def test_cli_start_loads_no_heavy_dependency():
    code = (
        f"import sys\nimport onechip.cli.main\nprint(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout
