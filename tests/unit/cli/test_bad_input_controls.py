"""A value the user typed with a control character in it (a newline, a terminal escape, a bidirectional override) is
echoed by an error as one line that shows it, never as the character itself: `onechip report $'a\\nb\\x1b[31m'` printed
a two-line error whose second line turned the terminal red (errors.one_line, cli.main._error)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _cwd(tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(
    ("typed", "shown"),
    [("a\nb", "a b"), ("x\x1b[31mred", "x\\x1b[31mred"), ("bell\x07", "bell\\x07"), ("\u202egnp.x", "\\u202egnp.x")],
)
def test_a_control_character_in_a_path_is_shown_escaped_on_one_line(run, typed, shown) -> None:
    code, _, err = run("report", typed)
    # report/rundir.py's refusal of a run directory that does not exist, with the path as typed made visible
    assert code == 2
    assert err == f"error: run directory {shown} does not exist or is not a directory\n"
