"""Writing rendered reports into the run directory:

md              report.md            the Markdown report
html            report.html          the same, self-contained, with matplotlib plots
json            report.json          every run file as loaded into its model, in one document
serving-report  serving-report.json  the serving-report layout (schemas.serving_report), validated by its JSON Schema
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from onechip import __version__
from onechip.errors import ConfigError, redact
from onechip.paths import write_text_atomic
from onechip.report import serving_report
from onechip.report.compare import check_comparable, render_compare_files
from onechip.report.html import render_html_files
from onechip.report.markdown import render_markdown_files
from onechip.report.rundir import JSON_KINDS, RunFiles, read_run, require_run_files
from onechip.schemas.common import SCHEMA_VERSION

FORMATS = ("md", "html", "json", "serving-report")
FILE_NAMES = {
    "md": "report.md",
    "html": "report.html",
    "json": "report.json",
    "serving-report": "serving-report.json",
}


def parse_formats(formats: Iterable[str] | str) -> list[str]:
    """'md,html' or ['md', 'html'] -> validated list. Raises ConfigError naming the known formats."""
    items = formats.split(",") if isinstance(formats, str) else list(formats)
    wanted = list(dict.fromkeys(f.strip() for f in items if f.strip()))
    unknown = [f for f in wanted if f not in FORMATS]
    if unknown:
        raise ConfigError(f"unknown report format {', '.join(unknown)}; known: {', '.join(FORMATS)}")
    if not wanted:  # `--format ''` used to write nothing and exit 0
        raise ConfigError(f"no report format given; known: {', '.join(FORMATS)}")
    return wanted


def _dump(model: BaseModel | None) -> Any:
    return None if model is None else model.model_dump(mode="json")


def render(run: RunFiles, fmt: str) -> str:
    """The text of one format for already-read run files."""
    if fmt == "md":
        return render_markdown_files(run)
    if fmt == "html":
        return render_html_files(run)
    if fmt == "json":
        document = {
            "schema_version": SCHEMA_VERSION,
            "tool_version": __version__,
            "run_dir": str(run.path),
            "problems": run.problems,
            **{kind: _dump(getattr(run, kind)) for kind in JSON_KINDS},
        }
        return redact(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"
    if fmt == "serving-report":  # redacted as the Markdown report is (its text may hold what onechip did not write)
        return redact(json.dumps(serving_report.export(run), indent=2, ensure_ascii=False)) + "\n"
    raise ConfigError(f"unknown report format {fmt}; known: {', '.join(FORMATS)}")


def write_report(
    run_dir: Path | str, formats: Iterable[str] | str = ("md",), compare: Path | str | None = None
) -> list[Path]:
    """Render the run in `run_dir` in each of `formats` and write each beside the run files
    (see FILE_NAMES); with `compare`, also write `compare-<other run>.md` comparing that run against
    this one. Returns the paths written. Raises ConfigError for an unknown format, a missing
    directory or one without run files (see rundir.require_run_files), a prediction compared with a run of
    another model (compare.check_comparable), or a serving-report export that fails its schema."""
    wanted = parse_formats(formats)
    run = read_run(run_dir)
    require_run_files(run)
    other = read_run(compare) if compare is not None else None
    if other is not None:  # refused before anything is written
        require_run_files(other)
        check_comparable(run, other)
    written = [write_text_atomic(run.path / FILE_NAMES[fmt], render(run, fmt)) for fmt in wanted]
    if other is not None:
        written.append(write_text_atomic(run.path / compare_name(other.path), render_compare_files(run, other)))
    return written


# the longest compare file name, bytes: NAME_MAX (255 on Linux, macOS, Windows) less the temporary file's additions
_COMPARE_NAME_BYTES = 200


def compare_name(other: Path) -> str:
    """The file name of the comparison against the run in `other`: 'compare-<its folder's name>.md', letters and
    digits of any script kept ('compare-ééé.md'), other characters as '_' and then, the name changed, the first 8
    hex digits of the name's sha256 ('compare-a_b-<hash>.md' for 'a b'), so runs whose names differ only in what
    is replaced ('ｂ!' and 'ｂ?') get files of their own and the same run always the same file. A name too long for
    the file (and the temporary write_text_atomic writes beside it: ".NAME.PID.THREAD.tmp") under the usual 255-byte
    limit on a file name is cut to _COMPARE_NAME_BYTES, the hash added (a 250-character run folder failed the write
    "File name too long", after report.md was rewritten)."""
    name = other.resolve().name
    safe = re.sub(r"[^\w.-]+", "_", name) or "other"
    if safe != name or len(f"compare-{safe}.md".encode()) > _COMPARE_NAME_BYTES:
        digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        room = _COMPARE_NAME_BYTES - len(f"compare--{digest}.md")
        safe = safe.encode()[:room].decode("utf-8", "ignore") + "-" + digest
    return f"compare-{safe}.md"
