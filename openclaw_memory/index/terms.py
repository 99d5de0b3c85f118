"""Query terms and CJK n-grams shared by the indexer, the scorer and the snippets.

A whole-word tokenizer cannot match ``喝茶`` inside ``喝绿茶``, so CJK text is
also indexed as character unigrams and bigrams (the ``cjk`` field): a sub-word
CJK query then shares grams with the passage that contains it.
"""

from __future__ import annotations

import re

_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # han
    "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"  # hangul
    "\U00020000-\U0002fa1f"  # han extensions
)
CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(f"[^\\W_{_CJK}]+")


def cjk_grams(text: str) -> str:
    """Space-separated unigrams and bigrams of every CJK run in ``text`` ('' when there is none)."""
    grams: list[str] = []
    for run in CJK_RUN.findall(text):
        grams.extend(run)
        grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return " ".join(grams)


def has_cjk(text: str) -> bool:
    return CJK_RUN.search(text) is not None


def query_terms(query: str) -> list[str]:
    """Distinct lowercase terms a passage must contain to match ``query`` literally.

    Words outside CJK runs are terms; a CJK run is represented by its bigrams (or
    the character itself when it is a single one), so ``绿茶`` must appear as such.
    """
    lowered = query.lower()
    terms: list[str] = list(_WORD.findall(lowered))
    for run in CJK_RUN.findall(lowered):
        terms.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    return list(dict.fromkeys(terms))


def _pattern(term: str) -> re.Pattern:
    if CJK_RUN.fullmatch(term):
        return re.compile(re.escape(term))
    return re.compile(rf"(?<![^\W_]){re.escape(term)}(?![^\W_])")


def term_patterns(terms: list[str]) -> list[re.Pattern]:
    return [_pattern(t) for t in terms]


def contains_all(text_lower: str, patterns: list[re.Pattern]) -> bool:
    """Whether every term occurs in the (lowercased) text as a whole word, or as a CJK substring."""
    return bool(patterns) and all(p.search(text_lower) for p in patterns)


def hit_count(text_lower: str, patterns: list[re.Pattern]) -> int:
    return sum(len(p.findall(text_lower)) for p in patterns)


# -- keyword terms (our own BM25: one statistic per agent, see index.bm25) --------------------------

# An identifier: word characters joined by - _ . : / (555-0199, v2026.9.6, AUTH_DEVICE_TOKEN_MISMATCH,
# restic-restore.md); it is a term of its own and so is each of its parts.
_IDENT = re.compile(f"[^\\W{_CJK}]+(?:[-_.:/][^\\W{_CJK}]+)*")
_PART = re.compile(f"[^\\W_{_CJK}]+")
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not now of off on once only or other our ours ourselves out over own same she should
    so some such than that the their theirs them themselves then there these they this those through to
    too under until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves i'm it's don't can't what's there's let's get got also""".split()
)
_VOWEL = re.compile(r"[aeiouy]")


def stem(word: str) -> str:
    """A light English stemmer (plurals, -ed, -ing, -ly, final e), the same for notes and queries.

    It only has to map the forms of one word together (``restores``, ``restored``, ``restoring``
    -> ``restor``); numbers, identifiers and non-Latin words are left alone.
    """
    if len(word) <= 3 or not word.isalpha() or not word.isascii():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ingly", "edly", "ing", "ed", "ly"):
        if word.endswith(suffix) and _VOWEL.search(word[: -len(suffix)]) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz" and not _VOWEL.match(word[-1]):
                word = word[:-1]
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    if word.endswith("y") and len(word) > 4:
        word = word[:-1] + "i"
    return word


def keyword_terms(text: str) -> list[str]:
    """The BM25 terms of ``text``, in order, repeats kept (term frequency counts them).

    Words are lowercased, stemmed and stop words dropped; an identifier is a term as a whole and
    by its parts; CJK runs give character unigrams and bigrams (sub-word queries match).
    """
    lowered = text.lower()
    terms: list[str] = []
    for m in _IDENT.finditer(lowered):
        token = m.group(0)
        parts = _PART.findall(token)
        if len(parts) > 1 or "_" in token:
            terms.append(token)
        for part in parts:
            if part not in STOPWORDS:
                terms.append(stem(part))
    for run in CJK_RUN.findall(lowered):
        terms.extend(run)
        terms.extend(run[i : i + 2] for i in range(len(run) - 1))
    return terms
