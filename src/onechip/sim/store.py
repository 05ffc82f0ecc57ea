"""Step-time calibrations on disk: one JSON file per (model, chip, engine, engine version) under
`$ONECHIP_HOME/step-time-calibrations/` (formerly `calibrations/`, moved over on first use), reused by
`simulate` and `advise` when no calibration run is given. The planner's measured boots are another store
(api.measured_boots_dir)."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from onechip.paths import home_store, read_home_file, write_text_atomic
from onechip.schemas.sim import Calibration
from onechip.sim.steptime import STEP_MODEL


def calibrations_dir() -> Path:
    return home_store("step-time-calibrations", formerly="calibrations")


def save(calibration: Calibration) -> Path:
    """Write `calibration` (replacing one with the same key); returns its path."""
    folder = calibrations_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(folder / f"{calibration.key.slug()}.json", calibration.model_dump_json(indent=2))


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
