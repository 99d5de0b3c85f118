"""JavaScript's ``a.localeCompare(b)`` (ICU, root/en-US collation) as a sort key.

OpenClaw breaks ties between slugged daily notes of the same modification time with
``localeCompare``. ICU compares in three levels, each over the whole string before the next:
the letters themselves with case and accents ignored (primary), then the accents (secondary),
then the case, lower before upper (tertiary). Its primary order puts white space, then
punctuation, then symbols, then currency before digits, and digits before letters:
``_`` < ``-`` < ``#`` < ``1`` < ``a`` < ``A`` < ``b``; a code-point order (``#`` < ``-`` <
``1`` < ``A`` < ``_`` < ``a``) disagrees in each of these.

The printable ASCII order below is ICU's own (asked of OpenClaw's Node); a Latin letter with
accents is its base letter plus the accents at the secondary level. Other characters are
placed by their Unicode category in ICU's groups, ordered by code point within a group: close
to ICU, not exact (ICU interleaves the punctuation and symbols of all scripts, and orders
scripts by its own table).
"""

from __future__ import annotations

import unicodedata

# ICU's primary order of printable ASCII, letters case-folded (` ` ... `$`, digits, letters).
_ASCII_ORDER = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
_ASCII_PRIMARY = {c: i for i, c in enumerate(_ASCII_ORDER)}
_PUNCT_END = _ASCII_PRIMARY["%"]  # other scripts' punctuation: after ASCII's
_SYMBOL_END = _ASCII_PRIMARY["~"]  # other symbols: after ASCII's, before currency
_CURRENCY = _ASCII_PRIMARY["$"]
_DIGIT_0 = _ASCII_PRIMARY["0"]
_LETTERS_END = len(_ASCII_ORDER)  # letters of other scripts: after z
# Latin letters ICU sorts as letter sequences (ß as ss) or as a base letter (ø as o).
_EXPANSIONS = {"ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "đ": "d", "ł": "l", "þ": "th", "ı": "i"}

# ICU's secondary order of the common accents (DUCET), the others after them by code point.
_ACCENTS = {c: i + 1 for i, c in enumerate("\u0301\u0300\u0306\u0302\u030c\u030a\u0308\u030b\u0303\u0307\u0327\u0328\u0304")}


def _accent(mark: str) -> int:
    return _ACCENTS.get(mark, 0x10000 + ord(mark))


def _char_weights(ch: str) -> list[tuple[tuple[int, int], int, int]]:
    """(primary, secondary, tertiary) weights of one character of NFD text (a ligature or ß
    gives several). Primary weights are (ICU rank, code point): the code point places a
    character of another script after the ASCII members of its group."""
    upper = 1 if ch != ch.lower() else 0
    low = ch.lower()
    if len(low) == 1 and low in _ASCII_PRIMARY:
        return [((_ASCII_PRIMARY[low], 0), 0, upper)]
    if low in _EXPANSIONS:
        return [((_ASCII_PRIMARY[c], 0), 0 if low == "ß" else 1, upper) for c in _EXPANSIONS[low]]
    compat = unicodedata.normalize("NFKD", ch)
    if compat != ch and all(c.lower() in _ASCII_PRIMARY for c in compat):  # ﬁ, ﬀ, full-width A: the letters
        return [((_ASCII_PRIMARY[c.lower()], 0), 0, 2) for c in compat]
    category = unicodedata.category(ch)
    if category.startswith("Z") or ch in "\t\n\r\x0b\x0c":
        return [((_ASCII_PRIMARY[" "], ord(ch)), 0, 0)]
    if category == "Nd":
        return [((_DIGIT_0 + unicodedata.digit(ch), 0), 1, 0)]
    if category.startswith("P"):
        return [((_PUNCT_END, ord(ch)), 0, 0)]
    if category == "Sc":
        return [((_CURRENCY, ord(ch)), 0, 0)]
    if category.startswith(("S", "N")):
        return [((_SYMBOL_END, ord(ch)), 0, 0)]
    return [((_LETTERS_END, ord(ch)), 0, upper)]


def locale_compare_key(text: str) -> tuple[list, list, list, str]:
    """Sort ``text`` as ``localeCompare`` does: primary, secondary, tertiary levels in turn
    (each a list, so a string that is a prefix of another sorts first), then the code points
    (ICU calls canonically equal strings equal; sorting must still be total)."""
    primary: list[tuple[int, int]] = []
    secondary: list[int] = []
    tertiary: list[int] = []
    for ch in unicodedata.normalize("NFD", text):
        if unicodedata.combining(ch) and secondary:  # an accent: on the letter before it
            secondary[-1] = secondary[-1] * 64 + _accent(ch)
            continue
        for p, s, t in _char_weights(ch):
            primary.append(p)
            secondary.append(s)
            tertiary.append(t)
    return primary, secondary, tertiary, text
