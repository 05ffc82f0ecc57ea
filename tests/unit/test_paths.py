"""paths.home_store: a renamed store keeps what users stored under its old name."""

from __future__ import annotations

from onechip.paths import home_store, open_owner_only


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


def test_an_owner_only_log_is_0600_even_when_it_existed_world_readable(tmp_path):
    log = tmp_path / "engine.log"
    log.write_bytes(b"old\n")
    log.chmod(0o644)
    with open_owner_only(log, append=True) as sink:
        sink.write(b"new\n")
    assert log.stat().st_mode & 0o777 == 0o600 and log.read_bytes() == b"old\nnew\n"
    with open_owner_only(log, append=False) as sink:
        sink.write(b"x")
    assert log.read_bytes() == b"x"
