"""A cloud record that cannot be read is said in one line naming its file (never its contents: a record may hold
what a secret looks like), the good records are still listed, and the resource its path names is still found in
the API, so `cloud status` shows it and `cloud down` deletes it (before, both skipped it without a word and the
TPU kept billing unseen)."""

from __future__ import annotations

import json
import os

from onechip.cloud import records

P = "proj-1"
SECRET = "hf_DAMAGEDrecordSecret0123456789abcd"


def _up(run, name: str) -> None:
    rc, _, err = run("cloud", "up", "--chip", "v5e-1", "--project", P, "--zone", "us-west4-a", "--provisioning",
                     "spot", "--max-hours", "1", "--name", name, "--yes")  # fmt: skip
    assert rc == 0, err


def _record(name: str):
    return next(p for p in (records.onechip_home() / "cloud" / "resources").rglob(f"{name}.json"))


def test_a_damaged_record_is_named_its_resource_still_listed_and_deleted(fake_api, run):
    _up(run, "good-one")
    _up(run, "damaged-one")
    damaged = _record("damaged-one")
    damaged.write_text('{"name": "damaged-one", "token": "' + SECRET + '", ')  # cut short
    rc, out, err = run("cloud", "status")
    assert rc == 0, err
    said = " ".join(out.split())
    assert "good-one (node) in us-west4-a: READY" in said and "damaged-one (node) in us-west4-a: READY" in said
    warned = [line for line in err.splitlines() if "damaged" in line]
    assert warned == [
        f"  cloud record {damaged} is not a cloud record (damaged or cut short): node damaged-one in us-west4-a "
        f"(project {P}) is looked up in the API from the file's path instead"
    ]
    assert SECRET not in out + err

    rc, out, err = run("cloud", "down", "--name", "damaged-one", "--yes")
    assert rc == 0, err
    assert "deleted node damaged-one (us-west4-a)" in out and SECRET not in out + err
    assert [key.rsplit("/", 1)[-1] for key in fake_api.nodes] == ["good-one"]
    assert not damaged.exists()  # its resource is deleted: the record goes with it
    assert _record("good-one").is_file()


def test_an_unreadable_record_of_the_older_layout_is_named_and_the_rest_listed(fake_api, run):
    _up(run, "good-one")
    legacy = records.onechip_home() / "cloud" / "resources" / "old-one.json"
    legacy.write_text("not json " + SECRET)
    rc, out, err = run("cloud", "status")
    assert rc == 0, err
    assert "good-one (node) in us-west4-a: READY" in " ".join(out.split())
    assert (
        f"  cloud record {legacy} is not a cloud record (damaged or cut short): old-one is looked for only where "
        "--zone names (`onechip cloud status --zone ZONE`); remove the file once it is gone"
    ) in err.splitlines()
    assert SECRET not in out + err
    rc, out, err = run("cloud", "down", "--name", "old-one", "--yes")
    assert rc == 0 and "nothing to delete" in out and legacy.is_file()  # nothing lost: the file is kept


def test_an_empty_or_unreadable_record_file_is_said_as_such(fake_api, run):
    _up(run, "good-one")
    empty = _record("good-one").with_name("empty-one.json")
    empty.write_text("")
    folder = _record("good-one").with_name("folder-one.json")
    folder.mkdir()
    rc, out, err = run("cloud", "status")
    assert rc == 0, err
    assert f"cloud record {empty} is not a cloud record" in err
    assert f"cloud record {folder} is a directory, not a file onechip wrote" in err  # paths.read_home_file
    assert "good-one (node) in us-west4-a: READY" in " ".join(out.split())
    if os.geteuid() != 0:  # root reads any file
        os.chmod(_record("good-one"), 0)
        rc, out, err = run("cloud", "status")
        assert rc == 0 and "cannot be read (Permission denied)" in err, err


