"""Every script under benchmarks/ imports: a helper renamed in one module must not leave another benchmark broken
(prior_accuracy imported sim_accuracy.unmodelled after it was removed, and nothing ran it). Imported in a child
process, as `python benchmarks/X.py` would load it (benchmarks/ first on sys.path), without running its main."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))
LOAD = (
    "import importlib.util, sys; sys.path.insert(0, sys.argv[1]); "
    "spec = importlib.util.spec_from_file_location('bench_under_test', sys.argv[2]); "
    "module = sys.modules[spec.name] = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)"
)


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_a_benchmark_script_imports(script: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-c", LOAD, str(script.parent), str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_sim_accuracy_prints_its_help() -> None:
    """A help text with a bare '%' (the ranges' '80%') made argparse raise TypeError on --help."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sim_accuracy.py"), "--help"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "--whole-fit" in done.stdout
