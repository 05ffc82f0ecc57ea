"""Base classes shared by every schema (strict inputs, lenient stored results) and the server-root rule."""

from __future__ import annotations

import json
import os
import re
import shlex
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from onechip.errors import ConfigError, looks_secret, redact, url_shown
from onechip.paths import read_home_file

SCHEMA_VERSION = "1"
# the version of a stored file that names none: every kind of file onechip writes was version 1 when it first named
# one (plan.json and the calibrations in c8ca6fd2, boot.json, crosscheck.json, engine.json, the measured boots, the
# cloud records and probe.json in files66), so one without the field was written before: never read as a later one
UNVERSIONED = "1"
NEWER_SCHEMA = "newer_schema"  # known_schema's error type for a version newer than SCHEMA_VERSION (by_newer)
GIB = 1 << 30  # one gibibyte (2**30 bytes); GB is 10**9 and a different word


class StrictModel(BaseModel):
    """An input or config: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid", frozen=False)


class ResultModel(BaseModel):
    """A stored result: read leniently so older/newer files still load."""

    model_config = ConfigDict(extra="ignore")


_VERSION = re.compile(r"[0-9]+(?:\.[0-9]+)*")


def _version(value: str) -> tuple[int, ...] | None:
    """A schema version's numbers without trailing zeros ('1', '1.0' and '1.0.0' are one version), None for text that
    is not dot-separated ASCII numbers ('v1', '-1', '')."""
    if not _VERSION.fullmatch(value.strip()):
        return None
    parts = [int(part) for part in value.strip().split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def known_schema(value: str) -> str:
    """`value`, a stored file's schema_version, when this onechip reads it: SCHEMA_VERSION or an older one (their
    files load leniently). Raises PydanticCustomError 'unknown_schema' for a newer one, or text that is no version:
    its fields may mean what this onechip cannot tell, so its figures are not rendered as if they were ours."""
    found = _version(value)
    if found is None:
        raise PydanticCustomError(
            "unknown_schema",
            "schema_version {found} is not a version (this onechip writes {known})",
            {"found": repr(value), "known": repr(SCHEMA_VERSION)},
        )
    if found > _SCHEMA:
        raise PydanticCustomError(
            NEWER_SCHEMA,
            "schema_version {found} is newer than the {known} this onechip reads; upgrade onechip to read it",
            {"found": repr(value), "known": repr(SCHEMA_VERSION)},
        )
    return value


def stored_by_newer(path: Path) -> str | None:
    """The schema_version of the stored JSON object at `path` when it is newer than this onechip reads (known_schema's
    rule), else None: ours or older, none, not a version, not JSON, no file. Such a file is another onechip's to read,
    never this one's to write over (sim.store.save, api.remember_boot). Raises ConfigError as paths.read_home_file
    does (a FIFO or device there)."""
    try:
        data = json.loads(read_home_file(path))
    except (OSError, ValueError):
        return None
    value = schema_text(data.get("schema_version")) if isinstance(data, dict) else None
    if not isinstance(value, str) or (found := _version(value)) is None:
        return None
    return value if found > _SCHEMA else None


def written_by_newer(version: str) -> str:
    """'was written by a newer onechip (schema_version V; this onechip reads S)': what a stored file whose
    `version` (stored_by_newer's) is newer than this onechip reads is, said after its name."""
    return f"was written by a newer onechip (schema_version {version}; this onechip reads {SCHEMA_VERSION})"


def newer_note(what: str, found: Sequence[tuple[Path, str]]) -> str:
    """The one line saying that the stored `what` files `found` (each path with its schema_version, stored_by_newer's)
    are not used: a newer onechip wrote them, and they are kept as they are. Said where a reader skips them without a
    word (sim.store.newer_notes: a calibration; planner.calibration.newer_note: a measured boot)."""
    files = "; ".join(f"{path} (schema_version {version})" for path, version in found)
    return (
        f"{what} not used, written by a newer onechip: {files}; this onechip reads {SCHEMA_VERSION} (kept as it is; "
        "upgrade onechip to use it)"
    )


def schema_text(value: object) -> object:
    """A schema_version written as a JSON number (1, 1.0: by hand, or by a tool that took it for one) as the text it
    spells, read as '1' and '1.0' are; a boolean (a JSON true is no version) and any other type are left to the
    str check."""
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


_SCHEMA = tuple(int(part) for part in SCHEMA_VERSION.split("."))  # what this onechip writes, as numbers
StoredSchemaVersion = Annotated[str, BeforeValidator(schema_text), AfterValidator(known_schema)]


class StoredResult(ResultModel):
    """A result onechip keeps as a file of its own (plan.json, boot.json, engine.json, ...), naming its layout's
    version: a record made here names SCHEMA_VERSION; a file read without the field was written before its kind named
    one (UNVERSIONED); one newer than this onechip reads is refused (known_schema; newer_schema words it)."""

    schema_version: StoredSchemaVersion = Field(
        default=UNVERSIONED,
        description="Version of this file's layout (schemas.common.SCHEMA_VERSION when written); a file written "
        "before its kind named one reads as version 1.",
    )

    def __init__(self, /, **data: Any) -> None:
        data.setdefault("schema_version", SCHEMA_VERSION)
        super().__init__(**data)

    # only a record made in code comes through __init__: marked as pydantic's own (as pydantic's RootModel.__init__
    # is: pydantic/_internal/_model_construction.py), model_validate and model_validate_json, every read of a file,
    # build the model without calling it, so a file's missing field keeps the default, UNVERSIONED
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]


