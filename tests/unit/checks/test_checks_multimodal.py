"""The multimodal probe: a synthetic red-to-blue gradient PNG (the seed's last verification step), judged on
whether the answer names what is in it; a server refusing images is not_tested, never a model failure."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest

from fakes.vllm_server import FakeVllm, Reply
from onechip import api
from onechip.checks.multimodal import gradient_png, judge
from onechip.schemas.requests import CheckRequest


def _pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, scanlines) of an 8-bit RGB PNG with filter 0, read back by hand."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        assert struct.unpack(">I", png[pos + 8 + length : pos + 12 + length])[0] == zlib.crc32(kind + data)
        if kind == b"IHDR":
            width, height = struct.unpack(">II", data[:8])
            assert data[8:10] == b"\x08\x02"  # 8-bit RGB
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = 1 + 3 * width
    rows = [raw[i * stride : (i + 1) * stride] for i in range(height)]
    assert all(r[0] == 0 for r in rows)
    return width, height, [r[1:] for r in rows]


def test_gradient_png_runs_from_red_to_blue():
    width, height, rows = _pixels(gradient_png())
    assert (width, height) == (64, 64)
    assert tuple(rows[0][:3]) == (255, 0, 0) and tuple(rows[-1][-3:]) == (0, 0, 255)
    assert tuple(rows[10][3 * 32 : 3 * 32 + 3])[1] == 0  # no green anywhere: red + blue only


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        ("The image shows a gradient from red to blue.", "pass"),
        ("It is mostly Blue.", "partial"),
        ("A purple square.", "partial"),
        ("A photo of a cat.", "fail"),
        ("", "fail"),
    ],
)
def test_answers_are_judged_on_the_colours_they_name(answer, verdict):
    assert judge(answer)[0] == verdict


def test_image_goes_out_as_a_data_url_and_the_answer_is_judged():
    with FakeVllm([Reply("A gradient from red on the left to blue on the right.")]) as srv:
        report = api.check(CheckRequest(base_url=srv.url, only=["multimodal"]))
        body = srv.chat_requests[-1]
    (result,) = report.results
    assert (result.domain, result.verdict) == ("multimodal", "pass")
    parts = body["messages"][0]["content"]
    url = parts[1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == gradient_png()


def test_a_server_without_image_support_is_not_tested_with_its_reason():
    refusal = "SmolLM2-135M-Instruct is not a multimodal model"
    with FakeVllm([Reply(status=400, error=refusal)]) as srv:
        report = api.check(CheckRequest(base_url=srv.url, only=["multimodal"]))
    (result,) = report.results
    assert result.verdict == "not_tested"
    assert refusal in result.note


def test_multimodal_is_not_in_the_default_run():
    from onechip.checks import DEFAULT_ORDER

    assert "multimodal" not in DEFAULT_ORDER
