"""What `import onechip.cli.main` loads: no job's heavy dependencies (issue "One source for every vLLM
fact": `onechip --version` took 1.27 s and 99 MiB importing openai and mcp through checks/agent.py).

Times nothing (benchmarks/cli_start.py does); it asserts which modules a fresh interpreter holds, so a
top-level import of a heavy library anywhere under the CLI's import chain fails here.
"""

from __future__ import annotations

import subprocess
import sys

# Loaded only by the job that needs it: the MCP agent check, the benchmark's data plane, plots, the
# GGUF conversion / unusual configs, the embedded engine.
HEAVY = ("openai", "mcp", "aiohttp", "matplotlib", "numpy", "transformers", "torch", "huggingface_hub", "vllm")


def test_cli_start_loads_no_heavy_dependency():
    code = "import sys, onechip.cli.main; print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    loaded = set(proc.stdout.split())
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
