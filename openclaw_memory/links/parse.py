"""The links a memory note holds, as written: one parser for every form notes use.

- ``[[name]]``, ``[[name|label]]``, ``[[name#heading]]``, ``[[name#heading|label]]`` (``![[...]]``
  too; ``[[name\\|label]]``, as a table cell escapes its pipe): *wiki* links, by name;
- ``[label](projects/heron.md)``, ``[label](heron.md#Heading)``, and a reference definition
  ``[h]: ../projects/heron.md``: *markdown* links, a path relative to the note's folder, its
  destination read as CommonMark reads it (``plan(v1).md``, ``my\\_notes.md``, ``a&amp;b.md``) (a
  URL, an image or a target that is not a ``.md`` file is no note link);
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
from html.entities import html5
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
# A link destination as CommonMark reads one (marked, which renders notes, too): ``<...>`` (no line
# end, ``<`` or ``>`` but escaped), or a run without spaces or controls whose parentheses are
# escaped or balanced (three levels deep, as CommonMark asks at least); a backslash escapes ASCII
# punctuation. Possessive: each character is read one way, so a match is linear in what it reads.
_PUNCT = r"!-/:-@\[-`{-~"
_ATOM = rf"(?:\\[{_PUNCT}]|\\|[^\x00-\x20\x7f()\\])"
_NEST = rf"\((?:{_ATOM})*+\)"
for _ in range(2):
    _NEST = rf"\((?:{_ATOM}|{_NEST})*+\)"
_DESTINATION = rf"<(?:\\[{_PUNCT}]|\\|[^<>\n\\])*+>|(?!<)(?:{_ATOM}|{_NEST})++"
_TITLE = r"\"(?:\\.|[^\"\\\n])*+\"|'(?:\\.|[^'\\\n])*+'|\((?:\\.|[^()\\\n])*+\)"
# A link's text as CommonMark reads it: a backslash escapes ASCII punctuation (``\\]`` is no bracket),
# brackets nest balanced (one level here), and a link holds no link: ``[see [inner](t.md) more](x.md)``
# links ``inner`` alone, its outer brackets text (an image's description may hold one: ``[![badge](b.svg)](t.md)``
# is a link, ``![see [inner](t.md)](x.png)`` an image). Each character is read one way (``!`` only
# before a ``[`` opens an image), so a failed match is given up in time linear in what it read.
_UNIT = rf"\\[{_PUNCT}]|\\(?![{_PUNCT}])|[^\[\]\\!\n]|!(?!\[)"
_TAIL = rf"\([ \t]*(?:(?:{_DESTINATION})(?:[ \t]+(?:{_TITLE}))?)?[ \t]*\)"  # an inline link's (destination "title")
_TEXT = rf"(?:{_UNIT}|!\[(?:{_UNIT})*\]|\[(?:{_UNIT})*\](?(1)|(?!{_TAIL})))*"
_MARKDOWN = re.compile(rf"(!)?\[({_TEXT})\]\([ \t]*(?:({_DESTINATION})(?:[ \t]+(?:{_TITLE}))?)?[ \t]*\)")
# A link reference definition, ``[label]: destination "title"``, alone on a line that starts a
# paragraph (after block quote markers and list item markers): its destination resolves as an
# inline link's, from the note's folder. A footnote (``[^1]: ...``) is text.
_DEFINITION_TEXT = rf"\[(?!\^)((?:\\.|[^\[\]\\\n]){{1,999}})\]:[ \t]*({_DESTINATION})(?:[ \t]+(?:{_TITLE}))?"
_DEFINITION = re.compile(rf"(?:[ ]{{0,3}}>[ ]?)*+(?:[ ]{{0,3}}(?:[-+*]|[0-9]{{1,9}}[.)])[ \t]+)*+[ ]{{0,3}}({_DEFINITION_TEXT})[ \t]*\r?")
_DEFINITION_ALONE = re.compile(_DEFINITION_TEXT)
# What a destination's text stands for: a backslash escape, an entity (``&amp;``, ``&#35;``).
_ESCAPE = re.compile(rf"\\[{_PUNCT}]")  # one backslash escape
_ESCAPED = re.compile(rf"\\([{_PUNCT}])|&(#[0-9]{{1,7}}|#[xX][0-9a-fA-F]{{1,6}}|[A-Za-z][A-Za-z0-9]{{1,31}});")
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
_CR_LINE = re.compile(r"[^\r]*\r|[^\r]+")


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
        self._defining = False  # the paragraph so far is link reference definitions: the next line may be one
        self._after_cr = False  # the piece fed last ended with a CR: a piece continuing its line starts a line

    def feed(self, line: str, *, continued: bool = False) -> None:
        """The next line of the note (``continued``: the next piece of the line fed last)."""
        if "\x00" in line:
            self._binary = True
        if not continued:
            self.number += 1
            self._last_empty = not line
        elif not line:
            return  # nothing more of the line (the LF of a CRLF cut from its CR)
        else:
            self._last_empty = False
        # A lone CR ends a line too (a note saved by an old Mac editor): each line it ends is read as
        # a line of the blocks (a fence, indented code, a blank line), as marked renders it, while
        # the line numbers stay those `read` gives (a line ends at LF) and so do the columns: a
        # link's start is in its LF-ended line, which a rewrite edits byte for byte.
        after_cr, self._after_cr = self._after_cr, line.endswith("\r")
        if "\r" not in line[:-1]:
            self._feed_part(line, 0, continued and not after_cr)
            return
        at = 0
        for part in _cr_lines(line):
            self._feed_part(part, at, continued and not after_cr and at == 0)
            at += len(part)

    def _feed_part(self, line: str, at: int, continued: bool) -> None:
        """One line of the blocks (the whole line, or one a lone CR ends in it), ``at`` where it
        starts in the line fed."""
        read = self._lines.feed(line, continued)
        if read.ended:
            self._settle()
        if read.closed:
            self._maybe = None
        if read.heading is not None:
            self.headings.append(read.heading)
        defining, self._defining = self._defining, False
        if read.visible is None:
            return
        if not continued and read.maybe is None and (read.starts or defining):
            # A paragraph's first lines may be link reference definitions, each a line of its own here.
            defined = _definition(read.visible, line, self.number)
            if defined is not None:
                self._defining = True
                if defined[1] is not None:
                    self._found.append((at + defined[0], defined[1]))
                return
        if read.maybe is not None and self._maybe is None:
            self._maybe, self._before = [], len(self._found)
        self._found.extend((at + start, link) for start, link in _spans_of_line(read.visible, line, self.number))
        if read.maybe is not None:
            assert self._maybe is not None
            self._maybe.extend((at + start, link) for start, link in _spans_of_line(read.maybe, line, self.number))

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


def _cr_lines(line: str) -> list[str]:
    """``line`` cut after each CR, each part keeping its CR (as a CRLF-ended line keeps its own)."""
    return _CR_LINE.findall(line)


def markdown_destination(text: str) -> tuple[int, int] | None:
    """Where a Markdown link's destination (``path#fragment``, or ``<...>``) is in ``text`` (the
    link, or the reference definition, as written), or None when ``text`` is neither."""
    m = _MARKDOWN.fullmatch(text)
    if m is not None and m.group(3) is not None:
        return m.span(3)
    d = _DEFINITION_ALONE.fullmatch(text)
    return d.span(2) if d is not None else None


def destination_parts(written: str) -> tuple[str, str]:
    """A destination as written (``<...>`` or bare) as the path and fragment it stands for, each
    unescaped (backslash escapes, entities, then ``%XX``): ``plan(v1).md``, ``my\\_notes.md`` and
    ``a&amp;b.md`` are ``plan(v1).md``, ``my_notes.md`` and ``a&b.md``, as marked renders them."""
    text = _unescaped(written[1:-1] if written.startswith("<") else written)
    path, _, fragment = text.partition("#")
    return unquote(path), unquote(fragment)


def raw_fragment(written: str) -> str:
    """The fragment of a destination as written (``#plan``, with its ``#``; "" for none): where the
    first character that reads as ``#`` is (an escaped ``\\#`` and ``&#35;`` read so too)."""
    bare = written[1:-1] if written.startswith("<") else written
    at = 0
    for m in _ESCAPED.finditer(bare):
        cut = bare.find("#", at, m.start())
        if cut >= 0:
            return bare[cut:]
        if _unescaped(m.group()) == "#":
            return bare[m.start():]
        at = m.end()
    cut = bare.find("#", at)
    return bare[cut:] if cut >= 0 else ""


def _unescaped(text: str) -> str:
    if "\\" not in text and "&" not in text:
        return text
    return _ESCAPED.sub(_one_unescaped, text)


def _one_unescaped(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return m.group(1)
    entity = m.group(2)
    if entity[0] != "#":
        return html5.get(entity + ";", m.group())  # an unknown name is text, as written
    code = int(entity[2:], 16) if entity[1] in "xX" else int(entity[1:])
    return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"


def _markdown(written: str, number: int, text: str) -> ParsedLink | None:
    """The Markdown link (or reference definition) ``text`` whose destination is ``written``, when
    it names a note: a ``.md`` path without a scheme."""
    path, fragment = destination_parts(written)
    if not path.endswith(".md") or _SCHEME.match(path):
        return None
    return ParsedLink(number, MARKDOWN, path, fragment or None, text)


def _definition(visible: str, raw: str, number: int) -> tuple[int, ParsedLink | None] | None:
    """The line as a link reference definition (``[h]: ../projects/heron.md``): where it starts and
    the link it is (None: one naming no note), or None when the line is none."""
    if "]:" not in visible:
        return None
    m = _DEFINITION.fullmatch(visible)
    if m is None or not m.group(2).strip():
        return None
    start, end = m.span(1)
    return start, _markdown(m.group(3), number, raw[start:end])


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
    # Each backslash escape read as ``\_`` (same length): an escaped ``[`` opens no link and an
    # escaped ``!`` no image (``\[label](t.md)`` is text, ``\![alt](t.md)`` a ``!`` and a link), so a
    # link is looked for only where a bracket opens one, in time linear in the line; what the link
    # says is read from the line as written.
    searched = _ESCAPE.sub(r"\\_", visible) if "\\" in visible else visible
    for m in _MARKDOWN.finditer(searched):
        blank(masked, m.start(), m.end())
        if m.group(1) or m.group(3) is None:  # an image, or no destination
            continue
        link = _markdown(visible[m.start(3):m.end(3)], number, raw[m.start():m.end()])
        if link is not None:
            found.append((m.start(), link))
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
