"""Query terms and keyword terms shared by the indexer, the scorer and the snippets.

A whole-word tokenizer cannot match ``喝茶`` inside ``喝绿茶``, so CJK text is
also indexed as character unigrams and bigrams (in the ``terms`` field, see
:func:`keyword_terms`): a sub-word CJK query then shares grams with the passage that contains it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable

_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # han
    "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"  # hangul
    "\U00020000-\U0002fa1f"  # han extensions
)
CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(f"[^\\W_{_CJK}]+")

# -- folding: one word in any Unicode form, with or without its accents, is one term ---------------

# The combining marks that SQLite's unicode61 tokenizer (OpenClaw's memory FTS, remove_diacritics=1,
# its default) takes for diacritics: part of a word, and removed from it (``sqlite3Fts5UnicodeIsdiacritic``).
_DIACRITICS = "\u0300\u0301\u0302\u0303\u0304\u0306\u0307\u0308\u0309\u030a\u030b\u030c\u030f\u0311\u031b" \
    "\u0323\u0324\u0325\u0326\u0327\u0328\u032d\u032e\u0330\u0331"


def _fold_table() -> dict[int, str | None]:
    """What ``fold`` maps after lowercasing, as unicode61 does: a Latin letter that is an ASCII
    letter and one diacritic (é, ñ, ç, ő, ạ) is that letter (one with two, ǖ or ấ, or on another
    letter, ǿ on ø, is kept: so does unicode61's default); a diacritic left alone is dropped; the
    variant forms its case folding maps (final sigma, micro sign, long s, Greek symbols) are their
    letter. Greek, Cyrillic and every other script keep their marks (ά, й; が is no か)."""
    table: dict[int, str | None] = {ord(mark): None for mark in _DIACRITICS}
    for code in (*range(0xC0, 0x250), *range(0x1E00, 0x1F00)):
        lower = chr(code).lower()
        parts = unicodedata.normalize("NFD", lower)
        if len(lower) == 1 and len(parts) == 2 and parts[0].isascii() and parts[0].isalpha() and parts[1] in _DIACRITICS:
            table[ord(lower)] = parts[0]
    table.update({ord(k): v for k, v in zip("ςµſẛϐϑϕϖϰϱϵ", "σμssβθφπκρε")})
    return table


_FOLD = _fold_table()
_FOLDED = re.compile("[" + "".join(sorted(map(chr, _FOLD))) + "]")  # (a sub of the few is faster than translate)


def fold(text: str) -> str:
    """``text`` as its terms are cut: composed (NFC: ``cafe`` and a combining acute is ``café``),
    lowercased, and Latin accents removed (``café`` is ``cafe``), the same for notes and queries,
    as OpenClaw's SQLite ``unicode61`` tokenizer folds them (``_fold_table``). Lines and their
    order are kept; an ASCII text is only lowercased."""
    if text.isascii():
        return text.lower()
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    text = text.lower()
    if not unicodedata.is_normalized("NFC", text):
        text = _kept_apart(text)
    return _FOLDED.sub(lambda m: _FOLD[ord(m.group())] or "", text)


def _kept_apart(text: str) -> str:
    """A mark its capital kept apart (no letter holds Ρ and a psili) that the lowercase letter would
    compose with (ῤ) is left out, as unicode61 leaves out a mark of its own: else folding the fold
    composed it, and a term of the note was not the query's."""
    out: list[str] = []
    for ch in text:
        if out and unicodedata.combining(ch) and len(unicodedata.normalize("NFC", out[-1] + ch)) == 1:
            continue
        out.append(ch)
    return "".join(out)


def _cluster_start(ch: str) -> bool:
    """Whether ``ch`` starts a new character (no combining mark, no Hangul vowel or final jamo)."""
    return not (unicodedata.combining(ch) or unicodedata.category(ch)[0] == "M"
                or "\u1160" <= ch <= "\u11ff" or "\ud7b0" <= ch <= "\ud7ff")


def fold_spans(text: str, spans: Callable[[str], list[tuple[int, int]]]) -> list[tuple[int, int]]:
    """``spans(fold(text))`` (ranges in the folded text) as ranges of ``text`` itself: a folded
    character stands for the character it came from and the marks that follow it (so ``café``
    written with a combining accent is highlighted whole for ``cafe``)."""
    folded = fold(text)
    found = spans(folded)
    if not found or (len(folded) == len(text) and unicodedata.is_normalized("NFC", text)):
        return found  # one character for one: the same places
    starts: list[int] = []
    ends: list[int] = []
    begin = 0
    for i in range(1, len(text) + 1):
        if i == len(text) or _cluster_start(text[i]):
            n = len(fold(text[begin:i]))
            starts += [begin] * n
            ends += [i] * n
            begin = i
    if len(starts) != len(folded):  # a composition across characters: no exact places
        return [(min(s, len(text)), min(e, len(text))) for s, e in found]
    return [(starts[s], ends[e - 1]) for s, e in found if s < e]


def query_terms(query: str) -> list[str]:
    """Distinct folded terms (``fold``) a passage must contain to match ``query`` literally.

    Words outside CJK runs are terms; a CJK run is represented by its bigrams (or
    the character itself when it is a single one), so ``绿茶`` must appear as such.
    """
    lowered = fold(query)
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


def hit_count(text_lower: str, patterns: list[re.Pattern]) -> int:
    return sum(len(p.findall(text_lower)) for p in patterns)


# -- keyword terms (our own BM25: one statistic per agent, see index.bm25) --------------------------

# An identifier: word characters joined by - _ . : / (555-0199, v2026.9.6, AUTH_DEVICE_TOKEN_MISMATCH,
# restic-restore.md); it is a term of its own and so is each of its parts.
_IDENT = re.compile(f"[^\\W{_CJK}]+(?:[-_.:/][^\\W{_CJK}]+)*")
_PART = re.compile(f"[^\\W_{_CJK}]+")
_WORD_CHAR = re.compile(f"[^\\W_{_CJK}]")
# Words (letters only) joined by single hyphens: ``check-up``, ``follow-up``, ``self-hosted``.
_COMPOUND = re.compile(f"(?<![\\w-])[^\\W\\d_{_CJK}]+(?:-[^\\W\\d_{_CJK}]+)+(?![\\w-])")
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not now of off on once only or other our ours ourselves out over own same she should
    so some such than that the their theirs them themselves then there these they this those through to
    too under until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves i'm it's don't can't what's there's let's get got also""".split()
)
# The version of the rules that cut a chunk's ``terms`` (stems, compounds): a new one gives every
# point a new id (``sync.point_id``), so an index is written again, its vectors reused, when
# ``chunking.CHUNKER_VERSION`` moves with it. 1: -ful and -hood, hyphenated words joined. 2: the e
# of a four-letter word kept through -ed and -ing (bake, baked, baking; not after -ly: Sally is no
# sale). 3: words folded (``fold``): composed, and Latin accents removed (café, cafe and café
# written with a combining accent are one term, as in OpenClaw's unicode61 tokenizer).
TERMS_VERSION = 3
_VOWEL = re.compile(r"[aeiouy]")
# A three-letter stem left by -ed or -ing, consonant-vowel-consonant, had a final e (bake, note,
# move): the e is put back so that it meets its word's own stem. Not after w, x or y (rowed, fixed),
# nor after -ly, whose three letters are no such stem (sally, holly: no sale, no hole).
_SHORT = re.compile(r"[^aeiouy][aeiou][^aeiouwxy]")
# Derivational endings that name the same thing as their word: a query about stress finds a
# stressful week, one about a child a childhood. Not -ness: business is not busy, witness not wit.
_DERIVED = ("ful", "hood")


