"""Pydantic models shared by every layer. No I/O here."""

from onechip.schemas.bench import BenchConfig, BenchRun, CellResult, Dist, RepResult, RequestSample
from onechip.schemas.boot import BootEvent, BootRecord, EngineState, EngineStatus
from onechip.schemas.checks import CheckReport, CheckResult, Probe
from onechip.schemas.common import SCHEMA_VERSION, ResultModel, StrictModel
from onechip.schemas.cost import CostLine, Price
from onechip.schemas.run import RUN_FILES, RunManifest
from onechip.schemas.plan import ContextConcurrency, CrossCheck, LayerKV, Plan, PlanWarning, ServeArg

__all__ = [
    "SCHEMA_VERSION", "EngineState", "EngineStatus", "BenchConfig", "BenchRun", "BootEvent", "BootRecord", "CellResult", "CheckReport",
    "CheckResult", "ContextConcurrency", "CostLine", "CrossCheck", "Dist", "LayerKV", "Plan", "PlanWarning",
    "Price", "Probe", "RepResult", "RequestSample", "ResultModel", "ServeArg", "StrictModel", "RUN_FILES", "RunManifest",
]