def test_down_deletes_what_a_directory_record_names_leaves_the_directory_and_exits_0(fake_api, run):
    """A directory named like a record (the records glob matches it) is said as unreadable, as `status` says it; its
    resource, listed and confirmed, is deleted with the others and `down` exits 0, the directory left in place (it
    is not a file onechip wrote). Before, removing it failed after the deletes and `down` exited 1 ('Is a
    directory'), and a target after it in the list was never deleted."""
    _up(run, "folder-one")
    _up(run, "good-one")
    folder = _record("folder-one")
    folder.unlink()
    folder.mkdir()
    rc, out, err = run("cloud", "down", "--yes")
    assert rc == 0, err
    assert f"cloud record {folder} is a directory, not a file onechip wrote" in err
    said = " ".join(out.split())
    assert "deleted node folder-one (us-west4-a)" in said and "deleted node good-one (us-west4-a)" in said
    assert fake_api.nodes == {} and folder.is_dir() and records.load_all() == []


def test_a_record_whose_names_the_api_does_not_take_is_named_not_dropped(fake_api, run):
    """A record that parses but names a resource the TPU API would refuse (hand-edited, or from an onechip before
    the names were checked) is said as the other unusable records are, one line naming the file and why, never
    its contents; before, the loader dropped it without a word."""
    _up(run, "good-one")
    odd = _record("good-one").with_name("odd-one.json")
    odd.write_text(_record("good-one").read_text().replace('"good-one"', '"Odd_One ' + SECRET + '"'))
    rc, out, err = run("cloud", "status")
    assert rc == 0, err
    assert err.splitlines() == [
        f"  cloud record {odd} names a project, zone or resource name the TPU API does not take: node odd-one in "
        f"us-west4-a (project {P}) is looked up in the API from the file's path instead"
    ]
    assert "good-one (node) in us-west4-a: READY" in " ".join(out.split()) and SECRET not in out + err
    assert [r.name for r in records.load_all()] == ["good-one"]


def test_status_reads_each_record_file_once(fake_api, run, monkeypatch):
    """`cloud status` reads the record files once and passes them down (it read each three times: the records,
    the unreadable ones, the zones used)."""
    _up(run, "good-one")
    _record("good-one").with_name("damaged-one.json").write_text("{")
    reads: list[object] = []
    real = records._read
    monkeypatch.setattr(records, "_read", lambda path: reads.append(path) or real(path))
    rc, _, err = run("cloud", "status")
    assert rc == 0, err
    assert sorted(reads) == records._records()  # each file on disk, once


def test_down_says_each_unreadable_record_once_and_deletes_only_what_it_listed(fake_api, run, monkeypatch):
    """`cloud down` says each unusable record once, as `status` does, and deletes what it listed and was confirmed:
    before, it looked everything up a second time after the confirmation (each record's line said twice, and a
    labelled TPU that appeared in --zone meanwhile was deleted without being listed)."""
    from onechip.cli import cloud_cmd

    _up(run, "good-one")
    damaged = [_record("good-one").with_name(f"{n}.json") for n in ("a-one", "b-one")]
    for path in damaged:
        path.write_text("{")
    confirm = cloud_cmd.confirm

    def confirm_while_another_appears(what: str, yes: bool) -> None:
        confirm(what, yes)
        fake_api.put("node", "us-west4-a", "appeared-one", "READY")  # labelled created-by=onechip

    monkeypatch.setattr(cloud_cmd, "confirm", confirm_while_another_appears)
    rc, out, err = run("cloud", "down", "--zone", "us-west4-a", "--yes")
    assert rc == 0, err
    assert [err.count(f"cloud record {path} ") for path in damaged] == [1, 1]
    assert "deleted node good-one (us-west4-a)" in " ".join(out.split()) and "appeared-one" not in out
    assert list(fake_api.nodes) == [f"projects/{P}/locations/us-west4-a/nodes/appeared-one"]


def test_a_newer_onechips_record_is_named_as_such_and_kept(fake_api, run):
    # files66: a record named no schema_version, so a newer onechip's was read as this one's; refused, it was said
    # to be 'damaged or cut short'
    _up(run, "newer-one")
    record = _record("newer-one")
    text = json.dumps({**json.loads(record.read_text()), "schema_version": "2"})
    record.write_text(text)
    rc, out, err = run("cloud", "status")
    assert rc == 0, err
    assert "newer-one (node) in us-west4-a: READY" in " ".join(out.split())
    assert [line for line in err.splitlines() if "newer-one" in line] == [
        f"  cloud record {record} was written by a newer onechip (schema_version 2; this onechip reads 1): node "
        f"newer-one in us-west4-a (project {P}) is looked up in the API from the file's path instead"
    ]
    assert record.read_text() == text