def stem(word: str) -> str:
    """A light English stemmer (plurals, -ed, -ing, -ly, -ful, -hood, final e), the same for
    notes and queries.

    It only has to map the forms of one word together (``restores``, ``restored``, ``restoring``
    -> ``restor``; ``stressful`` -> ``stress``; ``childhood`` -> ``child``); numbers, identifiers
    and non-Latin words are left alone. English Snowball (Porter2) was measured in its place and
    not kept (docs/search.md: it also joins words that differ, ``production`` and ``product``).
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
            elif len(word) == 3 and suffix in ("ed", "ing") and _SHORT.fullmatch(word):
                word += "e"  # baked, baking -> bake: a four-letter word keeps its e (below)
            break
    stripped = True
    while stripped:  # carefully -> careful -> care
        stripped = False
        for suffix in _DERIVED:
            if word.endswith(suffix) and len(word) - len(suffix) >= 3 and _VOWEL.search(word[: -len(suffix)]):
                word, stripped = word[: -len(suffix)], True
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    if word.endswith("y") and len(word) > 4:
        word = word[:-1] + "i"
    return word


# -- typos: a query word no note holds, read as the nearest word one does --------------------------

# Shorter words have too many real neighbours one edit away to guess from: with 5 letters, off-topic
# questions matched notes (``nobel prize`` read as ``novel price``, ``repot`` as ``remot``).
TYPO_MIN_LENGTH = 7
# The edits are made on the stem, so the stem needs letters enough too: ``evening`` is ``even``, and
# was read as ``seven`` (``which evening does the book club meet``); ``boiling`` (``boil``) as
# ``soil``. Six keeps the misspelt forms of ``-ed`` and ``-ing`` (``recieved``: ``reciev``).
TYPO_MIN_STEM = 6
# Each letter of a word has 54 neighbours one edit away, each a lookup in the index: a word longer
# than any a person misspells (a pasted hash or slug) is not a typo, and a query's typos are looked
# for in its first few absent words only (a 10,000-letter word took 2 min and gigabytes; a
# 100,000-letter one was killed for memory, the service with it).
TYPO_MAX_LENGTH = 24
TYPO_MAX_WORDS = 8
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _one_edit(word: str) -> set[str]:
    """The words one deletion, swap of neighbours, replacement or insertion away (Damerau)."""
    cuts = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = {a + b[1:] for a, b in cuts if b}
    out |= {a + b[1] + b[0] + b[2:] for a, b in cuts if len(b) > 1}
    out |= {a + c + b[1:] for a, b in cuts if b for c in _LETTERS}
    out |= {a + c + b for a, b in cuts for c in _LETTERS}
    out.discard(word)
    return out


def spelling_fixes(query: str, df: Callable[[str], int]) -> dict[str, str]:
    """For each word of ``query`` whose term no indexed chunk holds (``df(term) == 0``): the term
    one edit away that most chunks hold (``pride fesetival``: ``fesetiv`` -> ``festiv``), as
    {term: fixed term}. The edits are made on the stem (a few hundred lookups, no stemming: the
    stemmer is too slow for that many words per query). Only plain ASCII words of
    ``TYPO_MIN_LENGTH`` to ``TYPO_MAX_LENGTH`` letters whose stem has ``TYPO_MIN_STEM`` (``evening``,
    stemmed ``even``, is no ``seven``), and only when the term itself is absent: a
    rare word a note does hold is never replaced; the first ``TYPO_MAX_WORDS`` absent words only."""
    fixes: dict[str, str] = {}
    absent = 0
    for word in _PART.findall(fold(query)):
        if not TYPO_MIN_LENGTH <= len(word) <= TYPO_MAX_LENGTH or not word.isalpha() or not word.isascii() \
                or word in STOPWORDS:
            continue
        term = stem(word)
        if len(term) < TYPO_MIN_STEM or term in fixes or df(term) > 0:
            continue
        absent += 1
        if absent > TYPO_MAX_WORDS:
            break
        held = [(n, t) for t in _one_edit(term) if t not in STOPWORDS and (n := df(t)) > 0]
        if held:
            fixes[term] = max(held)[1]
    return fixes


# A number written in words or in digits: ``sixtieth`` is ``60th``, ``three`` is ``3`` (words up to
# twenty, the tens, and their ordinals; ``first`` ... ``twentieth`` as ``1st`` ... ``20th``).
_CARDINALS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
              "sixteen seventeen eighteen nineteen twenty").split()
_ORDINALS = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
             "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth").split()
_TENS = {30: ("thirty", "thirtieth"), 40: ("forty", "fortieth"), 50: ("fifty", "fiftieth"), 60: ("sixty", "sixtieth"),
         70: ("seventy", "seventieth"), 80: ("eighty", "eightieth"), 90: ("ninety", "ninetieth")}


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _number_forms() -> dict[str, str]:
    words = [(w, str(n)) for n, w in enumerate(_CARDINALS)] + [(w, _ordinal(n)) for n, w in enumerate(_ORDINALS, 1)]
    words += [(c, str(n)) for n, (c, _o) in _TENS.items()] + [(o, _ordinal(n)) for n, (_c, o) in _TENS.items()]
    forms = {stem(w): d for w, d in words}
    # Words that are more often not the number in a query: "the one about...", "a second opinion",
    # "when did we first meet". Taken for 1, 2nd and 1st, they found notes holding those digits in a
    # workspace that never writes the word. Their digits still find the words ("1 kid": "one kid").
    return {t: d for t, d in forms.items() if t not in _NOT_NUMBERS} | {d: t for t, d in forms.items()}


_NOT_NUMBERS = {stem(w) for w in ("one", "first", "second")}


NUMBER_FORMS = _number_forms()


def number_fixes(terms: Iterable[str], df: Callable[[str], int]) -> dict[str, str]:
    """For each term of a query that is a number in words or in digits (``NUMBER_FORMS``) and that
    no indexed chunk holds: its other form, where a chunk holds that one ({term: other form}).
    ``his sixtieth`` finds ``Dad's 60th``, ``3 kids`` finds ``three kids``. A form some chunk holds
    is never replaced (``second`` in ``a second gateway`` stays, in any corpus that writes it)."""
    fixes: dict[str, str] = {}
    for term in terms:
        other = NUMBER_FORMS.get(term)
        if other is not None and term not in fixes and df(term) == 0 and df(other) > 0:
            fixes[term] = other
    return fixes


# "Which date", "what time": the noun names what kind of answer is wanted (a date, a time of day),
# not a word the answer holds ("Housewarming moves to the 22nd" answers "On which date is the
# housewarming?"). As a keyword it is rare in a chat log, so it weighed most of such a question
# and the notes on its subject shared too little of it to be taken as one subject.
_ANSWER_KIND = re.compile(r"(?<![^\W_])(?:which|what)\s+(date|day|time|year|month|week|hour|weekday)s?(?![^\W_])")


def answer_kind_terms(query: str) -> set[str]:
    """The terms of ``query`` that only say what kind of answer it wants: the noun of a ``which
    date`` / ``what time`` (day, year, month, week, hour, weekday), left out of its keywords."""
    return {stem(m.group(1)) for m in _ANSWER_KIND.finditer(fold(query))}


# -- dates: matched as dates, not as words -------------------------------------------------------

DATE_PREFIX = "date:"
_MONTHS = {name: n for n, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
    ("december", "dec")), 1) for name in names}
# A month's name alone is a date (the month) only when it is written out and not also a common word.
_MONTH_ALONE = frozenset(("january", "february", "april", "june", "july", "august", "september", "october",
                          "november", "december"))
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATES = re.compile(
    r"(?<![\w-])(?P<iy>\d{4})-(?P<im>\d{1,2})(?:-(?P<id>\d{1,2}))?(?![\w-]*\d)"  # 2026-11-03, 2026-11
    rf"|(?<!\w)(?P<dd>\d{{1,2}})(?:st|nd|rd|th)?\.?[ \t]+(?:of[ \t]+)?(?P<dm>{_MONTH})\b\.?(?:,?[ \t]+(?P<dy>\d{{4}})\b)?"  # 3 November 2026
    rf"|(?<!\w)(?P<md>{_MONTH})\b\.?[ \t]+(?P<mn>\d{{1,2}})(?:st|nd|rd|th)?\b(?!:)(?:,?[ \t]+(?P<my>\d{{4}})\b)?"  # November 3, 2026
    rf"|(?<!\w)(?P<mo>{_MONTH})\b(?:[ \t]+(?P<oy>\d{{4}})\b)?"  # November (2026)
    r"|(?:(?P<cy>\d{4})年)?(?P<cm>\d{1,2})月(?:(?P<cd>\d{1,2})[日号])?"  # 2026年11月3日
)


def date_hits(lowered: str) -> list[tuple[int, list[str]]]:
    """The dates written in ``lowered`` (lowercased text) as (position, date terms): ISO
    (``2026-11-03``, ``2026-11``), written out (``3 November 2026``, ``Nov 3``, ``November``) and
    Chinese (``11月3日``). A date's terms: its month (``date:m11``), its day in the month
    (``date:11-03``), its year and month (``date:2026-11``) and its full date (``date:2026-11-03``),
    as far as it says them; the same for queries and notes' lines, so ``in November`` matches
    ``2026-11-03`` and ``on 3 Nov`` matches ``2026-11-03``. A bare abbreviation or ``may``/``march``
    is a month only beside a day or a year."""
    if not any(ch.isdigit() for ch in lowered) and not any(m in lowered for m in _MONTH_ALONE):
        return []
    out: list[tuple[int, list[str]]] = []
    for m in _DATES.finditer(lowered):
        g = m.groupdict()
        year: int | None
        day: int | None
        if g["iy"]:
            year, month, day = int(g["iy"]), int(g["im"]), int(g["id"]) if g["id"] else None
        elif g["dm"]:
            year, month, day = int(g["dy"]) if g["dy"] else None, _MONTHS[g["dm"]], int(g["dd"])
        elif g["md"]:
            year, month, day = int(g["my"]) if g["my"] else None, _MONTHS[g["md"]], int(g["mn"])
        elif g["mo"]:
            if g["mo"] not in _MONTH_ALONE and not g["oy"]:
                continue
            year, month, day = int(g["oy"]) if g["oy"] else None, _MONTHS[g["mo"]], None
        else:
            year, month, day = int(g["cy"]) if g["cy"] else None, int(g["cm"]), int(g["cd"]) if g["cd"] else None
        if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31) or (year is not None and not 1900 <= year <= 2199):
            continue
        terms = [f"{DATE_PREFIX}m{month:02d}"]
        if day is not None:
            terms.append(f"{DATE_PREFIX}{month:02d}-{day:02d}")
        if year is not None:
            terms.append(f"{DATE_PREFIX}{year}-{month:02d}")
            if day is not None:
                terms.append(f"{DATE_PREFIX}{year}-{month:02d}-{day:02d}")
        out.append((m.start(), terms))
    return out


class TermFinder:
    """Which of a query's keyword terms some lines of text hold, as ``keyword_terms`` would cut
    them, without cutting every word: a word can only stem to a term if it starts with the term
    (``stem`` only shortens a word's ending, but for a final y, i or e), so only the words found
    starting so are cut, with the rest of their identifier (so ``self-hosted`` is also found
    inside ``x/self-hosted``); a CJK gram is simply looked up."""

    def __init__(self, terms):
        self.terms = frozenset(terms)
        self.dates = frozenset(t for t in self.terms if t.startswith(DATE_PREFIX))
        self.grams = [t for t in self.terms if CJK_RUN.fullmatch(t)]
        # A stem is its word's beginning, except where y became i ("happy" -> "happi"), "ies" y
        # ("tries" -> "try") or a lost e came back ("baking" -> "bake"): there the word starts with
        # the stem less its last letter. A term of one or two letters is a whole word (no shorter
        # stem comes from a longer word).
        words = [t for t in self.terms if not CJK_RUN.fullmatch(t) and t not in self.dates]
        self.roots = sorted({(t[:-1] if t[-1] in "iye" else t, False) if len(t) > 2 else (t, True) for t in words})
        # A hyphenated compound's joined term (``checkup`` in ``check-up``) is no substring of it:
        # identifiers with a hyphen are read whole when the query has a term that could be one.
        self.compounds = any(len(t) >= 5 and t.isalpha() for t in words)
        self.tokens: dict[str, frozenset] = {}  # identifier -> the terms it holds, cut once per query

    def by_line(self, text: str) -> dict[int, frozenset]:
        """The terms each line of ``text`` holds (by line index; lines holding none left out),
        found in one pass (an identifier never spans lines); the text folded as terms are (``fold``)."""
        text = fold(text)
        hits: list[tuple[int, frozenset]] = []
        for gram in self.grams:
            i = text.find(gram)
            while i >= 0:
                hits.append((i, frozenset((gram,))))
                i = text.find(gram, i + 1)
        if self.dates:
            for i, derived in date_hits(text):
                got = self.dates.intersection(derived)
                if got:
                    hits.append((i, got))
        seen: set[int] = set()
        for root, whole in self.roots:
            i = text.find(root)
            while i >= 0:
                if i not in seen and (i == 0 or not _WORD_CHAR.match(text, i - 1)) and not (
                        whole and _WORD_CHAR.match(text, i + len(root))):
                    seen.add(i)
                    m = _IDENT.match(text, i)
                    if m:
                        token = m.group(0)
                        got = self.tokens.get(token)
                        if got is None:
                            got = self.tokens[token] = frozenset(keyword_terms(token)) & self.terms
                        if got:
                            hits.append((i, got))
                i = text.find(root, i + 1)
        if self.compounds:
            for m in _hyphenated(text):
                if m.start() in seen:
                    continue
                got = self.tokens.get(m.group(0))
                if got is None:
                    got = self.tokens[m.group(0)] = frozenset(keyword_terms(m.group(0))) & self.terms
                if got:
                    hits.append((m.start(), got))
        if not hits:
            return {}
        found: dict[int, frozenset] = {}
        for i, got in hits:
            line = text.count("\n", 0, i)
            found[line] = found[line] | got if line in found else got
        return found


def _hyphenated(text: str) -> list[re.Match]:
    """The identifiers (``_IDENT``) of ``text`` that hold a hyphen between word characters
    (``check-up``, ``--only-config``), found from their hyphens: a scan of every word for them
    cost the passages of a query several times what finding its terms does."""
    found: list[re.Match] = []
    end = 0
    i = text.find("-")
    while i >= 0:
        if i >= end and i > 0 and _WORD_CHAR.match(text, i - 1) and _WORD_CHAR.match(text, i + 1):
            start = i - 1
            while start > 0 and (_WORD_CHAR.match(text, start - 1) or text[start - 1] in "-_.:/"):
                start -= 1
            m = _IDENT.search(text, start)
            while m is not None and m.end() <= i:  # two separators in a row end an identifier (``a/.b``)
                m = _IDENT.search(text, m.end())
            if m is not None and m.start() < i:
                found.append(m)
                end = m.end()
        i = text.find("-", i + 1)
    return found


def keyword_terms(text: str) -> list[str]:
    """The BM25 terms of ``text``, in order, repeats kept (term frequency counts them).

    Words are folded (``fold``: lowercased, Latin accents removed, any Unicode form the same),
    stemmed and stop words dropped; an identifier is a term as a whole and by its parts, and words
    joined by hyphens are also one word written together (``check-up`` holds ``checkup``, as a
    note that writes it so does); CJK runs give character unigrams and bigrams (sub-word queries
    match).
    """
    lowered = fold(text)
    terms: list[str] = []
    for m in _IDENT.finditer(lowered):
        token = m.group(0)
        parts = _PART.findall(token)
        if _COMPOUND.fullmatch(token):
            terms.append(stem("".join(parts)))
        elif len(parts) > 1 or "_" in token:
            terms.append(token)
        for part in parts:
            if part not in STOPWORDS:
                terms.append(stem(part))
    for run in CJK_RUN.findall(lowered):
        terms.extend(run)
        terms.extend(run[i : i + 2] for i in range(len(run) - 1))
    return terms


def date_terms(text: str) -> dict[str, float]:
    """The date terms of the dates in ``text`` (a query), each date's terms sharing one unit of
    weight (``2026-12-01`` gives four terms of 0.25: a line saying ``1 December`` holds half of it,
    one saying ``December`` a quarter). They are for the passages (``TermFinder`` finds them in
    notes' lines, written any way), not for BM25: the keyword index holds words, not dates."""
    out: dict[str, float] = {}
    for _i, derived in date_hits(text.lower()):
        for t in derived:
            out[t] = out.get(t, 0.0) + 1.0 / len(derived)
    return out
