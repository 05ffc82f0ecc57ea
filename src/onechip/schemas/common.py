"""Base classes shared by every schema (strict inputs, lenient stored results) and the server-root rule."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = "1"
GIB = 1 << 30  # one gibibyte (2**30 bytes); GB is 10**9 and a different word


class StrictModel(BaseModel):
    """An input or config: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid", frozen=False)


class ResultModel(BaseModel):
    """A stored result: read leniently so older/newer files still load."""

    model_config = ConfigDict(extra="ignore")


def base_root(base_url: str) -> str:
    """`http://h:p/v1` or `http://h:p/` -> `http://h:p`: vLLM serves /tokenize, /metrics, /version and /health
    at the root, and OpenAI SDK users habitually pass the URL with /v1."""
    root = base_url.strip().rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return root


def no_url_password(url: str) -> str:
    """`url` itself, unless it carries a password (scheme://user:password@host, RFC 3986 userinfo): the base URL
    is recorded in every run's files and reports, so a password there would be stored and shown. vLLM checks a
    bearer key (`vllm serve --api-key`), which onechip sends from $OPENAI_API_KEY (vllm.wire.api_key_from_env).
    Raises ValueError."""
    if urlsplit(url.strip()).password is not None:
        raise ValueError(
            "the URL holds a password (user:password@), which run files and reports would record; give the "
            "server's key in OPENAI_API_KEY (sent as a bearer token, as vllm serve --api-key expects)"
        )
    return url


def model_key(model: str) -> str:
    """A model name as runs and plans are compared: its last part, case-insensitively (the demo plans the
    embedded model by its converted directory, ~/.cache/onechip/models/smollm2-135m-instruct; a server serves
    it as SmolLM2-135M-Instruct; `plan` names it by its catalog id)."""
    return Path(model).name.lower()
