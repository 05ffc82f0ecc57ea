"""The layers DESIGN.md draws: imports point down only, and the core never loads a terminal UI.

Each check runs in a fresh interpreter so one test's imports cannot hide another's.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).parents[3] / "src" / "onechip"
CORE = [
    "onechip.api",
    "onechip.planner",
    "onechip.engines",
    "onechip.bench",
    "onechip.checks",
    "onechip.cost",
    "onechip.report",
    "onechip.schemas",
    "onechip.catalog",
    "onechip.vllm",
    "onechip.cloud",
    "onechip.sim",
    "onechip.deploy",
]

# Lower layers may not import these higher ones (STYLE.md: schemas -> catalog -> vllm -> planner -> engines
# -> bench/checks/cost -> report -> api -> cli and mcp, two shells side by side; DESIGN.md puts sim/ above
# planner/, below bench/checks/cost).
FORBIDDEN = {
    "schemas": ["vllm", "planner", "sim", "engines", "cloud", "bench", "checks", "cost", "report", "api", "cli", "mcp"],
    "catalog": ["vllm", "planner", "sim", "engines", "cloud", "bench", "checks", "cost", "report", "api", "cli", "mcp"],
    "vllm": ["planner", "sim", "engines", "cloud", "bench", "checks", "cost", "report", "api", "cli", "mcp"],
    "planner": ["sim", "engines", "cloud", "bench", "checks", "cost", "report", "api", "cli", "mcp"],
    "sim": ["engines", "cloud", "bench", "checks", "cost", "report", "api", "cli", "mcp"],
    "engines": ["deploy", "cloud", "bench", "checks", "cost", "report", "api", "cli", "mcp"],
    # provisioning hosts sits beside launching engines (DESIGN.md): neither imports the other
    "cloud": ["engines", "bench", "checks", "cost", "report", "api", "cli", "mcp"],
    # manifests for a cluster (deploy k8s) sit beside engines/cloud: they use the engines' commands
    "deploy": ["cloud", "bench", "checks", "cost", "report", "api", "cli", "mcp"],
    "bench": ["cloud", "checks", "cost", "report", "api", "cli", "mcp"],
    "checks": ["bench", "cost", "report", "api", "cli", "mcp"],
    "cost": ["bench", "checks", "report", "api", "cli", "mcp"],
    "report": ["api", "cli", "mcp"],
    "api": ["cli", "mcp"],
    "mcp": ["cli"],
}


UI = ("typer", "rich", "click")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_point_down(layer):
    bad = []
    module = SRC / f"{layer}.py"  # a layer is a package, or one module (api.py)
    for path in [module] if module.is_file() else sorted((SRC / layer).rglob("*.py")):
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == "onechip" and len(parts) > 1 and parts[1] in FORBIDDEN[layer]:
                bad.append(f"{path.relative_to(SRC)} imports {name}")
    assert not bad, "\n".join(bad)


def test_core_never_imports_a_terminal_ui():
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        if path.relative_to(SRC).parts[0] in ("cli", "__main__.py"):
            continue
        bad += [f"{path.relative_to(SRC)} imports {n}" for n in _imports(path) if n.split(".")[0] in UI]
    assert not bad, "\n".join(bad)


def test_core_loads_no_cli():
    # rich and click themselves may load: httpx's __init__ imports its own CLI (httpx._main) when they
    # are installed. typer and onechip.cli must not.
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in CORE)
        + "shells = ('onechip.cli', 'onechip.mcp')\n"
        + "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'typer' or m.startswith(shells))\n"
        + "print(bad); sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
