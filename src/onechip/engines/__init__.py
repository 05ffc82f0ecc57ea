"""Launching serving engines, reading their logs and metrics. See base.Engine for the protocol."""

from onechip.engines.base import Engine
from onechip.engines.embedded import ENGINE_KIND, EmbeddedEngine
from onechip.engines.local import LocalVllmEngine

__all__ = ["ENGINE_KIND", "EmbeddedEngine", "Engine", "LocalVllmEngine"]
