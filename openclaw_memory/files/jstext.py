"""Text measured and cut the way OpenClaw (JavaScript) does it.

OpenClaw's budgets count UTF-16 code units (a JavaScript string's ``length``), its
cuts never leave half a surrogate pair, its ``trim`` knows a different set of
white-space characters than Python's ``str.strip``, and its default sort compares
UTF-16 code units. Every place that must give OpenClaw's answer uses these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

_T = TypeVar("_T")

# ECMAScript WhiteSpace and LineTerminator (what String.prototype.trim removes).
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(text: str) -> str:
    return text.strip(JS_WHITESPACE)


def js_trim_end(text: str) -> str:
    return text.rstrip(JS_WHITESPACE)


def js_collapse(text: str) -> str:
    r"""``text.replace(/\s+/g, " ").trim()``: each run of JavaScript white space one space, none at
    either end (Python's own ``split`` knows another set: U+FEFF is JavaScript's, U+001C Python's)."""
    import re

    return re.sub(f"[{re.escape(JS_WHITESPACE)}]+", " ", text).strip(" ")


def _utf16(text: str) -> bytes:
    # surrogatepass: a lone surrogate (a file name's undecodable byte) is one code unit, as in JavaScript.
    return text.encode("utf-16-le", "surrogatepass")


def utf16_len(text: str) -> int:
    """``text.length`` in JavaScript: astral characters count twice."""
    if text.isascii():
        return len(text)
    return len(_utf16(text)) // 2


def _split_astral(ch: str) -> str:
    cp = ord(ch) - 0x10000
    return chr(0xD800 + (cp >> 10)) + chr(0xDC00 + (cp & 0x3FF))


def utf16_sort_key(text: str) -> str:
    """Sorts like JavaScript's default ``Array.prototype.sort`` (UTF-16 code units): each
    astral character becomes its surrogate pair, which sorts below U+E000..U+FFFF."""
    if text.isascii() or max(text) < "\U00010000":
        return text
    return "".join(_split_astral(ch) if ord(ch) > 0xFFFF else ch for ch in text)


def sort_utf16(items: list[_T], key: Callable[[_T], str]) -> None:
    """Sorts ``items`` in place as JavaScript sorts their ``key`` strings (UTF-16 code units).

    Why the keys can usually be compared as they are: a character below U+10000 (the BMP, lone
    surrogates included) is one UTF-16 code unit whose value is its code point. So a string of
    BMP characters is, unit for unit, the sequence of its code points, and comparing two such
    strings unit by unit (JavaScript) or code point by code point (Python) meets the same first
    difference, or the same shorter prefix: the same order. Only an astral character (two units,
    0xD800-0xDBFF first, below U+E000-U+FFFF) can order otherwise, so ``utf16_sort_key``, a Python
    call per item, is paid only where some key holds one; the keys are checked in one C pass
    (their concatenation is ASCII, or has as many code units as characters).
    """
    joined = "".join(map(key, items))
    if joined.isascii() or utf16_len(joined) == len(joined):
        items.sort(key=key)
    else:
        items.sort(key=lambda item: utf16_sort_key(key(item)))


def _unit(data: bytes, i: int) -> int:
    return data[2 * i] | data[2 * i + 1] << 8


def slice_utf16_safe(text: str, start: int, end: int | None = None) -> str:
    """OpenClaw's ``sliceUtf16Safe``: a UTF-16 slice that never returns half a surrogate pair."""
    if text.isascii() or max(text) < "\U00010000":  # one code unit per character
        length = len(text)
        frm = max(length + start, 0) if start < 0 else min(start, length)
        to = length if end is None else (max(length + end, 0) if end < 0 else min(end, length))
        return text[frm:to] if to > frm else ""
    data = _utf16(text)
    length = len(data) // 2
    frm = max(length + start, 0) if start < 0 else min(start, length)
    to = length if end is None else (max(length + end, 0) if end < 0 else min(end, length))
    if to <= frm:
        return ""
    if 0 < frm < length and 0xDC00 <= _unit(data, frm) <= 0xDFFF and 0xD800 <= _unit(data, frm - 1) <= 0xDBFF:
        frm += 1
    if 0 < to < length and 0xD800 <= _unit(data, to - 1) <= 0xDBFF and 0xDC00 <= _unit(data, to) <= 0xDFFF:
        to -= 1
    return data[2 * frm : 2 * to].decode("utf-16-le", "surrogatepass")


def truncate_utf16_safe(text: str, limit: int) -> str:
    """OpenClaw's ``truncateUtf16Safe``: at most ``limit`` code units, no split pair."""
    limit = max(0, int(limit))
    if utf16_len(text) <= limit:
        return text
    return slice_utf16_safe(text, 0, limit)


def decode_lossy(data: bytes) -> tuple[str, bool]:
    """UTF-8 text, invalid bytes as U+FFFD (as a reader shows them), and whether there were any."""
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), True


def not_utf8(name: str) -> str:
    return f"{name} is not valid UTF-8; invalid bytes shown as U+FFFD"


def text_faults_of(fd: int) -> tuple[int | None, int | None]:
    """Byte offsets of an open file's first invalid UTF-8 sequence and of its first NUL byte (None:
    none), streamed a block at a time by ``pread`` from its start (its offset is left as it is, the
    descriptor open): what doctor's not-utf8 names, and what a replace would write over unseen."""
    import codecs
    import os

    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    bad: int | None = None
    nul: int | None = None
    while True:
        block = os.pread(fd, 1 << 20, offset)
        final = not block
        if nul is None and (at := block.find(b"\x00")) >= 0:
            nul = offset + at
        if bad is None:
            pending = len(decoder.getstate()[0])  # bytes of a split sequence carried from the last block
            try:
                decoder.decode(block, final)
            except UnicodeDecodeError as exc:
                bad = offset - pending + exc.start
        if final or (bad is not None and nul is not None):
            return bad, nul
        offset += len(block)