def newer_schema(exc: ValidationError) -> str | None:
    """known_schema's one line when `exc` refused a stored file's schema_version (newer than this onechip reads, or
    no version), else None: the file is another onechip's, and its other errors say nothing about it."""
    return next((str(e["msg"]) for e in exc.errors() if e["type"] in (NEWER_SCHEMA, "unknown_schema")), None)


def by_newer(exc: ValidationError) -> bool:
    """Whether `exc` refused a stored file's schema_version as newer than this onechip reads (known_schema), not as
    text that is no version ('x', 'v2', ''), which no onechip writes: a damaged file, not another onechip's."""
    return any(e["type"] == NEWER_SCHEMA for e in exc.errors())


# a figure measured (or predicted) into a stored result: finite (json reads NaN and Infinity, which onechip never
# writes: pydantic writes them as null) and, for the rates and shares, not negative
Finite = Annotated[float, Field(allow_inf_nan=False)]
Measured = Annotated[float, Field(ge=0, allow_inf_nan=False)]


def region_name(value: str) -> str:
    """A cloud region as the price catalogs spell it, in lower case (GCP 'us-west4', AWS 'us-east-1', Azure
    'westus2'): 'US-WEST4' matched no price while chip names match in any case."""
    return value.lower()


Region = Annotated[str, AfterValidator(region_name)]


def printable_name(value: str) -> str:
    """`value` (a chip, model or engine-version name) unchanged; raises ValueError when it holds a control character
    (NUL, tab, newline, ESC: Unicode category Cc): 'l4\\x00' was taken as l4, since chip names match loosely."""
    if any(unicodedata.category(c) == "Cc" for c in value):
        raise ValueError("holds a control character (NUL, tab, newline or escape); give the name without it")
    return value


Name = Annotated[str, AfterValidator(printable_name)]


def model_name(value: str) -> str:
    """A model to resolve (a Hub id, a catalog name or a checkpoint directory) without the whitespace around it (a
    copy-paste's trailing space or newline): neither a Hub id nor a catalog name holds one, so ' Qwen/Qwen3-8B ' was
    refused by the Hub's repo-id rule. An existing path is kept as given; whitespace inside stays, for the resolver to
    refuse in one line."""
    stripped = value.strip()
    if stripped == value or not stripped:  # all blank: the resolver's 'MODEL is empty'
        return value
    try:
        exists = os.path.lexists(os.path.expanduser(value))
    except ValueError:  # a NUL inside: printable_name refuses it next
        exists = False
    return value if exists else stripped


ModelName = Annotated[str, AfterValidator(model_name), AfterValidator(printable_name)]


# The distribution reference grammar (github.com/distribution/reference, regexp.go), as docker parses an image:
# [domain[:port]/]path[:tag][@digest]; path components are lower case, a tag is 1 - 128 word characters, '.' or '-'
# after a first word character. A space, a leading '-' (docker takes it as an option) or an empty tag is none.
# The domain's host is a dotted name or, since reference v0.5.0, an IPv6 address in brackets (regexp.go ipv6address
# `\[(?:[a-fA-F0-9:]+)\]`, host = domainName | ipv6address): '[::1]:5000/vllm:v1' is a registry on the loopback.
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_DOMAIN = rf"(?:(?:{_LABEL}(?:\.{_LABEL})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?/)?"
_PATH = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
_IMAGE = re.compile(
    rf"^{_DOMAIN}{_PATH}(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{{32,}})?$"
)


