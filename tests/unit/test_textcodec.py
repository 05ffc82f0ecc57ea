"""textcodec: the encoding a file's first bytes tell, by its byte-order mark or UTF-16's NUL bytes."""

from __future__ import annotations

import gzip

import pytest

from onechip.textcodec import UNMARKED_UTF16_MIN_UNITS, decoded, text_encoding

LINE = "(APIServer pid=1) INFO 12-06 10:00:00 [api_server.py:1] vLLM API server version 0.34.0\n"


@pytest.mark.parametrize(
    ("written", "codec", "mark"),
    [
        # Python's 'utf-16' and 'utf-32' write the platform's byte order behind its mark; '-le'/'-be' write none
        ("\ufeff" + LINE, "utf-8", 3),
        ("\ufeff" + LINE, "utf-16-be", 2),
        ("\ufeff" + LINE, "utf-32-le", 4),
        ("\ufeff" + LINE, "utf-32-be", 4),
        (LINE, "utf-16-le", 0),
        (LINE, "utf-16-be", 0),
        (LINE, "utf-8", 0),
    ],
)
def test_the_encoding_is_told_by_the_mark_or_the_nul_bytes(written: str, codec: str, mark: int) -> None:
    data = written.encode(codec)
    assert text_encoding(data) == (codec, mark)
    assert decoded(data) == LINE


def test_too_few_units_or_nul_bytes_on_both_sides_are_no_utf16() -> None:
    # chardet's rule wants MIN_CHARS_FOR_DETECTION (20) units; a binary file's NULs fall on both sides of the pairs
    short = "x" * (UNMARKED_UTF16_MIN_UNITS - 1)
    assert text_encoding(short.encode("utf-16-le")) == ("utf-8", 0)
    assert text_encoding(bytes(64)) == ("utf-8", 0)
    assert text_encoding(gzip.compress(LINE.encode() * 50, mtime=0)) == ("utf-8", 0)
