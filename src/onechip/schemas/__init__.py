"""Pydantic models shared by every layer. No I/O here."""

from onechip.schemas.bench import BenchConfig, BenchRun, CellResult, Dist, RepResult, RequestSample
from onechip.schemas.boot import BootEvent, BootRecord, EngineState, EngineStatus
from onechip.schemas.checks import CheckReport, CheckResult, Probe
from onechip.schemas.common import SCHEMA_VERSION, ResultModel, StrictModel
from onechip.schemas.cost import BreakEven, CellCost, CostLine, CostReport, Price, RestartCost
from onechip.schemas.plan import ContextConcurrency, CrossCheck, LayerKV, Plan, PlanWarning, ServeSetting, ServeSettings
from onechip.schemas.run import RUN_FILES, RunManifest
from onechip.schemas.serve import DockerGroup, ServeCommand, ServeFlag, ServeTarget

__all__ = [
    "BenchConfig",
    "BenchRun",
    "BootEvent",
    "BootRecord",
    "CellResult",
    "CheckReport",
    "CheckResult",
    "ContextConcurrency",
    "BreakEven",
    "CellCost",
    "CostLine",
    "CostReport",
    "RestartCost",
    "CrossCheck",
    "Dist",
    "EngineState",
    "EngineStatus",
    "LayerKV",
    "Plan",
    "PlanWarning",
    "Price",
    "Probe",
    "RUN_FILES",
    "RepResult",
    "RequestSample",
    "ResultModel",
    "RunManifest",
    "SCHEMA_VERSION",
    "ServeSetting",
    "ServeSettings",
    "ServeCommand",
    "ServeFlag",
    "ServeTarget",
    "DockerGroup",
    "StrictModel",
]
