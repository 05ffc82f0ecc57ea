"""An engine state a newer onechip wrote (files66): engine.json named no schema_version, so this onechip read a newer
one's record as its own; refused, it was 'unreadable; ... then delete the file', the record of an engine that may be
serving."""

from __future__ import annotations

import json
import re

import pytest

from factories import engine_state, one_error_line
from onechip.engines import replicas, state
from onechip.errors import EngineError

pytestmark = pytest.mark.usefixtures("offline_home")
NEWER = "schema_version '2' is newer than the '1' this onechip reads; upgrade onechip to read it"


@pytest.mark.parametrize("command", ["status", "logs", "down"])
def test_a_newer_onechips_engine_state_is_refused_in_one_line_and_kept(run, command: str) -> None:
    state.save(engine_state())
    path = state.state_path()
    text = json.dumps({**json.loads(path.read_text()), "schema_version": "2"})
    path.write_text(text)
    said = one_error_line(run, command, code=EngineError.exit_code)
    assert said == f"engine state {path} was written by a newer onechip: {NEWER}"
    assert path.read_text() == text


def test_a_newer_onechips_replica_state_is_refused_in_one_line() -> None:
    path = replicas.state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schema_version": "2"}))
    with pytest.raises(EngineError, match=re.escape(f"replica state {path} was written by a newer onechip: {NEWER}")):
        replicas.load()


@pytest.mark.parametrize("version", ["x", "v2", ""])
def test_an_engine_state_whose_version_is_no_version_is_not_called_a_newer_onechips(run, version: str) -> None:
    # qa66b: known_schema refuses text that is no version ('x') with the same error as a newer one, and the state's
    # line said 'was written by a newer onechip: schema_version 'x' is not a version', which no onechip writes: a
    # damaged record, said as one (as cloud records say it: records._read asks stored_by_newer)
    state.save(engine_state())
    path = state.state_path()
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": version}))
    said = one_error_line(run, "status", code=EngineError.exit_code)
    assert "newer onechip" not in said
    assert said == (f"engine state {path} is unreadable: schema_version {version!r} is not a version (this onechip "
                    "writes '1'); check `ps` for a vLLM server, stop it, then delete the file")  # fmt: skip
