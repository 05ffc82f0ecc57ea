"""paths.home_store: a renamed store keeps what users stored under its old name."""

from __future__ import annotations

from onechip.paths import home_store


def test_a_renamed_store_moves_old_files_and_never_overwrites(tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "a.json").write_text("old a")
    (tmp_path / "old" / "b.json").write_text("old b")
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "b.json").write_text("new b")
    store = home_store("new", formerly="old")
    assert store == tmp_path / "new"
    assert (store / "a.json").read_text() == "old a" and (store / "b.json").read_text() == "new b"
    assert (tmp_path / "old" / "b.json").read_text() == "old b"  # kept where it was, not lost
    assert not home_store("absent", formerly="never").exists()
