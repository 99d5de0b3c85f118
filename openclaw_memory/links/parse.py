"""The links a memory note holds, as written: one parser for every form notes use.

- ``[[name]]``, ``[[name|label]]``, ``[[name#heading]]``, ``[[name#heading|label]]`` (``![[...]]``
  too; ``[[name\\|label]]``, as a table cell escapes its pipe): *wiki* links, by name;
- ``[label](projects/heron.md)``, ``[label](heron.md#Heading)``: *markdown* links, a path relative
  to the note's folder (a URL, an image or a target that is not a ``.md`` file is no note link);
- ``memory/2026-11-03.md#L3-L9``: a *citation*, as search prints them;
- ``memory/2026-11-03.md`` in the text ("see memory/2026-11-03.md"): a *mention* (a path with a
  folder: a bare ``heron.md`` is talk about a file, not a link).

Nothing inside code (a fenced or an indented code block, an inline code span) or an HTML comment
counts: :mod:`.visible` says which text is read. Only parsing happens here: which file a link names
is :mod:`.resolve`'s job, so a note is parsed once per content (:mod:`.table`) whatever files come
and go around it, so a change of what is found appends a step emptying that table to
``database.schema.MIGRATIONS`` (steps 8 and 10 did).
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import unquote

from .visible import VisibleText, blank

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


def links_in(text: str) -> list[tuple[int, ParsedLink]]:
    """Every link of ``text`` (a note's content, or one link's text), in order, each with where its
    text starts in its line: a link rewrite replaces exactly that text, not a lookalike in code or
    in a comment, which only the lines around it tell apart."""
    parser = NoteParser()
    for line in text.split("\n"):
        parser.feed(line)
    return parser.found()


class NoteParser:
    """A note read one line at a time (:meth:`feed`), so that a note of any size is parsed in the
    memory of its longest line; a line may come in pieces (``continued``), so a line of gigabytes too."""

    def __init__(self) -> None:
        self.headings: list[str] = []
        self.number = 0
        self._found: list[tuple[int, ParsedLink]] = []  # each link, with where it starts in its line
        self._last_empty = False  # the last line fed was empty: after a final line end, no line at all
        self._binary = False  # a NUL byte: not text (an image or a program named .md), no links
        self._lines = VisibleText()
        # While a comment opened in a paragraph is open: the links after its opening as they read
        # if the paragraph ends before its `-->` (then it was text), and how many were found before.
        self._maybe: list[tuple[int, ParsedLink]] | None = None
        self._before = 0

    def feed(self, line: str, *, continued: bool = False) -> None:
        """The next line of the note (``continued``: the next piece of the line fed last)."""
        if "\x00" in line:
            self._binary = True
        if not continued:
            self.number += 1
            self._last_empty = not line
        else:
            self._last_empty = False
        read = self._lines.feed(line, continued)
        if read.ended:
            self._settle()
        if read.closed:
            self._maybe = None
        if read.heading is not None:
            self.headings.append(read.heading)
        if read.visible is None:
            return
        if read.maybe is not None and self._maybe is None:
            self._maybe, self._before = [], len(self._found)
        self._found.extend(_spans_of_line(read.visible, line, self.number))
        if read.maybe is not None:
            assert self._maybe is not None
            self._maybe.extend(_spans_of_line(read.maybe, line, self.number))

    def _settle(self) -> None:
        """The comment a paragraph held open was text: its opening line's links and those after are
        as they read without it."""
        if self._maybe is not None:
            self._found[self._before:] = self._maybe
            self._maybe = None

    def found(self) -> list[tuple[int, ParsedLink]]:
        """Every link fed, with where it starts in its line (none in a binary file)."""
        self._settle()  # the note ended: so did its last paragraph
        return [] if self._binary else self._found

    def result(self) -> ParsedNote:
        """What was fed, its lines counted as an editor counts them (a final line end starts none)."""
        lines = self.number - (1 if self._last_empty else 0)
        return ParsedNote([link for _, link in self.found()], [] if self._binary else self.headings, lines)


def markdown_destination(text: str) -> tuple[int, int] | None:
    """Where a Markdown link's destination (``path#fragment``, or ``<...>``) is in ``text`` (the
    link as written), or None when ``text`` is no Markdown link."""
    m = _MARKDOWN.fullmatch(text)
    return m.span(3) if m is not None else None


def _spans_of_line(visible: str, raw: str, number: int) -> list[tuple[int, ParsedLink]]:
    if "[" not in visible and ".md" not in visible:
        return []
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
        blank(masked, m.start(), m.end())
    visible = "".join(masked)
    for m in _MARKDOWN.finditer(visible):
        blank(masked, m.start(), m.end())
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
        blank(out, start, end)
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
