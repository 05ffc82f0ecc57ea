"""A clock that moves only when the code under test sleeps: `SleepClock(monkeypatch, *modules)` makes each module's
time.monotonic read `now` and its time.sleep add to it, so a wait of minutes runs in the time its calls take, and
what a test measures of it is the same on a loaded machine."""

from __future__ import annotations

from types import ModuleType

import pytest


class SleepClock:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, *modules: ModuleType):
        self.now = 1000.0
        for module in modules:
            monkeypatch.setattr(module.time, "monotonic", lambda: self.now)  # type: ignore[attr-defined]
            monkeypatch.setattr(module.time, "sleep", self.sleep)  # type: ignore[attr-defined]

    def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.0)
