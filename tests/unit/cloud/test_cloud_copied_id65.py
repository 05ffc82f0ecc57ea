"""An owner-id file copied from another onechip home, found at stop 64 (helper cloud65, 2026-12-07): both homes took
one id, so each took the other's TPUs for its own."""

from __future__ import annotations

import pytest

from onechip.cloud import records
from onechip.errors import ConfigError

ANOTHER = "0123456789abcdef" * 2  # another onechip home's owner id (records.owner_id's shape: uuid4 hex)


def _home(monkeypatch: pytest.MonkeyPatch, path) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(path))


def test_an_owner_id_file_copied_from_a_home_that_still_holds_it_is_refused(tmp_path, monkeypatch) -> None:
    # a copied owner-id file shares its id: two homes each took the other's TPUs for their own (status counted them,
    # up resumed them, down deleted them)
    _home(monkeypatch, tmp_path / "a")
    made = records.owner_id()
    copy = tmp_path / "b" / "cloud" / "owner-id"
    copy.parent.mkdir(parents=True)
    copy.write_bytes((tmp_path / "a" / "cloud" / "owner-id").read_bytes())
    before = copy.read_bytes()
    _home(monkeypatch, tmp_path / "b")
    for read in (records.owner_id, records.held_owner_id):
        with pytest.raises(ConfigError) as info:
            read()
        said = str(info.value)
        assert str(copy) in said and str(tmp_path / "a") in said and "copy" in said and "\n" not in said, said
        assert made not in said  # the id is a label value, not a secret; the line names files, not what they hold
    assert copy.read_bytes() == before  # never overwritten
    _home(monkeypatch, tmp_path / "a")
    assert records.owner_id() == made  # the home it was made for keeps it


def test_an_owner_id_file_of_a_home_moved_elsewhere_is_still_its_id(tmp_path, monkeypatch) -> None:
    # a home moved (its old path gone) is the same home: its TPUs stay its own
    _home(monkeypatch, tmp_path / "a")
    made = records.owner_id()
    (tmp_path / "a").rename(tmp_path / "b")
    _home(monkeypatch, tmp_path / "b")
    assert records.owner_id() == made == records.held_owner_id()


def test_an_owner_id_file_of_an_older_onechip_is_read_as_before(tmp_path, monkeypatch) -> None:
    # stop 64's file holds the id alone: whose home it was made for is not known, so it is taken as this home's
    _home(monkeypatch, tmp_path / "a")
    path = tmp_path / "a" / "cloud" / "owner-id"
    path.parent.mkdir(parents=True)
    path.write_text(ANOTHER + "\n")
    assert records.owner_id() == ANOTHER == records.held_owner_id()


def test_an_owner_id_file_reached_by_another_path_of_the_same_home_is_its_own(tmp_path, monkeypatch) -> None:
    # one home under two real paths (a bind mount; here a hard link stands in for it): the same file, not a copy
    _home(monkeypatch, tmp_path / "a")
    made = records.owner_id()
    second = tmp_path / "b" / "cloud" / "owner-id"
    second.parent.mkdir(parents=True)
    second.hardlink_to(tmp_path / "a" / "cloud" / "owner-id")
    _home(monkeypatch, tmp_path / "b")
    assert records.owner_id() == made


def _copied(tmp_path, monkeypatch, source: str, target: str) -> None:
    """`source` home's owner-id file copied into the home `target`, which is then this one's."""
    copy = tmp_path / target / "cloud" / "owner-id"
    copy.parent.mkdir(parents=True)
    copy.write_bytes((tmp_path / source / "cloud" / "owner-id").read_bytes())
    _home(monkeypatch, tmp_path / target)


def test_an_older_onechips_owner_id_file_is_given_its_home_so_a_copy_of_it_is_caught(tmp_path, monkeypatch) -> None:
    # files66: stop 64's file (the id alone) was never given its home line, so a copy of it was never told
    _home(monkeypatch, tmp_path / "a")
    path = tmp_path / "a" / "cloud" / "owner-id"
    path.parent.mkdir(parents=True)
    path.write_text(ANOTHER + "\n")
    assert records.held_owner_id() == ANOTHER
    assert path.read_text() == f"{ANOTHER}\n{records.HOME_LINE}{(tmp_path / 'a').resolve()}\n"
    _copied(tmp_path, monkeypatch, "a", "b")
    with pytest.raises(ConfigError, match="is a copy of"):
        records.owner_id()


def test_a_moved_home_records_where_it_is_now_so_a_copy_of_its_id_is_caught(tmp_path, monkeypatch) -> None:
    # files66: the file kept naming the home's old path, gone since: a copy of it in a third home was taken as that
    # home's own (the home it names holds nothing), and both homes took each other's TPUs for their own
    _home(monkeypatch, tmp_path / "a")
    made = records.owner_id()
    (tmp_path / "a").rename(tmp_path / "b")
    _home(monkeypatch, tmp_path / "b")
    assert records.owner_id() == made
    assert (tmp_path / "b" / "cloud" / "owner-id").read_text().endswith(f"{(tmp_path / 'b').resolve()}\n")
    _copied(tmp_path, monkeypatch, "b", "c")
    with pytest.raises(ConfigError, match="is a copy of"):
        records.owner_id()


def test_a_home_reached_by_another_path_keeps_the_home_its_file_names(tmp_path, monkeypatch) -> None:
    _home(monkeypatch, tmp_path / "a")
    records.owner_id()
    first = (tmp_path / "a" / "cloud" / "owner-id").read_text()
    second = tmp_path / "b" / "cloud" / "owner-id"
    second.parent.mkdir(parents=True)
    second.hardlink_to(tmp_path / "a" / "cloud" / "owner-id")
    _home(monkeypatch, tmp_path / "b")
    records.owner_id()
    assert second.read_text() == first  # the same file: not written (read by turns from each path, it would flip)
