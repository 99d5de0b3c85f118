"""The links a memory note holds, as written: one parser for every form notes use.

- ``[[name]]``, ``[[name|label]]``, ``[[name#heading]]``, ``[[name#heading|label]]`` (``![[...]]``
  too; ``[[name\\|label]]``, as a table cell escapes its pipe): *wiki* links, by name;
- ``[label](projects/heron.md)``, ``[label](heron.md#Heading)``: *markdown* links, a path relative
  to the note's folder (a URL, an image or a target that is not a ``.md`` file is no note link);
- ``memory/2026-11-03.md#L3-L9``: a *citation*, as search prints them;
- ``memory/2026-11-03.md`` in the text ("see memory/2026-11-03.md"): a *mention* (a path with a
  folder: a bare ``heron.md`` is talk about a file, not a link).

Nothing inside a fenced code block (```` ``` ```` or ``~~~``, in a block quote too) or an inline code
span counts. Only parsing happens here: which file a link names is :mod:`.resolve`'s job, so a note
is parsed once per content (:mod:`.table`) whatever files come and go around it, so a change of
what is found appends a step emptying that table to ``database.schema.MIGRATIONS`` (step 8 did).
Standard library only.
"""

from __future__ import annotations

import bisect
import re
from typing import NamedTuple
from urllib.parse import unquote

WIKI = "wiki"
MARKDOWN = "markdown"
CITATION = "citation"
MENTION = "mention"
FORMS = (WIKI, MARKDOWN, CITATION, MENTION)


class ParsedLink(NamedTuple):
    """One link as written (a NamedTuple: a large workspace holds many)."""

    line: int  # 1-based
    form: str  # one of FORMS
    target: str  # the name or path it gives ("" for [[#heading]]: the note itself)
    fragment: str | None  # a heading, or a line range "L3-L9"
    text: str  # the link as written


class ParsedNote(NamedTuple):
    links: list[ParsedLink]
    headings: list[str]  # the note's ATX headings' text
    lines: int  # how many lines it has (a citation past them names nothing)


# Every pattern here takes time linear in the line: a note may hold a line of megabytes.
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_TICKS = re.compile(r"`+")
_WIKI = re.compile(r"!?\[\[([^\[\]|#\n]*)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")
_MARKDOWN = re.compile(r"(!?)\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\(\s*(<[^<>\n]*>|[^\s()<>]+)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")
_URL_TAIL = re.compile(r"[^\s<>]*")
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_OTHER_FILE = re.compile(r"\.(?!md$)[A-Za-z][A-Za-z0-9]{1,4}$")  # [[photo.png]]: an attachment, not a note
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# A path is a run of these characters (a backslash is taken in only to refuse the run); its last
# name ends in a word character and .md; a citation's lines follow it.
_RUN = re.compile(r"[\w./\\-]+")
_LAST_NAME = re.compile(r"[\w.-]*\w\.md")
_LINES = re.compile(r"#(L[0-9]+(?:-L[0-9]+)?)(?![\w/\\-]|\.\w)")
_MAX_PATH = 4096


def parse_note(text: str) -> ParsedNote:
    """Every link of ``text`` (a note's content), in order, with its headings and line count."""
    parser = NoteParser()
    for line in text.split("\n"):
        parser.feed(line)
    return parser.result()


