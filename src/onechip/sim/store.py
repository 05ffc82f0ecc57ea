"""Step-time calibrations on disk: one JSON file per (model, chip, engine, engine version) under
`$ONECHIP_HOME/step-time-calibrations/` (formerly `calibrations/`, moved over on first use), reused by
`simulate` and `advise` when no calibration run is given. A file a newer onechip wrote (its schema_version newer
than this one reads) is never written over: this onechip's fit of the same key goes beside it (save), and simulate
and advise say it is not used (newer_notes). The planner's measured boots are another store
(api.measured_boots_dir)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from onechip.paths import home_store, read_home_file, write_text_atomic
from onechip.schemas.common import SCHEMA_VERSION, model_key, newer_note, stored_by_newer
from onechip.schemas.sim import Calibration
from onechip.sim.steptime import STEP_MODEL


def calibrations_dir() -> Path:
    return home_store("step-time-calibrations", formerly="calibrations")


def save(calibration: Calibration) -> Path:
    """Write `calibration` (replacing one with the same key); returns its path: <slug>.json, or
    <slug>.schema<SCHEMA_VERSION>.json beside it when a newer onechip wrote <slug>.json (this one cannot read that
    file, and wrote over it: its data was lost). Raises ConfigError as paths.read_home_file does."""
    folder = calibrations_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{calibration.key.slug()}.json"
    if stored_by_newer(path) is not None:
        path = folder / f"{calibration.key.slug()}.schema{SCHEMA_VERSION}.json"
    return write_text_atomic(path, calibration.model_dump_json(indent=2))


def newer_notes(model: str, chip: str | None = None, engine: str | None = None) -> list[str]:
    """[one line naming the stored calibrations of `model` (compared as schemas.common.model_key does), on `chip`
    and under `engine` when given (None: any; advise carries a calibration over from another chip, find_elsewhere),
    that a newer onechip wrote, which this one does not use], else []:
    stored() skips them without a word, so simulate and advise read as if none were stored. Raises ConfigError as
    paths.read_home_file does."""
    folder = calibrations_dir()
    found: list[tuple[Path, str]] = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if (version := stored_by_newer(path)) is None:
            continue
        key = json.loads(read_home_file(path)).get("key")
        if not isinstance(key, dict) or not isinstance(key.get("model"), str):
            continue
        if (
            model_key(key["model"]) == model_key(model)
            and chip in (None, key.get("chip"))
            and engine in (None, key.get("engine"))
        ):
            found.append((path, version))
    return [newer_note("stored calibration", found)] if found else []


def stored() -> list[Calibration]:
    """Every readable stored calibration of today's step-time model (unreadable files, and those fitted
    under another STEP_MODEL, are skipped). Raises ConfigError for a FIFO, directory or device named *.json there
    (paths.read_home_file: never waited on)."""
    out = []
    folder = calibrations_dir()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            calibration = Calibration.model_validate_json(read_home_file(path))
        except (OSError, ValidationError, ValueError):
            continue
        if calibration.step_model == STEP_MODEL:
            out.append(calibration)
    return out


def find(model: str, chip: str, engine: str, engine_version: str | None = None) -> Calibration | None:
    """The stored calibration for (model, chip, engine): the given engine version's if stored, else the most
    recent of any version; None when there is none."""
    found = [c for c in stored() if (c.key.model, c.key.chip, c.key.engine) == (model, chip, engine)]
    exact = [c for c in found if engine_version and c.key.engine_version == engine_version]
    pool = exact or found
    return max(pool, key=lambda c: c.created_at) if pool else None


def find_elsewhere(model: str, chip: str, engine: str) -> Calibration | None:
    """A stored calibration of `model` under `engine` on another chip that can be carried over (it has
    roofline priors): one of the same family first (v5e-1 for v5e-4), else the most recent."""
    family = chip.split("-")[0]
    others = [
        c
        for c in stored()
        if (c.key.model, c.key.engine) == (model, engine) and c.key.chip != chip and c.priors is not None
    ]
    return max(others, key=lambda c: (c.key.chip.split("-")[0] == family, c.created_at), default=None)
