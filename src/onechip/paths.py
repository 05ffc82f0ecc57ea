"""Where onechip keeps things on disk: its home (models, engine state) and run directories."""

from __future__ import annotations

import contextlib
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path


def onechip_home() -> Path:
    """`$ONECHIP_HOME`, else `~/.cache/onechip`."""
    return Path(os.environ.get("ONECHIP_HOME") or Path.home() / ".cache" / "onechip")


def home_store(name: str, formerly: str) -> Path:
    """`$ONECHIP_HOME/<name>`, a store named for what it holds. Files an earlier onechip kept under
    `$ONECHIP_HOME/<formerly>` are moved in first (one already in the new store is never overwritten, and the
    old directory goes only once empty), so renaming a store loses nobody's data. Not created."""
    home = onechip_home()
    store, old = home / name, home / formerly
    if old.is_dir():
        store.mkdir(parents=True, exist_ok=True)
        for path in old.iterdir():
            if not (store / path.name).exists():
                path.rename(store / path.name)
        with contextlib.suppress(OSError):
            old.rmdir()
    return store


def new_run_dir(root: Path) -> Path:
    """Create and return `root/<UTC timestamp>-<4 hex>`, e.g. runs/20261129T095200Z-a3f1."""
    run_id = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"
    path = root / run_id
    path.mkdir(parents=True, exist_ok=False)
    return path


def write_text_atomic(target: Path, text: str) -> Path:
    """Write `text` to `target` through a temporary file beside it, so a reader never sees half a file."""
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)
    return target