class NoteParser:
    """A note read one line at a time (:meth:`feed`), so that a note of any size is parsed in the
    memory of its longest line; a line may come in pieces (``continued``), so a line of gigabytes too."""

    def __init__(self) -> None:
        self.links: list[ParsedLink] = []
        self.headings: list[str] = []
        self.number = 0
        self._last_empty = False  # the last line fed was empty: after a final line end, no line at all
        self._binary = False  # a NUL byte: not text (an image or a program named .md), no links
        self._fence: str | None = None  # the open fence's marker (``` or ~~~; closed by one at least as long)
        self._depth = 0  # how many block quotes (``>``) hold the open fence

    def feed(self, line: str, *, continued: bool = False) -> None:
        """The next line of the note (``continued``: the next piece of the line fed last)."""
        if "\x00" in line:
            self._binary = True
        if not continued:
            self.number += 1
            self._last_empty = not line
            depth, body = _unquoted(line, self._depth if self._fence is not None else None)
            if self._fence is not None and depth < self._depth:
                self._fence = None  # the block quote that held the fence ended, and the fence with it
            lead = body.lstrip(" ")
            if len(body) - len(lead) <= 3 and lead[:3] in ("```", "~~~"):
                if self._fenced(body, depth):
                    return
            elif self._fence is None and lead[:1] == "#":
                heading = _heading(line)
                if heading is not None:
                    self.headings.append(heading)
        else:
            self._last_empty = False
        if self._fence is None and ("[" in line or ".md" in line):
            self.links.extend(_links_of_line(_without_code_spans(line), line, self.number))

    def _fenced(self, line: str, depth: int) -> bool:
        """Whether ``line`` (inside ``depth`` block quotes) opens or closes a fence (and so holds no link)."""
        opened = _FENCE.match(line)
        if opened is None:
            return False
        marker, rest = opened.group(1), opened.group(2)
        if self._fence is None:
            if marker[0] == "`" and "`" in rest:
                return False  # ``` followed by a backtick is a code span, not a fence
            self._fence, self._depth = marker, depth
            return True
        if marker[0] == self._fence[0] and len(marker) >= len(self._fence) and not rest.strip():
            self._fence = None
        return True

    def result(self) -> ParsedNote:
        """What was fed, its lines counted as an editor counts them (a final line end starts none)."""
        lines = self.number - (1 if self._last_empty else 0)
        return ParsedNote([], [], lines) if self._binary else ParsedNote(self.links, self.headings, lines)


def _unquoted(line: str, most: int | None) -> tuple[int, str]:
    """How many block quote markers (``>``, each after at most 3 spaces, an optional space after
    it) open ``line``, at most ``most`` of them, and the line after them: a fence inside a block
    quote is a fence too, and its code no link. Linear in the line (a line of a million ``>``)."""
    depth, at, end = 0, 0, len(line)
    while most is None or depth < most:
        marker = at
        while marker < end and marker - at <= 3 and line[marker] == " ":
            marker += 1
        if marker - at > 3 or marker == end or line[marker] != ">":
            break
        depth, at = depth + 1, marker + 1
        if at < end and line[at] in " \t":
            at += 1
    return depth, line[at:] if at else line


def _heading(line: str) -> str | None:
    """An ATX heading's text (``## The plan ##`` -> ``The plan``), or None when ``line`` is none."""
    text = line.lstrip(" ")
    if len(line) - len(text) > 3:
        return None
    level = len(text) - len(text.lstrip("#"))
    rest = text[level:]
    if not 1 <= level <= 6 or (rest and rest[0] not in " \t"):
        return None
    rest = rest.strip(" \t")
    closing = rest.rstrip("#")
    if closing != rest and (not closing or closing[-1] in " \t"):
        rest = closing.rstrip(" \t")
    return rest


def _without_code_spans(line: str) -> str:
    """``line`` with every inline code span blanked (same length, so positions hold): a run of N
    backticks opens a span that the next run of exactly N closes; an unmatched run is text."""
    if "`" not in line:
        return line
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(line)]
    by_length: dict[int, list[int]] = {}
    for i, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(i)
    out = list(line)
    i = 0
    while i < len(runs):
        start, end = runs[i]
        same = by_length[end - start]
        k = bisect.bisect_right(same, i)
        if k == len(same):
            i += 1
            continue
        close = same[k]
        _blank(out, start, runs[close][1])
        i = close + 1
    return "".join(out)


def _blank(chars: list[str], start: int, end: int) -> None:
    for k in range(start, end):
        chars[k] = " "


