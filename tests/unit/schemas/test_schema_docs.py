"""Every public schema class says what it is (STYLE.md: every model documented), and onechip has one GiB."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).parents[3] / "src" / "onechip"
SCHEMA_FILES = sorted((SRC / "schemas").glob("*.py"))


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=[p.name for p in SCHEMA_FILES])
def test_every_public_schema_class_has_a_docstring(path: Path) -> None:
    classes = [n for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef)]
    assert [c.name for c in classes if not c.name.startswith("_") and not ast.get_docstring(c)] == []


def test_one_gib_constant() -> None:
    """GiB is defined once, in onechip.schemas.common (GIB); nothing else binds a name to 2**30."""
    binding = re.compile(r"^\s*\w+\s*(?::\s*\w+\s*)?=\s*(?:2\s*\*\*\s*30|1024\s*\*\*\s*3|1\s*<<\s*30)\b", re.M)
    found = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if binding.search(p.read_text())]
    assert found == ["schemas/common.py"]
