"""onechip's own words survive redact: every message is redacted before it is shown (the CLI's error line, an MCP
tool's answer), and redact takes the word after a secret option as its value (`--api-key X`, errors._SECRET_OPTION),
so a sentence that named the option before a word lost that word. Seen by a user: `plan --set api-key=...` said
'vLLM reads it when --api-key *** not given)', `bench http://u:p@host/` said '... as vllm serve --api-key *** (got
...', and `--hf-token-secret or --hf-token-file` lost its 'or'. A message names such an option in backticks."""

from __future__ import annotations

import ast
from pathlib import Path

import onechip
from onechip.errors import redact

SRC = Path(onechip.__file__).parent


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of `tree` (never shown to a user)."""
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr)
    }


def test_no_text_in_the_source_is_changed_by_redact() -> None:
    changed = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and id(node) not in docs and "***" not in text and redact(text) != text:
                changed.append(f"{path.relative_to(SRC)}:{node.lineno}: {redact(text)}")
    assert not changed, "\n".join(changed)


def test_the_secret_refused_on_the_command_line_is_said_whole(run, offline_home) -> None:
    code, _, err = run("plan", "gemma-4-E2B-it", "--chip", "l4", "--set", "api-key=sk-abc123")
    assert code == 2 and err.strip().endswith("(vLLM reads it when `--api-key` is not given)"), err
    assert "sk-abc123" not in err
