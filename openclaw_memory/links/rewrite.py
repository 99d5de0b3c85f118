"""``mv --update-links``: the links that named a moved file, rewritten to name it where it is now.

The backlinks are found before the move (:func:`links_before`, with the content hash each
linking file's links were parsed from), the file is moved, and :func:`rewrite_backlinks` rewrites
each linking file by the rules of docs/notes.md:

- a wiki link keeps its name while the name still resolves to the moved file (a move to another
  folder under the same name); otherwise (a rename) it gets the file's name when that names it
  alone, else its path; its heading and label stay;
- a Markdown link (a reference definition too) gets the path from its note's folder to the file
  (its fragment stays), spelled so that it reads back as that path;
- a citation (its line range stays) and a mention get the file's workspace path;
- the moved file's own links to other notes that name another (or nothing) from its new folder
  are rewritten by the same rules to name what they named (a Markdown link relative to its new
  folder; ``[[alice]]`` that found ``alice.md`` beside it, by its path).

Each file is one write through the memory's own write operation, guarded by the version its links
were read from: a file changed since is not rewritten, and its links are named with why (nothing a
person or an agent wrote is overwritten). An ambiguous name is never rewritten: which file it meant
is not known.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, NamedTuple

import xxhash

from ..errors import MemoryToolError
from ..fsutil.safeopen import FolderSwapped, NotRegularFile, open_regular_in_roots, read_and_close
from ..history.moves import WRITE_FAILED, LinkLeft
from ..history.stale import read_here
from ..history.store import HistoryStore
from ..history.writes import write
from .parse import CITATION, MARKDOWN, MENTION, WIKI, ParsedLink, links_in, markdown_destination, raw_fragment
from .report import link_state, may_name, names
from .resolve import AMBIGUOUS, LinkTarget

if TYPE_CHECKING:
    from ..settings import Settings
    from .resolve import Resolver


_PERCENT = re.compile(r"%(?=[0-9A-Fa-f]{2})")
_ENTITY_LIKE = re.compile(r"&(?=#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]{1,31};)")


class Rewritten(NamedTuple):
    """A link a rewrite made: in the file at ``path`` (absolute, after the move), on ``line``, its
    ``text`` now; ``was``: the link it was made from."""

    path: str
    line: int
    text: str
    was: ParsedLink


class Backlink(NamedTuple):
    source: str  # absolute path of the linking file, before the move
    link: ParsedLink
    version: str  # the content hash the link was parsed from
    ambiguous: str  # why it is not rewritten ("" when it names the moved file alone)
    names: str  # absolute path of the file it is to name: the moved file, or (its own links) another


def links_before(settings: Settings, abs_path: str) -> tuple[list[Backlink], tuple[str, ...]]:
    """Every link that names the memory file ``abs_path`` (or may name it, among others), and the
    file's own links to other notes (which may name another from its new folder), read from the
    files as they are now; and the memory files that could not be read (as `files` shows them):
    a link of theirs naming the file is not known, so not rewritten."""
    state = link_state(settings)
    out = []
    for f, link in state.links():
        if f.abs_path != abs_path and not may_name(link, abs_path):
            continue
        found = state.resolver.resolve(link, f.abs_path)
        note = state.table.text(f.abs_path)
        if note is not None and names(found, abs_path):
            out.append(Backlink(f.abs_path, link, note.hash, found.problem if found.status == AMBIGUOUS else "",
                                abs_path))
        elif note is not None and f.abs_path == abs_path and found.target is not None:
            out.append(Backlink(f.abs_path, link, note.hash, "", found.target.abs_path))
    return out, state.table.unreadable


def rewrite_backlinks(settings: Settings, backlinks: list[Backlink], source: str, destination: str
                      ) -> tuple[tuple[str, ...], tuple[LinkLeft, ...], tuple[Rewritten, ...]]:
    """Rewrite ``backlinks`` (found before the move of ``source`` to ``destination``, absolute
    paths), each file by one guarded write as ``settings``' agent and session: the files
    rewritten, the links left with why, and the links the rewrites made."""
    state = link_state(settings)
    by_file: dict[str, list[Backlink]] = {}
    updated: list[str] = []
    left: list[LinkLeft] = []
    made: list[Rewritten] = []
    for b in backlinks:
        if b.source == destination:  # the file `mv --force` replaced: archived, its links with it
            left.append(LinkLeft(state.shown.get(destination, b.source), b.link.line, b.link.text,
                                 "in the file the move replaced (archived: `restore --last` brings it back)"))
            continue
        by_file.setdefault(destination if b.source == source else b.source, []).append(b)
    roots = (str(settings.workspace), *map(str, settings.extra_paths))
    for path, links in by_file.items():
        shown = state.shown.get(path, os.path.relpath(path, settings.workspace))
        named = {b.names: state.resolver.targets.get(destination if b.names == source else b.names) for b in links}
        gone = [b for b in links if named[b.names] is None]
        left.extend(LinkLeft(shown, b.link.line, b.link.text, "the file it names is no memory file now") for b in gone)
        done, why = _rewrite_file(settings, roots, path, shown, [b for b in links if b not in gone], state.resolver,
                                  {name: t for name, t in named.items() if t is not None})
        left.extend(why)
        if done:
            updated.append(shown)
            made.extend(Rewritten(path, link.line, text, link) for link, text in done)
    return tuple(updated), tuple(left), tuple(made)


def _rewrite_file(settings: Settings, roots: tuple[str, ...], path: str, shown: str, links: list[Backlink],
                  resolver: Resolver, named: dict[str, LinkTarget]) -> tuple[list[tuple[ParsedLink, str]], list[LinkLeft]]:
    """The file's links rewritten by one guarded write: each link rewritten with its new text (none
    when the file was not written), and the links left with why."""
    left = [LinkLeft(shown, b.link.line, b.link.text, f"may name another file: {b.ambiguous}") for b in links if b.ambiguous]
    wanted: dict[int, list[tuple[ParsedLink, LinkTarget]]] = {}
    for b in links:
        if not b.ambiguous:
            wanted.setdefault(b.link.line, []).append((b.link, named[b.names]))
    if not wanted:
        return [], left
    version = links[0].version
    content = _read(roots, path)
    if content is None or xxhash.xxh3_128_hexdigest(content) != version:
        why = "it changed after its links were read; not rewritten" if content is not None else "it cannot be read"
        return [], [*left, *(LinkLeft(shown, link.line, link.text, why) for ls in wanted.values() for link, _ in ls)]
    objects = HistoryStore.for_settings(settings).objects
    if not objects.fits(len(content)):  # the rewrite would replace bytes no `restore` could bring back
        why = (f"it is too big for the history to keep what it holds now ({len(content):,} bytes; at most "
               f"[history] max_bytes / 8, {objects.max_bytes // 8:,}); not rewritten")
        return [], [*left, *(LinkLeft(shown, link.line, link.text, why) for ls in wanted.values() for link, _ in ls)]
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return [], [*left, *(LinkLeft(shown, link.line, link.text, "it is not UTF-8 text")
                             for ls in wanted.values() for link, _ in ls)]
    lines = text.split("\n")
    rewritten, unchanged, done = _rewrite_lines(text, lines, wanted, path, resolver)
    left.extend(LinkLeft(shown, link.line, link.text, why) for link, why in unchanged)
    if rewritten == lines:
        return [], left
    try:
        with read_here(version):  # read whole just above; the agent's session need not have read it
            write(settings, shown, content="\n".join(rewritten), expect=version)  # the caller updates the index
    except MemoryToolError as exc:
        # A guard that blocked the write (exit 3: the file changed meanwhile) or a refusal (exit 2: a
        # read-only note) leaves the links by a rule; a failure (exit 1: the disk full) fails them.
        why = f"not rewritten: {exc.message}" if exc.exit_code != 1 else f"{WRITE_FAILED}{exc.message}"
        return [], [*left, *(LinkLeft(shown, link.line, link.text, why) for ls in wanted.values() for link, _ in ls)]
    return done, left


_Edit = tuple[int, int, str, ParsedLink, LinkTarget]  # where in its line, the text there now, the link, its file


def _rewrite_lines(text: str, lines: list[str], wanted: dict[int, list[tuple[ParsedLink, LinkTarget]]], path: str,
                   resolver: Resolver) -> tuple[list[str], list[tuple[ParsedLink, str]], list[tuple[ParsedLink, str]]]:
    """The note's lines with the links of ``wanted`` (by line) rewritten to name their files, the
    links left with why, and those rewritten with their new text. The note is read whole, before
    and after: which text is a link depends on the lines around it (a comment opened lines before,
    an indented code block)."""
    found = _by_line(links_in(text))
    left: list[tuple[ParsedLink, str]] = []
    edits: dict[int, list[_Edit]] = {}
    for number, ls in wanted.items():
        line_edits, unchanged = _rewrite_line(found.get(number, []), ls, path, resolver)
        left.extend(unchanged)
        if line_edits:
            edits[number] = line_edits
    rewritten = list(lines)
    for number, line_edits in edits.items():
        for start, end, new, _, _ in reversed(line_edits):
            rewritten[number - 1] = rewritten[number - 1][:start] + new + rewritten[number - 1][end:]
    now = _by_line(links_in("\n".join(rewritten)))
    for number, line_edits in edits.items():
        if not _line_reads_back(found.get(number, []), now.get(number, []), line_edits, path, resolver):
            # Each new text is a link alone, but not in the line (a backtick in one name and another
            # opened a code span over both, or over a link of the line left as it was): the line is
            # left whole, its links named. Putting it back changes no other line's reading: a code
            # span ends with its line, a new text holds no comment marker (_rewrite_line), and none
            # starts with a blank or a block's marker.
            rewritten[number - 1] = lines[number - 1]
            left.extend((link, f"{dst.display} written here would not be read as a link naming it (with the "
                               "line's other rewrites it opens a code span or a bracket)")
                        for _, _, _, link, dst in line_edits)
    done = [(link, new) for number, line_edits in edits.items() if rewritten[number - 1] != lines[number - 1]
            for _, _, new, link, _ in line_edits]
    return rewritten, left, done


def _by_line(found: list[tuple[int, ParsedLink]]) -> dict[int, list[tuple[int, ParsedLink]]]:
    lines: dict[int, list[tuple[int, ParsedLink]]] = {}
    for start, link in found:
        lines.setdefault(link.line, []).append((start, link))
    return lines


def _rewrite_line(found: list[tuple[int, ParsedLink]], wanted: list[tuple[ParsedLink, LinkTarget]], path: str,
                  resolver: Resolver) -> tuple[list[_Edit], list[tuple[ParsedLink, str]]]:
    """The edits that rewrite each link of ``wanted`` on a line to name its file, and the links
    left with why. Links are matched as the parser finds them in the note now (``found``, the
    line's: the same form, target and text), so a lookalike in code or a comment is never one."""
    pending = list(wanted)
    edits: list[_Edit] = []
    left: list[tuple[ParsedLink, str]] = []
    for start, link in found:
        at = next((i for i, (waiting, _) in enumerate(pending) if waiting == link), None)
        if at is None:
            continue
        _, dst = pending.pop(at)
        new = _rewritten(link, path, resolver, dst)
        if isinstance(new, tuple):
            left.append((link, new[0]))
        elif new != link.text and ("<!--" in new or "-->" in new):
            left.append((link, f"{dst.display} holds an HTML comment's <!-- or -->: written into a link, it would "
                               "open or close a comment around the note's text"))
        elif new != link.text and not _reads_back(new, link, path, resolver, dst):
            left.append((link, f"{dst.display} cannot be written as a {link.form} link (the parser would not read "
                               "it as one naming the file)"))
        elif new != link.text:
            edits.append((start, start + len(link.text), new, link, dst))
    left.extend((link, "not found where it was read") for link, _ in pending)
    return edits, left


def _line_reads_back(before: list[tuple[int, ParsedLink]], after: list[tuple[int, ParsedLink]], edits: list[_Edit],
                     path: str, resolver: Resolver) -> bool:
    """Whether a rewritten line holds the links it held (``before``, as the note is read now;
    ``after``, as the rewritten note is), each edit's new text in place of its old one, as a link
    of its form naming the edit's file."""
    replaced = {start: new for start, _, new, _, _ in edits}
    if [link.text for _, link in after] != [replaced.get(start, link.text) for start, link in before]:
        return False
    found = {(start, link.text): link for start, link in after}
    shift = 0
    for start, end, new, link, dst in edits:  # in the line's order
        read = found.get((start + shift, new))
        if read is None or read.form != link.form or not _names_it(resolver, read, read.target, path, dst):
            return False
        shift += len(new) - (end - start)
    return True


def _rewritten(link: ParsedLink, path: str, resolver: Resolver, dst: LinkTarget) -> str | tuple[str]:
    """The link's new text, or (why,) when it cannot name ``dst``."""
    if not link.target or _names_it(resolver, link, link.target, path, dst):
        return link.text  # [[#heading]], or a link that names the file from where it is written now
    if link.form in (CITATION, MENTION):
        return dst.display + link.text[len(link.target):]
    if link.form == MARKDOWN:
        span = markdown_destination(link.text)
        if span is None:
            return ("not a Markdown link as written",)
        written = link.text[span[0]:span[1]]
        fragment = raw_fragment(written)  # as written
        relative = os.path.relpath(dst.abs_path, os.path.dirname(path))
        # The path spelled to read back as itself: a % before two hex digits, a # and the & of what
        # reads as an entity percent-encoded (a destination is %-decoded, its first # starts the
        # fragment; marked reads `\\&amp;` as `&` too), a backslash escaped; bare where the link was
        # and the path allows, else in <...>.
        spelled = _ENTITY_LIKE.sub("%26", _PERCENT.sub("%25", relative).replace("#", "%23").replace("\\", "\\\\"))
        bare = spelled + fragment
        angled = "<" + (spelled.replace("<", "\\<").replace(">", "\\>") + fragment) + ">"
        for dest in ((angled,) if written.startswith("<") else (bare, angled)):
            new = link.text[:span[0]] + dest + link.text[span[1]:]
            if _reads_back(new, link, path, resolver, dst):
                return new
        return new  # named by the caller: it cannot be written as a link naming the file
    assert link.form == WIKI
    for name in (_stem(dst.display.rsplit("/", 1)[-1]), _stem(dst.display)):
        if _names_it(resolver, link, name, path, dst):
            opening = link.text.index("[[") + 2
            inner = link.text[opening:-2]
            cut = min((i for i in (inner.find("#"), inner.find("|")) if i >= 0), default=len(inner))
            if inner[cut:cut + 1] == "|" and inner[cut - 1:cut] == "\\":
                cut -= 1  # [[name\|label]] in a table: the escape stays with its pipe
            return link.text[:opening] + name + inner[cut:] + "]]"
    return (f"no wiki name names {dst.display} from here",)


def _reads_back(new: str, link: ParsedLink, path: str, resolver: Resolver, dst: LinkTarget) -> bool:
    """Whether ``new``, read as the parser reads a note, is one link of ``link``'s form naming ``dst``.
    A name can hold what a form cannot spell (a space or ``>`` in a mention, ``]`` in a wiki name,
    ``>`` inside ``<...>``): written anyway, the link named nothing, or another file, and was no
    longer a backlink of the moved note, so no ``links --broken`` listed it."""
    found = links_in(new)
    if len(found) != 1:
        return False
    start, read = found[0]
    return (start == 0 and read.text == new and read.form == link.form
            and _names_it(resolver, read, read.target, path, dst))


def _names_it(resolver: Resolver, link: ParsedLink, name: str, path: str, dst: LinkTarget) -> bool:
    found = resolver.resolve(link._replace(target=name, fragment=None), path)
    return found.status != AMBIGUOUS and found.target is not None and found.target.abs_path == dst.abs_path


def _stem(name: str) -> str:
    return name[:-3] if name.endswith(".md") else name


def _read(roots: tuple[str, ...], path: str) -> bytes | None:
    """The file's bytes, opened from its root's descriptor as the link table opens it."""
    try:
        fd, _ = open_regular_in_roots(roots, path)
    except (FileNotFoundError, NotADirectoryError, NotRegularFile, FolderSwapped, PermissionError):
        return None
    try:
        return read_and_close(fd)
    except OSError:
        return None
