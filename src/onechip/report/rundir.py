"""Reading a run directory (`runs/<run-id>/`, layout in `onechip.schemas.run`) leniently.

Every file is optional. Each is parsed as plain JSON and kept as a mapping, not validated into its
pydantic model, so a run written by an older or newer onechip still renders; a file that is present
but unreadable is recorded in `problems` instead of stopping the report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onechip.errors import ConfigError
from onechip.schemas.run import RUN_FILES

JSON_KINDS = ("manifest", "plan", "crosscheck", "boot", "checks", "bench", "cost")
# What a run directory is made of: every file of the layout except a rendered report.
DATA_FILES = tuple(name for kind, name in RUN_FILES.items() if kind != "report_md")


@dataclass
class RunFiles:
    """The parsed JSON files of one run directory; None where a file is absent or unreadable."""

    path: Path
    manifest: dict[str, Any] | None = None
    plan: dict[str, Any] | None = None
    crosscheck: dict[str, Any] | None = None
    boot: dict[str, Any] | None = None
    checks: dict[str, Any] | None = None
    bench: dict[str, Any] | None = None
    cost: Any = None  # a CostReport object; older runs stored a list of CostLine objects
    problems: list[str] = field(default_factory=list)

    @property
    def present(self) -> list[str]:
        """File kinds that were read, in layout order."""
        return [kind for kind in JSON_KINDS if getattr(self, kind) is not None]


def read_run(run_dir: Path | str) -> RunFiles:
    """Parse whichever of run.json, plan.json, crosscheck.json, boot.json, checks.json, summary.json and
    cost.json exist in `run_dir`. Raises ConfigError when `run_dir` is not a directory.
    """
    path = Path(run_dir)
    if not path.is_dir():
        raise ConfigError(f"run directory {path} does not exist or is not a directory")
    files = RunFiles(path=path)
    for kind in JSON_KINDS:
        name = RUN_FILES[kind]
        target = path / name
        if not target.is_file():
            continue
        try:
            data = json.loads(target.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            files.problems.append(f"{name} could not be read: {exc}")
            continue
        if kind != "cost" and not isinstance(data, dict):
            files.problems.append(f"{name} is not a JSON object; ignored")
            continue
        setattr(files, kind, data)
    return files


def require_run_files(run: RunFiles) -> None:
    """Raise ConfigError naming `run.path` and the files looked for when the directory holds none of
    DATA_FILES (a mistyped or wrong directory would otherwise render an empty report and exit 0).
    A file that exists but could not be parsed still counts: its problem goes into the report."""
    if any((run.path / name).is_file() for name in DATA_FILES):
        return
    raise ConfigError(
        f"{run.path} holds no run files (looked for {', '.join(DATA_FILES)}); "
        "pass a run directory such as runs/<run-id>/"
    )
