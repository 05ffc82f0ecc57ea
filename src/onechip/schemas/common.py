"""Base classes shared by every schema: strict inputs, lenient stored results."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = "1"


class StrictModel(BaseModel):
    """An input or config: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid", frozen=False)


class ResultModel(BaseModel):
    """A stored result: read leniently so older/newer files still load."""

    model_config = ConfigDict(extra="ignore")