def no_secret(value: str) -> str:
    """`value`, a word onechip puts on a command line (an ssh target or option, a launcher, an image), unchanged.
    Raises ValueError when it holds a secret (errors.looks_secret: one shaped as a token or key, or the value of
    HF_TOKEN or another secret variable), which the plan, the dry run and ps would show; the message never repeats
    it."""
    if looks_secret(value):
        raise ValueError("holds something shaped as a secret (a token or key): a secret never goes on a command line")
    return value


CommandWord = Annotated[str, AfterValidator(no_secret)]
# Text a record keeps from outside onechip: a server's answer (an error body, a message) or an exception's text (a
# transport error's; aiohttp's NonHttpUrlRedirectClientError and InvalidUrlRedirectClientError are the Location URL
# whole, its password and ?key= too: aiohttp 3.14 client_exceptions.py). Redacted (errors.redact) as the record is
# made and as a stored one is read: the one place requests.jsonl, summary.json, checks.json, the reports, the console
# and an MCP tool result take such a text from, whichever path wrote it.
Said = Annotated[str, AfterValidator(redact)]


def shell_line(value: str | None) -> str | None:
    """A --launcher value, parsed like a shell line ('"/opt/my vllm/bin/vllm" serve'): it must split into words."""
    if value is None:
        return None
    try:
        words = shlex.split(value)
    except ValueError as exc:
        raise ValueError(f"cannot be split like a shell line ({exc})") from None
    if not words:
        raise ValueError("is empty")
    return value


def image_reference(value: str | None) -> str | None:
    """`value` when it is a container image reference docker can parse (_IMAGE), e.g. vllm/vllm-openai:v0.19.0 or
    IMAGE@sha256:<64 hex digits>; None passes. Raises ValueError otherwise: a word with a space, a leading '-' or
    upper case in its path was written into manifests and docker command lines as given; or one holding a secret
    (no_secret: an hf_... token in a tag)."""
    if value is not None:
        no_secret(value)
    if value is not None and not _IMAGE.match(value):
        raise ValueError("not an image reference such as vllm/vllm-openai:v0.19.0 or IMAGE@sha256:<64 hex digits>")
    return value


def base_root(base_url: str) -> str:
    """`http://h:p/v1` or `http://h:p/` -> `http://h:p`: vLLM serves /tokenize, /metrics, /version and /health
    at the root, and OpenAI SDK users habitually pass the URL with /v1."""
    root = base_url.strip().rstrip("/")
    if root.endswith("/v1"):
        root = root[: -len("/v1")]
    return root


# where a server's key goes, said when its URL holds one: vLLM's (vllm.wire.api_key_from_env); the Hub's
# (huggingface_hub reads HF_TOKEN); none for a test server that an *_API_ENDPOINT variable names (no credentials
# are read then: cloud.auth, cloud.billing)
VLLM_KEY_HINT = (
    "give the server's key in OPENAI_API_KEY or VLLM_API_KEY "
    "(sent as a bearer token, as `vllm serve --api-key` expects)"
)
HUB_KEY_HINT = "give a gated model's token in HF_TOKEN (huggingface_hub sends it as a header)"
TEST_SERVER_HINT = "a test server is sent no credentials: give its http://HOST:PORT alone"


def server_url(url: str, *, key_hint: str = VLLM_KEY_HINT) -> str:
    """`url` itself when it names a server as httpx can ask it: scheme http or https, a host, and a port of
    1 - 65535 if one is given (`localhost:8000`, `127.0.0.1:abc` or `http://h:99999` is a typo to say before any
    request, not a server that cannot be reached), and no password or user (scheme://user:password@host or
    scheme://KEY@host, RFC 3986 userinfo), query or fragment: the base URL is recorded in every run's files and
    reports, so a password or key there would be stored and shown, and a path is appended to it (a query would end up
    before /v1/...). vLLM
    checks a bearer key (`vllm serve --api-key`), which onechip sends from $OPENAI_API_KEY or $VLLM_API_KEY
    (vllm.wire.api_key_from_env: which first follows the server's host); `key_hint` says where the key goes instead
    (another server: the Hub, the Billing Catalog). Raises ValueError."""
    parts = urlsplit(url.strip())
    if parts.password is not None:
        raise ValueError(
            f"the URL holds a password (user:password@), which run files and reports would record; {key_hint}"
        )
    if "@" in parts.netloc:  # 'http://KEY@host': no password, yet a key all the same (sent as Basic credentials)
        raise ValueError(f"the URL holds user@, which run files and reports would record; {key_hint}")
    if parts.query or parts.fragment:  # '/?api_key=K' was joined into '/?api_key=K/v1/models' and recorded
        raise ValueError(
            f"a server URL has no ?query or #fragment (requests go to URL/path, and run files record it); {key_hint}"
        )
    try:
        port_ok = parts.port != 0  # None (no port given) is the scheme's default
    except ValueError:  # urllib: a port that is not a number, or out of 0 - 65535
        port_ok = False
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ValueError("not a server URL: give http://HOST:PORT or https://HOST:PORT, e.g. http://127.0.0.1:8000")
    return url


