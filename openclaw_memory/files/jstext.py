"""Text measured and cut the way OpenClaw (JavaScript) does it.

OpenClaw's budgets count UTF-16 code units (a JavaScript string's ``length``), its
cuts never leave half a surrogate pair, its ``trim`` knows a different set of
white-space characters than Python's ``str.strip``, and its default sort compares
UTF-16 code units. Every place that must give OpenClaw's answer uses these.
"""

from __future__ import annotations

# ECMAScript WhiteSpace and LineTerminator (what String.prototype.trim removes).
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(text: str) -> str:
    return text.strip(JS_WHITESPACE)


def js_trim_end(text: str) -> str:
    return text.rstrip(JS_WHITESPACE)


def utf16_len(text: str) -> int:
    """``text.length`` in JavaScript: astral characters count twice."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _split_astral(ch: str) -> str:
    cp = ord(ch) - 0x10000
    return chr(0xD800 + (cp >> 10)) + chr(0xDC00 + (cp & 0x3FF))


def utf16_sort_key(text: str) -> str:
    """Sorts like JavaScript's default ``Array.prototype.sort`` (UTF-16 code units): each
    astral character becomes its surrogate pair, which sorts below U+E000..U+FFFF."""
    if text.isascii() or max(text) < "\U00010000":
        return text
    return "".join(_split_astral(ch) if ord(ch) > 0xFFFF else ch for ch in text)


def _units(text: str) -> list[str]:
    """One item per UTF-16 code unit (an astral character gives its two surrogates)."""
    return list(utf16_sort_key(text))


def _from_units(units: list[str]) -> str:
    out: list[str] = []
    i = 0
    while i < len(units):
        u = units[i]
        if _high(u) and i + 1 < len(units) and _low(units[i + 1]):
            out.append(chr(0x10000 + ((ord(u) - 0xD800) << 10) + (ord(units[i + 1]) - 0xDC00)))
            i += 2
            continue
        out.append(u)
        i += 1
    return "".join(out)


def _high(unit: str) -> bool:
    return "\ud800" <= unit <= "\udbff"


def _low(unit: str) -> bool:
    return "\udc00" <= unit <= "\udfff"


def slice_utf16_safe(text: str, start: int, end: int | None = None) -> str:
    """OpenClaw's ``sliceUtf16Safe``: a UTF-16 slice that never returns half a surrogate pair."""
    if text.isascii() or utf16_len(text) == len(text):
        length = len(text)
        frm = max(length + start, 0) if start < 0 else min(start, length)
        to = length if end is None else (max(length + end, 0) if end < 0 else min(end, length))
        return text[frm:to] if to > frm else ""
    units = _units(text)
    length = len(units)
    frm = max(length + start, 0) if start < 0 else min(start, length)
    to = length if end is None else (max(length + end, 0) if end < 0 else min(end, length))
    if to <= frm:
        return ""
    if 0 < frm < length and _low(units[frm]) and _high(units[frm - 1]):
        frm += 1
    if 0 < to < length and _high(units[to - 1]) and _low(units[to]):
        to -= 1
    return _from_units(units[frm:to])


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
