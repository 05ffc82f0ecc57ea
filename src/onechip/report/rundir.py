"""Reading a run directory (`runs/<run-id>/`, layout in `onechip.schemas.run`) into its result models.

Every file is optional: an absent file is None. A present file is parsed as JSON and validated into
its model (RunManifest, Plan, CrossCheck, BootRecord, CheckReport, BenchRun, CostReport). The models
are lenient (`extra="ignore"`), so a newer file with more fields still loads, but the fields they
ignore are listed in `problems` (a renamed field would otherwise read as a blank one); a file that
cannot be read or does not match its model is recorded in `problems` (one line: the file and what
was wrong) and left None, never stopping the report. Two older layouts still load: a `cost.json` that is a bare
list of CostLine, and unknown keys inside a strict nested model (a BenchConfig written by another
onechip), which are dropped with a problem line naming them. A file whose schema_version is newer than this
onechip's (schemas.common.known_schema), or whose measured figures are not finite, negative or not what its reps
measured (schemas/bench.py), is a problem line naming the file and the field, and is not read.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from onechip import jsontext
from onechip.errors import ConfigError
from onechip.paths import read_regular
from onechip.schemas import BenchRun, BootRecord, CheckReport, CostReport, CrossCheck, Plan, RunManifest
from onechip.schemas.common import first_problem, newer_schema
from onechip.schemas.run import POLICIES_FILE, RUN_FILES, SEARCH_FILE

MODELS: dict[str, type[BaseModel]] = {
    "manifest": RunManifest,
    "plan": Plan,
    "crosscheck": CrossCheck,
    "boot": BootRecord,
    "checks": CheckReport,
    "bench": BenchRun,
    "cost": CostReport,
}
JSON_KINDS = tuple(MODELS)
# What a run directory is made of: every file of the layout except a rendered report.
DATA_FILES = tuple(name for kind, name in RUN_FILES.items() if kind != "report_md")
_SHOWN_ERRORS = 3  # validation errors named per file; the rest are counted


@dataclass
class RunFiles:
    """The run files of one directory as result models; None where a file is absent or invalid."""

    path: Path
    manifest: RunManifest | None = None
    plan: Plan | None = None
    crosscheck: CrossCheck | None = None
    boot: BootRecord | None = None
    checks: CheckReport | None = None
    bench: BenchRun | None = None
    cost: CostReport | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def present(self) -> list[str]:
        """File kinds that were read, in layout order."""
        return [kind for kind in JSON_KINDS if getattr(self, kind) is not None]

    def problem(self, kind: str) -> str | None:
        """The first problem line of the `kind` file ('bench': summary.json damaged, or missing beside
        requests.jsonl), None when it read cleanly or is simply absent."""
        return next((line for line in self.problems if line.startswith(RUN_FILES[kind])), None)


def read_run(run_dir: Path | str, flag: str = "") -> RunFiles:
    """Load whichever of run.json, plan.json, crosscheck.json, boot.json, checks.json, summary.json and
    cost.json exist in `run_dir` into their models (see the module docstring for what is lenient).
    Raises ConfigError when `run_dir` is not a directory, naming `flag` where the path came from one ('--calibrate
    D: does not exist or is not a directory', as the caller's other refusals of it say); a bad file is a problem
    line, not an error.
    """
    path = Path(run_dir)
    if not path.is_dir():
        said = f"{flag} {path}: does not exist" if flag else f"run directory {path} does not exist"
        raise ConfigError(f"{said} or is not a directory")
    files = RunFiles(path=path)
    for kind, model in MODELS.items():
        target = path / RUN_FILES[kind]
        if _named(target):
            setattr(files, kind, _load(target, model, files.problems))
    requests = path / RUN_FILES["requests"]
    if requests.is_file() and requests.stat().st_size and not _named(path / RUN_FILES["bench"]):
        # bench rewrites summary.json after each cell: measured requests without it are a bench cut short in its
        # first cell (or a summary lost), which `bench --resume` measures again; an empty file lost nothing
        files.problems.append(
            f"{RUN_FILES['bench']} is missing beside {RUN_FILES['requests']}, so its requests are not summarized "
            f"(a bench cut short in its first cell? `onechip bench URL --resume {path}` measures it again)"
        )
    return files


def _named(target: Path) -> bool:
    """Whether the run directory holds an entry named `target`, whatever it is: a directory of that name, or a
    symlink whose target is missing, a directory or itself, is a damaged run file whose read names the OS reason
    (Path.exists follows the link and said 'absent': the report left the file out and exited 0)."""
    return os.path.lexists(target)


def _load(target: Path, model: type[BaseModel], problems: list[str]) -> Any:
    """`target` validated into `model`, or None with a line appended to `problems`."""
    data = _read_object(target, model, problems)
    if data is None:
        return None
    try:
        loaded = model.model_validate(data)
    except ValidationError as exc:
        return _load_without_unknown(target.name, model, data, exc, problems)
    ignored = _ignored_fields(data, loaded)
    if ignored:  # a renamed optional field would otherwise read as a silently blank one
        problems.append(f"{target.name}: unknown field(s) {', '.join(ignored[: _SHOWN_ERRORS * 2])} ignored")
    return loaded


def _read_object(target: Path, model: type[BaseModel], problems: list[str]) -> dict[str, Any] | None:
    """The JSON object in `target` (an older list-of-CostLine cost.json as a CostReport mapping)."""
    try:
        data = jsontext.loads(read_regular(target).decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(f"{target.name} could not be read: {exc}")
        return None
    if model is CostReport and isinstance(data, list):  # older layout: a bare list of CostLine
        data = _old_cost(data)
    if not isinstance(data, dict):
        problems.append(f"{target.name} is not a JSON object; ignored")
        return None
    return data


def _load_without_unknown(
    name: str, model: type[BaseModel], data: dict[str, Any], exc: ValidationError, problems: list[str]
) -> Any:
    """Retry a file whose only errors are unknown keys inside a strict nested model (a BenchConfig
    written by another onechip version) without those keys; any other error ignores the file."""
    shown = _SHOWN_ERRORS
    if (newer := newer_schema(exc)) is not None:  # a newer onechip's file: its figures are not read as ours
        problems.append(f"{name}: {newer}")
        return None
    unknown = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
    if not unknown or len(unknown) < exc.error_count():
        problems.append(f"{name} does not match {model.__name__}; ignored: {first_problem(exc, '(root)', True, shown)}")
        return None
    for loc in unknown:
        _drop(data, loc)
    problems.append(f"{name}: unknown field(s) {', '.join(_where(loc) for loc in unknown)} ignored")
    try:
        return model.model_validate(data)
    except ValidationError as again:  # pragma: no cover - dropping unknown keys cannot add an error
        problems.append(
            f"{name} does not match {model.__name__}; ignored: {first_problem(again, '(root)', True, shown)}"
        )
        return None


def _ignored_fields(data: Any, loaded: Any, prefix: str = "") -> list[str]:
    """Dotted paths of the keys in `data` that the lenient models dropped (extra="ignore")."""
    if isinstance(loaded, BaseModel) and isinstance(data, dict):
        fields = type(loaded).model_fields
        out = [f"{prefix}{key}" for key in data if key not in fields]
        for key in fields:
            if key in data:
                out += _ignored_fields(data[key], getattr(loaded, key), f"{prefix}{key}.")
        return out
    if isinstance(loaded, list) and isinstance(data, list):
        return [
            p
            for i, (d, m) in enumerate(zip(data, loaded, strict=False))
            for p in _ignored_fields(d, m, f"{prefix}{i}.")
        ]
    return []


def _old_cost(lines: list[Any]) -> Any:
    """A list of CostLine objects (cost.json before CostReport) as a CostReport mapping."""
    first = lines[0] if lines and isinstance(lines[0], dict) else {}
    return {"chip": first.get("chip", ""), "today": "", "lines": lines}


def _where(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(root)"


def _drop(data: Any, loc: tuple[Any, ...]) -> None:
    """Delete the key at `loc` (a pydantic error location) from nested dicts and lists."""
    for part in loc[:-1]:
        data = data[part]
    if isinstance(data, dict):
        data.pop(loc[-1], None)


def require_run_files(run: RunFiles) -> None:
    """Raise ConfigError naming `run.path` and the files looked for when the directory holds none of
    DATA_FILES (a mistyped or wrong directory would otherwise render an empty report and exit 0).
    A file that exists but could not be read or parsed still counts (a FIFO, a directory of that name, a symlink
    that loops or points nowhere: read_run's problem line): its problem goes into the report."""
    if run.problems or any((run.path / name).exists() for name in DATA_FILES):
        return
    # a directory of runs (--router-policies, --find-max) is named for what it is: 'pass a run directory' misled
    inside = {
        POLICIES_FILE: "a policy comparison keeps one run per policy: {}/<policy>",
        SEARCH_FILE: "a find-max search keeps one run per probe: {}/<probe> (the search's report: search.md)",
    }
    said = next((hint.format(run.path) for name, hint in inside.items() if (run.path / name).is_file()), None)
    raise ConfigError(
        f"{run.path} holds no run files (looked for {', '.join(DATA_FILES)}); "
        + (said or "pass a run directory such as runs/<run-id>/")
    )  # fmt: skip