# the OpenAI routes onechip appends to a base URL (vllm/wire.py: /v1/models, /v1/completions, /v1/chat/completions),
# as the OpenAI API reference and vLLM's docs print them in a curl line, which is where a user copies a URL from
OPENAI_ROUTES = ("/v1/chat/completions", "/v1/completions", "/v1/models")


def openai_base_url(url: str) -> str:
    """`url` when it is a server URL (server_url) and not one of OPENAI_ROUTES' endpoints: onechip appends the
    route itself, so 'http://h:8000/v1/chat/completions' was asked for '.../v1/chat/completions/v1/models' and
    failed as an HTTP 404 from a server that answers. A path that merely holds /v1/ is a base (an AI gateway's
    .../v1/ACCOUNT/GATEWAY/openai). Raises ValueError naming the base URL to give."""
    server_url(url)
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/")
    route = next((r for r in OPENAI_ROUTES if path.endswith(r)), None)
    if route is not None:
        base = urlunsplit((parts.scheme, parts.netloc, path.removesuffix(route), "", ""))
        raise ValueError(
            f"the URL names the endpoint {route}, which onechip appends itself; give the server's base URL, "
            f"{url_shown(base)}"
        )
    return url


def server_url_from_env(name: str, key_hint: str) -> str | None:
    """The base URL the environment variable `name` sets (stripped, no trailing slash), or None when unset. Raises
    ConfigError when it names no server (server_url, its line ending in `key_hint`: where that server's key goes,
    not vLLM's OPENAI_API_KEY): 'http://127.0.0.1:abc' was an internal error, and 'notaurl' was tried as if it had
    not answered."""
    value = os.environ.get(name, "").strip().rstrip("/")
    if not value:
        return None
    try:
        server_url(value, key_hint=key_hint)
    except ValueError as exc:
        raise ConfigError(f"{name}={url_shown(value)!r}: {exc}") from None
    return value


def model_key(model: str) -> str:
    """A model name as runs and plans are compared: its last part, case-insensitively (the demo plans the
    embedded model by its converted directory, ~/.cache/onechip/models/smollm2-135m-instruct; a server serves
    it as SmolLM2-135M-Instruct; `plan` names it by its catalog id)."""
    return Path(model).name.lower()


def plural(n: int, noun: str) -> str:
    """'1 warning', '2 warnings', '0 warnings': a count and its noun, the noun plural by adding 's' unless n is 1."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def cut_at_word(text: str, chars: int) -> str:
    """`text` whole when it has at most `chars` characters, else cut where a word ends and marked '…' (at most `chars`
    with the mark): a console cell never ends mid-word ('your prompt con'), nor reads as the whole note. A first word
    longer than that is cut inside itself."""
    if len(text) <= chars:
        return text
    head = text[: chars - 1]
    if text[chars - 1] != " " and " " in head:  # the cut falls inside a word: end at the space before it
        head = head.rsplit(" ", 1)[0]
    return head.rstrip(" ,;:") + "…"


def figures(value: float) -> str:
    """A rate or an amount as a table title says it: one decimal place from 0.1 up (1,496.5), three significant
    figures below (0.001, 0.0123), so a small positive value never reads as 0.0."""
    return f"{value:,.1f}" if value == 0 or abs(value) >= 0.1 else f"{value:.3g}"


def first_problem(exc: ValidationError, root: str = "", more: bool = True, shown: int = 1) -> str:
    """pydantic's first error of `exc` as one clause, 'where: why' ('kv_tokens: Field required'), where is its
    location's parts joined by '.' (`root` for the document itself; '' names none: 'Invalid JSON: ...'), and with
    `more`, how many others there are ('(and 2 more)'). `shown` > 1: the first `shown` errors, each so, joined by
    '; '."""
    errors = exc.errors(include_url=False)
    said = []
    for error in errors[:shown]:
        where = ".".join(str(part) for part in error["loc"]) or root
        said.append(f"{where + ': ' if where else ''}{error['msg']}")
    others = f" (and {len(errors) - shown} more)" if more and len(errors) > shown else ""
    return "; ".join(said) + others