def line_links(line: str, number: int) -> list[tuple[int, ParsedLink]]:
    """The links of one line outside a fence, each with where its text starts in ``line`` (a link
    rewrite replaces exactly that text, not a lookalike in a code span)."""
    if "[" not in line and ".md" not in line:
        return []
    return _spans_of_line(_without_code_spans(line), line, number)


def markdown_destination(text: str) -> tuple[int, int] | None:
    """Where a Markdown link's destination (``path#fragment``, or ``<...>``) is in ``text`` (the
    link as written), or None when ``text`` is no Markdown link."""
    m = _MARKDOWN.fullmatch(text)
    return m.span(3) if m is not None else None


def _links_of_line(visible: str, raw: str, number: int) -> list[ParsedLink]:
    return [link for _, link in _spans_of_line(visible, raw, number)]


def _spans_of_line(visible: str, raw: str, number: int) -> list[tuple[int, ParsedLink]]:
    found: list[tuple[int, ParsedLink]] = []
    masked = list(visible)
    for m in _WIKI.finditer(visible):
        target, fragment = m.group(1), m.group(2)
        if m.group(3) is not None:  # [[name\|label]]: a table cell's pipe, escaped, still parts the label
            if fragment is not None:
                fragment = fragment.removesuffix("\\")
            else:
                target = target.removesuffix("\\")
        target = target.strip()
        fragment = fragment.strip() if fragment is not None else None
        if (target or fragment) and not _OTHER_FILE.search(target):
            found.append((m.start(), ParsedLink(number, WIKI, target, fragment or None, raw[m.start():m.end()])))
        _blank(masked, m.start(), m.end())
    visible = "".join(masked)
    for m in _MARKDOWN.finditer(visible):
        _blank(masked, m.start(), m.end())
        if m.group(1):  # an image
            continue
        dest = m.group(3)[1:-1] if m.group(3).startswith("<") else m.group(3)
        path, _, fragment = dest.partition("#")
        path = unquote(path)
        if not path.endswith(".md") or _SCHEME.match(path):
            continue
        found.append((m.start(), ParsedLink(number, MARKDOWN, path, unquote(fragment) or None, raw[m.start():m.end()])))
    visible = _without_urls("".join(masked))
    if ".md" in visible:
        found.extend(_paths(visible, raw, number))
    return sorted(found, key=lambda item: item[0])


def _without_urls(text: str) -> str:
    """``text`` with every URL (``scheme://...``) blanked: a path inside one is the web's."""
    at = text.find("://")
    if at < 0:
        return text
    out = list(text)
    while at >= 0:
        start = at
        while start > 0 and text[start - 1] in _SCHEME_CHARS:
            start -= 1
        end = _URL_TAIL.match(text, at + 3).end()  # type: ignore[union-attr]
        _blank(out, start, end)
        at = text.find("://", end)
    return "".join(out)


def _paths(visible: str, raw: str, number: int) -> list[tuple[int, ParsedLink]]:
    """Citations (``memory/a.md#L3-L9``, with a folder or not) and mentions (``memory/a.md``:
    with a folder; a bare ``heron.md`` is talk about a file, not a pointer to one)."""
    out = []
    for run in _RUN.finditer(visible):
        token = run.group().rstrip(".")  # the full stop of a sentence
        start, end = run.start(), run.start() + len(token)
        if (len(token) > _MAX_PATH or not token.endswith(".md") or "\\" in token or token.startswith("/")
                or "//" in token or not _LAST_NAME.fullmatch(token.rsplit("/", 1)[-1])):
            continue
        lines = _LINES.match(visible, end) if token == run.group() else None
        if lines is not None:
            out.append((start, ParsedLink(number, CITATION, token, lines.group(1), raw[start:lines.end()])))
        elif "/" in token:
            out.append((start, ParsedLink(number, MENTION, token, None, raw[start:end])))
    return out
