"""What `logs` showed of a secret no single line shows (helper safety68, 2026-12-07): it redacted each line alone, so
a private key printed a line at a time (a host's `cat key.pem`, a service-account key echoed over ssh: RFC 7468's
base64 lines, none of which says it is a key) showed every line of its body, and a token cut in two by a wrap at a
fixed width (`fold`, a serial console, a terminal's log) showed the part on the second line. errors.lines_redactor
reads the lines of one log in order and hides both; `logs` (engines.state.log_lines) reads through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import engine_state
from onechip.engines import state
from onechip.errors import lines_redactor

BODY = [  # 64 base64 characters a line, as RFC 7468 section 2 writes a PEM body; made up
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
    "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu",
    "NMoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8s+CLOyS56YyCFGeJZ",
]
KEY = ["-----BEGIN PRIVATE KEY-----", *BODY, "-----END PRIVATE KEY-----"]
TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"  # an HF token's shape: 'hf_' and 34 (errors.HF_TOKEN_SHAPE)


def _redacted(lines: list[str]) -> list[str]:
    hidden = lines_redactor()
    return [hidden(line) for line in lines]


def test_a_pem_body_printed_a_line_at_a_time_is_hidden_line_by_line() -> None:
    shown = _redacted(["$ cat sa.pem", *KEY, "INFO after the key", "MIIEsecondbase64lineNOTinaKEY"])
    assert shown == ["$ cat sa.pem", KEY[0], "***", "***", "***", KEY[-1], "INFO after the key", shown[-1]]
    assert shown[-1] == "MIIEsecondbase64lineNOTinaKEY"  # base64 after the END line is no key's


def test_a_pem_block_with_a_constant_prefix_and_rfc1421_headers() -> None:
    """docker compose puts the service's name before each line; an encrypted legacy key (RFC 1421) has headers."""
    prefix = "svc-1  | "
    lines = [prefix + "-----BEGIN RSA PRIVATE KEY-----", prefix + "Proc-Type: 4,ENCRYPTED", prefix + "DEK-Info: x"]
    lines += [prefix + line for line in BODY] + [prefix + "-----END RSA PRIVATE KEY-----"]
    shown = _redacted(lines)
    assert not any(line in "\n".join(shown) for line in BODY)
    assert shown[-1] == lines[-1] and len(shown) == len(lines)


def test_a_pem_block_never_ended_stops_at_the_first_line_that_is_no_base64() -> None:
    """A cut block (the host's output ended inside it) hides its body, not every line of the log after it."""
    shown = _redacted([KEY[0], BODY[0], "INFO 12-07 12:00:00 [core.py:1] engine up, 321,376 tokens"])
    assert shown == [KEY[0], "***", "INFO 12-07 12:00:00 [core.py:1] engine up, 321,376 tokens"]


@pytest.mark.parametrize("cut", [5, 12, 20, 30])
def test_a_token_cut_in_two_by_a_wrap_is_hidden_on_the_second_line(cut: int) -> None:
    line = "x" * 10 + " using token " + TOKEN + " for the download"
    at = line.index(TOKEN) + cut
    shown = _redacted([line[:at], line[at:], "INFO next"])
    assert TOKEN[cut:] not in "\n".join(shown) and shown[1] == "*** for the download" and shown[2] == "INFO next"


def test_a_known_secret_of_no_shape_cut_in_two_is_hidden_on_the_second_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "noshape-abcdefghij-0123456789")
    shown = _redacted(["key noshape-abcdefghij", "-0123456789 ok"])
    assert shown[1] == "*** ok"


def test_lines_that_only_touch_are_shown() -> None:
    lines = ["num_gpu_blocks=18744", "0123456789abcdef0123456789abcdef01234567", "INFO 321,376 tokens", "kv: 18432"]
    assert _redacted(lines) == lines
    # a line that ends with a whole token goes on with no part of it (tests/unit/engines/test_engine_state.py's log)
    assert _redacted([f"INFO serving with {TOKEN}", "INFO next", "hf_transfer", "INFOxyz"]) == [
        "INFO serving with ***",
        "INFO next",
        "***",  # 'hf_' and 8 letters: errors' hf_ shape (over-masking, as before)
        "***",  # the rest of a wrapped hf_ run of no whole shape, as a wrap would leave it (over-masking: safety70)
    ]


def test_logs_hides_a_pem_body_and_a_wrapped_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    log = tmp_path / "engine.log"
    log.write_text("\n".join([*KEY, "token " + TOKEN[:10], TOKEN[10:] + " done"]) + "\n")
    state.save(engine_state(log_path=str(log)))
    shown = "\n".join(state.log_lines())
    assert not any(secret in shown for secret in (*BODY, TOKEN[10:])) and "*** done" in shown


def test_a_pem_block_cut_short_ends_at_a_line_of_words() -> None:
    # a BEGIN line and two body lines, the END never written (the process killed mid-print): the lines after it that
    # are words separated by spaces, letters only (the shell's 'Segmentation fault core dumped', a traceback's
    # '    raise ValueError'), were hidden as body, which is base64 with no space inside a line (RFC 7468 section 2:
    # generators wrap at 64 characters, no other whitespace); a line's leading or trailing whitespace is kept as body
    after = ["Segmentation fault core dumped", "    raise ValueError", "INFO 12-07 after"]
    shown = _redacted([KEY[0], BODY[0], "  " + BODY[1] + " ", *after])
    assert shown == [KEY[0], "***", "***", *after]
