"""Credentials for Google APIs: Application Default Credentials through google-auth, imported lazily.

`gcloud auth application-default login` (seed article's setup) is what makes ADC work on a laptop; on a VM,
its service account does. ONECHIP_TPU_API_ENDPOINT (a base URL, e.g. http://127.0.0.1:8471) points every
TPU API and Secret Manager call at another server, and then no credentials are needed or read: that is how
tests run against the loopback fake (tests/fakes/tpu_api.py) and never reach Google.

The access token lives only in the Authorization header of requests; it is never logged, recorded or shown
(errors.redact also scrubs any 'Authorization: Bearer ...' text, and the token itself whatever its shape once it has
been put on a request: an answer that echoes it, a proxy's, showed a token not shaped like Google's 'ya29.').
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from onechip.errors import CloudError, MissingDependencyError, redact, remember_secret
from onechip.paths import kind_of
from onechip.schemas.common import TEST_SERVER_HINT, server_url_from_env

ENDPOINT_ENV = "ONECHIP_TPU_API_ENDPOINT"
TOKEN_TIMEOUT_S = 10.0  # one token request's wait (google-auth's own is 120 s, and a hung one is not tried again)
SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
REAUTH = "run `gcloud auth application-default login` (or check GOOGLE_APPLICATION_CREDENTIALS)"
_FIX = "fix or unset it (then `gcloud auth application-default login`)"
_INSTALL = "onechip cloud needs google-auth: pip install 'onechip[cloud]'"
NO_ADC = "NO_ADC"  # CloudError.status when there are no credentials at all (not a set or found file refused: its why)


def endpoint_override() -> str | None:
    """The base URL ONECHIP_TPU_API_ENDPOINT sets (no trailing slash), or None for Google's own."""
    return server_url_from_env(ENDPOINT_ENV, TEST_SERVER_HINT)


class Credentials:
    """Bearer headers for Google APIs, refreshed when they expire; none under an endpoint override."""

    def __init__(self, use_adc: bool | None = None) -> None:
        """`use_adc`: read Application Default Credentials (None: unless ONECHIP_TPU_API_ENDPOINT is set)."""
        self._creds: Any = None
        self.project: str | None = None
        if endpoint_override() is None if use_adc is None else use_adc:
            self._creds, self.project = _adc()

    def headers(self, method: str, url: str) -> dict[str, str]:
        """The headers google-auth puts on a request (`before_request`: refreshed when stale, then
        `apply`: Authorization, and x-goog-user-project when the credentials name a quota project), or {}
        under an endpoint override. Raises CloudError: 'auth' (refresh refused), 'transient' (the token
        endpoint could not be reached)."""
        headers: dict[str, str] = {}
        if self._creds is not None:
            self._google_auth(lambda request: self._creds.before_request(request, method, url, headers))
            remember_secret(str(getattr(self._creds, "token", "") or ""))  # redacted wherever an answer echoes it
        return headers

    def refresh(self) -> bool:
        """Get a new access token now, whatever its expiry says: what google-auth's AuthorizedSession does
        when the API answers 401 (a token revoked or expired early). False under an endpoint override (there
        is nothing to refresh). Raises as `headers`."""
        if self._creds is None:
            return False
        self._google_auth(self._creds.refresh)
        return True

    @staticmethod
    def _google_auth(step: Callable[[Any], None]) -> None:
        """Run `step(Request())`, each token request bounded by TOKEN_TIMEOUT_S (a hung token endpoint waited 120 s),
        google-auth's failures as one redacted CloudError line; the token never in it."""
        try:
            from google.auth.exceptions import GoogleAuthError, TransportError
            from google.auth.transport.requests import Request
        except ImportError:
            raise MissingDependencyError(_INSTALL) from None

        class BoundedRequest(Request):  # a subclass: some credentials (GDCH) refuse any other request object
            """google-auth's Request, each token request waiting TOKEN_TIMEOUT_S at most."""

            def __call__(self, url: str, method: str = "GET", body: Any = None, headers: Any = None,
                         timeout: Any = None, **kwargs: Any) -> Any:  # fmt: skip
                short = isinstance(timeout, int | float) and 0 < timeout < TOKEN_TIMEOUT_S
                return super().__call__(url, method, body, headers, timeout if short else TOKEN_TIMEOUT_S, **kwargs)

        try:
            step(BoundedRequest())
        except TransportError:
            raise CloudError("Google's token endpoint could not be reached", reason="transient") from None
        except GoogleAuthError as exc:  # RefreshError (args[0] its sentence, args[1] the endpoint's raw answer),
            said = " ".join(str(exc.args[0] if exc.args else exc).split())[:300]  # a malformed token answer ...
            raise CloudError(
                f"Google credentials could not be refreshed ({redact(said)}); {REAUTH}",
                reason="auth",
            ) from None


def _adc() -> tuple[Any, str | None]:
    """google.auth.default() with the cloud-platform scope. Raises MissingDependencyError (no google-auth)
    and CloudError(reason='auth'): status NO_ADC when there are no Application Default Credentials, none when
    a file GOOGLE_APPLICATION_CREDENTIALS names (or the well-known one) is refused, the line saying why."""
    try:
        import google.auth
        from google.auth.exceptions import DefaultCredentialsError
    except ImportError:
        raise MissingDependencyError(_INSTALL) from None
    named = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    # google-auth opens the file unguarded: a FIFO there waited for a writer without end, and a directory or a file it
    # may not read came out as 'error: <path>: Is a directory', an OSError line that does not say which setting named it
    # the path is said (errors.names_a_path keeps it out of the redaction): it is what the user has to fix
    setting = f"GOOGLE_APPLICATION_CREDENTIALS={named}"
    if named and os.path.exists(named) and not os.path.isfile(named):
        raise CloudError(f"{setting} names {kind_of(Path(named))}: {_FIX}", reason="auth")
    try:
        creds, project = google.auth.default(scopes=SCOPES)
    except OSError as exc:
        which = f"{setting} names" if named else "the application default credentials are in"
        raise CloudError(f"{which} a file that cannot be read ({exc.strerror or exc}): {_FIX}", reason="auth") from None
    except DefaultCredentialsError as exc:
        if named:  # google-auth read that file and refused it: its first sentence says why (never the file's text)
            said = " ".join(str(exc.args[0] if exc.args else exc).split())[:300]
            raise CloudError(
                f"GOOGLE_APPLICATION_CREDENTIALS names credentials google-auth cannot use ({redact(said)}): fix "
                "or unset it (then `gcloud auth application-default login`)",
                reason="auth",
            ) from None
        raise CloudError(
            "no Google credentials: run `gcloud auth application-default login` (or set "
            f"GOOGLE_APPLICATION_CREDENTIALS), or point {ENDPOINT_ENV} at a test server",
            reason="auth",
            status=NO_ADC,
        ) from None
    return creds, project
