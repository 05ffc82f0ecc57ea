"""The CLI's error line, found at stop 64 (helper cloud65, 2026-12-07): bounded as a whole (errors.MAX_LINE_CHARS), as
each value it echoes is."""

from __future__ import annotations

from onechip.errors import MAX_LINE_CHARS

ERROR = "error: "  # cli.main._error's prefix


def test_a_huge_model_name_makes_one_bounded_error_line(run) -> None:
    # the longest model name the input takes (schemas: 4,096 characters), echoed twice: an 8,198-character line
    model = "org/" + "m" * 4_000
    code, _, err = run("plan", model, "--chip", "v5e-1")
    (line,) = err.splitlines()
    assert code == 2 and line.startswith(f"{ERROR}model 'org/mmm"), line[:80]
    assert len(line) <= len(ERROR) + MAX_LINE_CHARS and line.endswith(" characters)"), len(line)
