"""Stores under $ONECHIP_HOME are read through paths.read_home_file (open_regular): a FIFO planted where a
calibration, a measured boot, a cloud record, the zones onechip used or observed, the catalog read or the engine
state is kept is refused with one line naming it, where reading it waited for a writer without end."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from onechip.api import measured_boots_dir
from onechip.cloud import billing, records
from onechip.engines import replicas
from onechip.engines import state as engine_state
from onechip.errors import ConfigError
from onechip.planner.calibration import file_name
from onechip.planner.calibration import load as load_boot
from onechip.sim import store


@contextlib.contextmanager
def planted_fifo(path: Path) -> Iterator[None]:
    """A FIFO at `path` with a writer behind it, so a reader that reads it gets '[]' (and its test fails) instead of
    waiting; the writer is let go at the end whether or not anyone opened it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)

    def feed() -> None:
        with contextlib.suppress(OSError), path.open("wb") as sink:
            sink.write(b"[]")

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        yield
    finally:
        if writer.is_alive():
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            writer.join(5)
            os.close(fd)


STORES: list[tuple[str, Callable[[], Path], Callable[[], object]]] = [
    ("calibration", lambda: store.calibrations_dir() / "x.json", store.stored),
    ("zones used", lambda: records._dir() / "zones-used.json", records.zones_used),
    ("zones observed", lambda: records._dir() / "zones-observed.json", records.observed),
    ("catalog read", lambda: billing.store_path(), billing.stored_read),  # conftest points it into a tmp dir
    ("engine state", engine_state.state_path, engine_state.load),
    ("replica state", replicas.state_path, replicas.load),
    ("measured boot", lambda: measured_boots_dir() / file_name("k"), lambda: load_boot(measured_boots_dir(), "k")),
]


@pytest.mark.parametrize(("what", "where", "read"), STORES, ids=[s[0] for s in STORES])
def test_a_fifo_planted_in_a_home_store_is_refused_in_one_line(tmp_path, monkeypatch, what, where, read):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    path = where()
    with planted_fifo(path), pytest.raises(ConfigError) as info:
        read()
    assert str(info.value) == f"{path} is a FIFO, not a file onechip wrote: remove it"


def test_a_fifo_as_a_cloud_record_is_named_and_its_path_still_looked_up(tmp_path, monkeypatch):
    """A record is a hint (records.read_all): one that cannot be used is named, and what its path says is looked
    up in the API instead; a FIFO is such a record, never waited on."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    path = records._dir() / "resources" / "my-project" / "us-west4-a" / "node" / "onechip-v5e-1.json"
    with planted_fifo(path):
        saved = records.read_all()
    assert saved.resources == []
    (bad,) = saved.unreadable
    assert bad.why == "is a FIFO, not a file onechip wrote"
    assert bad.key == ("my-project", "us-west4-a", "node") and bad.name == "onechip-v5e-1"
