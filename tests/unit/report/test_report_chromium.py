"""The HTML report as a browser shows it: Debian's headless Chromium renders report.html to a PNG
(non-empty, not blank) and its DOM holds the tables and the three plots. Offline: file:// only.

Needs `chromium` or `chromium-headless-shell` (apt); skipped, with the reason, where neither is installed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from matplotlib import image

from onechip.report import write_report

BROWSER = next((b for b in ("chromium-headless-shell", "chromium", "chromium-browser") if shutil.which(b)), None)
pytestmark = [
    pytest.mark.integration,  # starts a real browser process (~10 s on 2 cores)
    pytest.mark.skipif(BROWSER is None, reason="no headless Chromium on PATH (apt install chromium)"),
]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]


def _chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert BROWSER is not None
    return subprocess.run([BROWSER, *FLAGS, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=True)


def test_chromium_renders_the_report(seed_run: Path, tmp_path: Path) -> None:
    (page,) = write_report(seed_run, ["html"])
    shot = tmp_path / "report.png"
    _chromium(f"--screenshot={shot}", "--window-size=1200,3000", page.as_uri(), cwd=tmp_path)
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 50_000
    # matplotlib reads the PNG back: the page is not a blank canvas.
    pixels = image.imread(str(shot))
    assert pixels.shape[:2] == (3000, 1200)
    assert pixels.std() > 0.05

    dom = _chromium("--dump-dom", page.as_uri(), cwd=tmp_path).stdout
    assert dom.count("<table") >= 10
    assert dom.count('src="data:image/png;base64,') == 3
    assert "1,496.5 (CV 2%)" in dom and "$0.107" in dom
