"""Multimodal probe: the seed's last verification step ("correctly described a synthetic gradient PNG").

A 64 x 64 PNG made on the spot (no image library: zlib + struct), a horizontal gradient from pure red on
the left to pure blue on the right, is sent as an OpenAI `image_url` data URL with the question "what
colours are in this image?". The answer passes when it names both red and blue, is partial when it names
one of them (or purple/violet, the middle of the gradient), and fails otherwise.

A server that refuses image input with HTTP 400 (a text-only model, or one started without image
support, e.g. `--limit-mm-per-prompt '{"image":0}'`) is `not_tested` with the server's message as the
reason: that is the deployment's choice, never a failure of the model.
"""

from __future__ import annotations

import base64
import re
import struct
import zlib

from onechip.checks.verdicts import failed
from onechip.errors import EndpointError, EndpointStatusError
from onechip.schemas.checks import CheckOptions, CheckResult, Probe, Verdict
from onechip.vllm.wire import WireClient, chat_body

QUESTION = "What colours are in this image? Answer in one short sentence."
SIDE = 64
EXPECTED = ("red", "blue")
MIDDLE = ("purple", "violet", "magenta", "pink")


def gradient_png(side: int = SIDE) -> bytes:
    """A side x side 8-bit RGB PNG: red (255, 0, 0) at the left edge to blue (0, 0, 255) at the right."""
    row = b"".join(bytes((255 - 255 * x // (side - 1), 0, 255 * x // (side - 1))) for x in range(side))
    raw = b"".join(b"\x00" + row for _ in range(side))  # filter type 0 (none) on every scanline

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)  # 8-bit depth, colour type 2 (RGB)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def image_message(png: bytes, question: str = QUESTION) -> list[dict[str, object]]:
    """One user turn carrying the question and the PNG as a data URL (the OpenAI content-part form)."""
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    return [
        {
            "role": "user",
            "content": [{"type": "text", "text": question}, {"type": "image_url", "image_url": {"url": url}}],
        }
    ]


def judge(answer: str) -> tuple[Verdict, str]:
    """(verdict, note) of an answer: both gradient ends named -> pass; one, or its middle -> partial."""
    words = set(re.findall(r"[a-z]+", answer.lower()))
    named = [c for c in EXPECTED if c in words]
    if len(named) == len(EXPECTED):
        return "pass", "named red and blue"
    if named or words & set(MIDDLE):
        return "partial", f"named {', '.join(named or sorted(words & set(MIDDLE)))} only"
    return "fail", "named neither red nor blue"


def check_multimodal(ep: WireClient, model: str, opts: CheckOptions) -> CheckResult:
    """Domain `multimodal`: one probe, `image_gradient`; HTTP 400 -> not_tested with the server's reason."""
    conditions = {"image": f"{SIDE}x{SIDE} PNG, red-to-blue gradient, data URL", "temperature": "0"}

    def unmeasured(verdict: Verdict, note: str) -> CheckResult:
        probe = Probe(name="image_gradient", verdict=verdict, note=note)
        return CheckResult(domain="multimodal", verdict=verdict, probes=[probe], note=note, conditions=conditions)

    try:
        reply = ep.chat(chat_body(model, image_message(gradient_png()), 32))
    except EndpointStatusError as exc:
        if exc.status_code == 400:
            return unmeasured("not_tested", f"the server does not take image input: {exc.server_message}")
        return unmeasured(failed(exc), str(exc))
    except EndpointError as exc:
        return unmeasured("fail", str(exc))
    verdict, note = judge(reply.content)
    probe = Probe(
        name="image_gradient",
        verdict=verdict,
        latency_ms=round(reply.latency_ms, 1),
        observed={"text": reply.content},
        expected="names red and blue",
        note=note,
    )
    return CheckResult(domain="multimodal", verdict=verdict, probes=[probe], note=note, conditions=conditions)
