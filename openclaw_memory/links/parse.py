"""The links a memory note holds, as written: one parser for every form notes use.

- ``[[name]]``, ``[[name|label]]``, ``[[name#heading]]``, ``[[name#heading|label]]`` (``![[...]]``
  too): *wiki* links, by name;
- ``[label](projects/heron.md)``, ``[label](heron.md#Heading)``: *markdown* links, a path relative
  to the note's folder (a URL, an image or a target that is not a ``.md`` file is no note link);
- ``memory/2026-11-03.md#L3-L9``: a *citation*, as search prints them;
- ``memory/2026-11-03.md`` in the text ("see memory/2026-11-03.md"): a *mention* (a path with a
  folder: a bare ``heron.md`` is talk about a file, not a link).

Nothing inside a fenced code block (```` ``` ```` or ``~~~``) or an inline code span counts. Only
parsing happens here: which file a link names is :mod:`.resolve`'s job, so a note is parsed once per
content (:mod:`.table`) whatever files come and go around it. Standard library only.
"""

from __future__ import annotations

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


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_TICKS = re.compile(r"`+")
_WIKI = re.compile(r"!?\[\[([^\[\]|#\n]*)(?:#([^\[\]|\n]*))?(?:\|([^\[\]\n]*))?\]\]")
_MARKDOWN = re.compile(r"(!?)\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]\(\s*(<[^<>\n]*>|[^\s()<>]+)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")
_URL = re.compile(r"<?[A-Za-z][A-Za-z0-9+.-]*://[^\s<>]*>?")
_OTHER_FILE = re.compile(r"\.(?!md$)[A-Za-z][A-Za-z0-9]{1,4}$")  # [[photo.png]]: an attachment, not a note
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# A path ending in .md, not part of a longer word, path or file name (``x.md.bak``, ``a/x.md/b``).
_PATH = re.compile(r"(?<![\w./\\-])((?:\.\.?/)*(?:[\w.-]+/)*[\w.-]*\w\.md)(?:#(L[0-9]+(?:-L[0-9]+)?))?(?![\w/\\-]|\.\w)")


def parse_note(text: str) -> ParsedNote:
    """Every link of ``text`` (a note's content), in order, with its headings and line count."""
    links: list[ParsedLink] = []
    headings: list[str] = []
    fence: str | None = None  # the open fence's marker (``` or ~~~, at least as long)
    lines = text.split("\n")
    count = len(lines) - (1 if lines and lines[-1] == "" else 0)
    for number, line in enumerate(lines, 1):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) and not opened.group(2).strip():
                fence = None
            continue
        if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
            fence = opened.group(1)
            continue
        heading = _HEADING.match(line)
        if heading:
            headings.append((heading.group(1) or "").strip())
        links.extend(_links_of_line(_without_code_spans(line), line, number))
    return ParsedNote(links, headings, count)


def _without_code_spans(line: str) -> str:
    """``line`` with every inline code span blanked (same length, so positions hold): a run of N
    backticks opens a span that the next run of exactly N closes; an unmatched run is text."""
    out = list(line)
    runs = list(_TICKS.finditer(line))
    i = 0
    while i < len(runs):
        start = runs[i]
        close = next((j for j in range(i + 1, len(runs)) if len(runs[j].group()) == len(start.group())), None)
        if close is None:
            i += 1
            continue
        for k in range(start.start(), runs[close].end()):
            out[k] = " "
        i = close + 1
    return "".join(out)


def _blank(chars: list[str], start: int, end: int) -> None:
    for k in range(start, end):
        chars[k] = " "


def _links_of_line(visible: str, raw: str, number: int) -> list[ParsedLink]:
    found: list[tuple[int, ParsedLink]] = []
    masked = list(visible)
    for m in _WIKI.finditer(visible):
        target = m.group(1).strip()
        fragment = m.group(2).strip() if m.group(2) is not None else None
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
    visible = _URL.sub(lambda u: " " * len(u.group()), "".join(masked))
    for m in _PATH.finditer(visible):
        form = CITATION if m.group(2) else MENTION
        if form == MENTION and "/" not in m.group(1):
            continue  # a bare name ("the legacy memory.md") is talk about a file, not a pointer to one
        found.append((m.start(), ParsedLink(number, form, m.group(1), m.group(2), raw[m.start():m.end()])))
    return [link for _, link in sorted(found, key=lambda item: item[0])]
