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
