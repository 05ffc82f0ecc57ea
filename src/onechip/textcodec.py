"""The encoding of a text file a user gives (a plan JSON, a log), told from its first bytes: a byte-order mark
(UTF-8's, UTF-16's or UTF-32's, as Windows editors and PowerShell write them) or, without one, the NUL bytes of
UTF-16; the one rule every reader of such a file decodes it by.

    text_encoding(head) -> (codec, mark_bytes)   the codec of the text after its mark, and the mark's length
    decoded(data) -> str                          a whole file's text, its mark dropped
"""

from __future__ import annotations

import codecs

# The marks, UTF-32's first: UTF-32 LE's (FF FE 00 00) opens with UTF-16 LE's (FF FE). Windows PowerShell 5.1's '>'
# and Out-File write UTF-16 LE behind its mark ('Unicode'), Out-File -Encoding utf32 UTF-32 LE behind its, and
# -Encoding utf8 UTF-8 behind its (Microsoft's about_Character_Encoding)
_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
    (codecs.BOM_UTF8, "utf-8"),
)
# UTF-16 without a mark (a .NET StreamWriter given Encoding.Unicode's bytes without its preamble, a tool that strips
# it): text of Latin characters puts a NUL in every character's high byte, the second byte of each pair in UTF-16 LE,
# the first in BE. The rule and its figures are chardet's (chardet/utf1632prober.py, chardet 5.0 - 5.2:
# MIN_CHARS_FOR_DETECTION 20 two-byte units, and more than EXPECTED_RATIO 0.94 of them with a NUL on the one side
# and none on the other)
UNMARKED_UTF16_MIN_UNITS = 20
UNMARKED_UTF16_RATIO = 0.94


def _unmarked_utf16(head: bytes) -> str | None:
    """'utf-16-le' or 'utf-16-be' where `head` (a file's first bytes, no mark) looks like UTF-16 by its NUL bytes
    (UNMARKED_UTF16_RATIO of at least UNMARKED_UTF16_MIN_UNITS units); None otherwise."""
    units = len(head) // 2
    if units < UNMARKED_UTF16_MIN_UNITS:
        return None
    even, odd = head[0 : 2 * units : 2], head[1 : 2 * units : 2]
    for codec, high, low in (("utf-16-le", odd, even), ("utf-16-be", even, odd)):
        nul_high = high.count(0) / units
        nonzero_low = (units - low.count(0)) / units
        if nul_high > UNMARKED_UTF16_RATIO and nonzero_low > UNMARKED_UTF16_RATIO:
            return codec
    return None


def text_encoding(head: bytes) -> tuple[str, int]:
    """The codec of a text file whose first bytes are `head` (a few KiB tell unmarked UTF-16 apart), and the number
    of bytes of the byte-order mark it opens with, to skip (_MARKS): UTF-32 or UTF-16 of either byte order, or UTF-8,
    behind its mark; UTF-16 without one by its NUL bytes (_unmarked_utf16); else ('utf-8', 0)."""
    for mark, codec in _MARKS:
        if head.startswith(mark):
            return codec, len(mark)
    return _unmarked_utf16(head) or "utf-8", 0


def decoded(data: bytes) -> str:
    """A whole file's bytes `data` as text, in its encoding (text_encoding), the byte-order mark dropped. Raises
    UnicodeDecodeError (a ValueError) where its bytes are not of that encoding."""
    codec, mark = text_encoding(data)
    return data[mark:].decode(codec)
