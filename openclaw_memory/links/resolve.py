"""Which memory file a parsed link names (the rules are written down in docs/notes.md, *Links*).

- ``[[name]]`` (and a citation without a folder, ``heron.md#L3``): the note ``name.md``
  in the linking note's own folder first, else every memory file named ``name.md`` under the memory
  roots (the workspace's root files, ``memory/``, the extra paths): one is the link's target; two or
  more make the link *ambiguous*, reported with every candidate and never resolved to one of them.
  ``[[folder/name]]``: that path from the note's folder, else from the workspace, else the files
  whose path ends with it (one, or ambiguous). A trailing ``.md`` in the name is allowed.
- A markdown link's path is relative to the linking note's folder, as Markdown renderers take it.
- A citation or mention with a folder (``memory/2026-11-03.md#L3-L9``) is relative to the
  workspace, as search and ``files`` print paths, else to the note's folder.
- Names compare as the file system compares them: exactly, unless the workspace's file system
  folds case (then ``[[Heron]]`` names ``heron.md``); a path is looked up on the file system itself.
- Only memory files are targets: a path to a file that is not memory (outside the roots, a
  symlink) names nothing. A heading (``#Plan``) must be a heading of the target (compared without
  case and spacing, or as its GitHub-style anchor ``#the-plan``); a line range must lie within it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from functools import cached_property
from typing import NamedTuple, Protocol

from ..fsutil.safeopen import Folder, parts_under, root_spellings
from .parse import CITATION, MARKDOWN, MENTION, WIKI, ParsedLink

OK = "ok"
BROKEN = "broken"
AMBIGUOUS = "ambiguous"

_LINES = re.compile(r"L([0-9]+)(?:-L([0-9]+))?")


class TargetText(Protocol):
    """What a link's fragment is checked against: the target's headings and its line count."""

    @property
    def headings(self) -> tuple[str, ...]: ...
    @property
    def lines(self) -> int: ...


class Text(NamedTuple):
    """A :class:`TargetText` given whole (the link table's records decode their headings only when asked)."""

    headings: tuple[str, ...]
    lines: int


class LinkTarget(NamedTuple):
    """What a memory file offers the links that name it."""

    abs_path: str
    display: str
    inode: int
    text: TargetText | None  # None: not known (the file could not be read)


class Resolution(NamedTuple):
    status: str  # OK | BROKEN | AMBIGUOUS
    target: LinkTarget | None
    candidates: tuple[LinkTarget, ...] = ()
    # Why it is broken or ambiguous, or what words it (called when asked: a caller that needs only
    # the status, as a move's warnings do, never builds it; a name's look-alike is a search).
    why: str | Callable[[], str] = ""

    @property
    def problem(self) -> str:
        return self.why() if callable(self.why) else self.why


class Resolver:
    """Resolves links against the memory files as they are now (``targets``, by absolute path)."""

    def __init__(self, workspace: str, targets: Iterable[LinkTarget], *, folds_case: bool, roots: Iterable[str] = ()):
        self.workspace = workspace
        # What a link may make us look at on disk: the workspace and the extra paths. A path beyond
        # them is never looked at (a note's link could otherwise ask whether any file on the machine
        # exists: `[x](/home/other/secret.md)` said "is not a memory file" where it did).
        self._roots = tuple(r.rstrip("/") for r in (workspace, *roots))
        self.targets = {t.abs_path: t for t in targets}
        self._folds = folds_case
        self._fold: Callable[[str], str] = str.casefold if folds_case else _same
        self._by_name: dict[str, list[LinkTarget]] = {}
        self._by_path = {self._fold(path): t for path, t in self.targets.items()}
        for t in self.targets.values():
            self._by_name.setdefault(self._fold(_stem(os.path.basename(t.abs_path))), []).append(t)

    def replaced(self, gone: Iterable[str], added: Iterable[LinkTarget]) -> Resolver:
        """A resolver on these memory files less ``gone`` (absolute paths) and with ``added``: the
        memory as it was before a move or a removal (:mod:`.shifted`)."""
        dropped = set(gone)
        left = [t for path, t in self.targets.items() if path not in dropped]
        return Resolver(self.workspace, [*left, *added], folds_case=self._folds, roots=self._roots[1:])

    def resolve(self, link: ParsedLink, source: str) -> Resolution:
        """``link`` as written in the memory file ``source`` (absolute path)."""
        folder = os.path.dirname(source)
        if link.form == WIKI and not link.target:  # [[#heading]]: the note itself
            found = self.targets.get(source)
            return self._checked(link, Resolution(OK, found) if found else self._nothing(link))
        if link.form == MARKDOWN:
            return self._checked(link, self._at(link, [os.path.join(folder, link.target)]))
        name = link.target[:-3] if link.target.endswith(".md") else link.target
        if "/" not in name:
            return self._checked(link, self._named(link, name, folder))
        if link.form == WIKI:
            tried = self._at(link, [os.path.join(folder, name + ".md"), os.path.join(self.workspace, name + ".md")])
            return self._checked(link, tried if tried.status == OK else self._ending(link, name))
        assert link.form in (CITATION, MENTION)
        return self._checked(link, self._at(link, [os.path.join(self.workspace, link.target), os.path.join(folder, link.target)]))

    def _named(self, link: ParsedLink, name: str, folder: str) -> Resolution:
        beside = self._find(os.path.join(folder, name + ".md"))
        if beside is not None:
            return Resolution(OK, beside)
        return self._one_of(link, self._by_name.get(self._fold(name), []))

    def _ending(self, link: ParsedLink, name: str) -> Resolution:
        tail = self._fold("/" + name + ".md")
        return self._one_of(link, [t for t in self.targets.values() if self._fold("/" + t.display).endswith(tail)])

    def _one_of(self, link: ParsedLink, found: list[LinkTarget]) -> Resolution:
        if len(found) == 1:
            return Resolution(OK, found[0])
        if not found:
            return self._nothing(link)
        ordered = tuple(sorted(found, key=lambda t: t.display))
        return Resolution(AMBIGUOUS, None, ordered,
                          f"{len(ordered)} memory files are named {os.path.basename(ordered[0].display)}: "
                          + ", ".join(t.display for t in ordered))

    def _at(self, link: ParsedLink, paths: list[str]) -> Resolution:
        for path in paths:
            found = self._find(os.path.normpath(path))
            if found is not None:
                return Resolution(OK, found)
        return Resolution(BROKEN, None, why=lambda: self._not_at(link, os.path.normpath(paths[0])))

    def _find(self, path: str) -> LinkTarget | None:
        """The memory file at ``path``, as the file system finds it: a file system that folds case
        is asked (its rules may not be Python's casefold); one that does not names each file once."""
        found = self._by_path.get(self._fold(path))
        if found is not None or not self._folds:
            return found
        st = self._lstat(path)
        if st is None:
            return None
        for t in self.targets.values():
            if t.inode == st.st_ino and _same_file(t.abs_path, st):
                return t
        return None

    def _lstat(self, path: str) -> os.stat_result | None:
        """What is at ``path`` (normalised, absolute), looked up as the project opens files: from
        the descriptor of the root that holds it, one folder at a time, never through a symlink
        (None: nothing, or a path outside the roots, or through a symlinked folder). Looked up by
        name, ``memory/ext/secret.md`` with ``ext`` a link to a folder outside said whether a file
        was there ("is not a memory file" or "no memory file at")."""
        for root in root_spellings(self._roots):
            if path == root or not path.startswith(root.rstrip("/") + "/"):
                continue
            parts = parts_under(root, path)
            try:
                with Folder.under(root, parts[:-1], create=False) as folder:
                    return folder.lstat(parts[-1])
            except (OSError, ValueError):
                return None
        return None

    def _not_at(self, link: ParsedLink, path: str) -> str:
        """Why a path names no memory file: something else is there, or nothing is."""
        return f"{link.target} is not a memory file" if self._lstat(path) is not None else self._none(link)

    def _nothing(self, link: ParsedLink) -> Resolution:
        return Resolution(BROKEN, None, why=lambda: self._none(link))

    def _none(self, link: ParsedLink) -> str:
        what = "no memory file is named" if link.form == WIKI and "/" not in link.target else "no memory file at"
        return f"{what} {link.target or '(this note)'}{self._alike(link.target)}"

    def _alike(self, target: str) -> str:
        """The memory file whose name is the link's but for its Unicode form (an é typed as one code
        point, the file's name holding e and an accent, as macOS writes it): the link names nothing,
        said with the file it looks like, since the two names look the same."""

        def letters(name: str) -> str:
            return self._fold(_stem(name.rsplit("/", 1)[-1]))

        wanted = self._form(target) if target else ""
        found = sorted(self._by_form.get(wanted, ())) if wanted else []
        # The same letters: the file is in another folder than the link names (a Markdown link is read
        # from its note's folder), which is all there is to say; said as a Unicode form, it misled.
        elsewhere = [name for name in found if letters(name) == letters(target)]
        alike = [name for name in found if name not in elsewhere]
        if alike:
            return (f" ({', '.join(alike)} is named alike, its name's letters written with other Unicode code points: "
                    "rename the file or retype the link so they match)")
        if target in elsewhere:  # a workspace path written where the link is read from its note's folder
            return f" ({target} is there from the workspace, but a Markdown link is read from its note's folder)"
        if elsewhere:
            return f" ({', '.join(elsewhere)} has that name, in another folder than the link names)"
        return ""

    def _form(self, name: str) -> str:
        """A file's name as :meth:`_alike` compares it: its last part, Unicode form and case aside."""
        import unicodedata

        return self._fold(unicodedata.normalize("NFC", _stem(name.rsplit("/", 1)[-1])))

    @cached_property
    def _by_form(self) -> dict[str, list[str]]:
        """The memory files by :meth:`_form` of their name (made on the first link whose problem is
        asked: each broken link's walked every file, so ``links --broken`` grew as links x notes)."""
        by_form: dict[str, list[str]] = {}
        for t in self.targets.values():
            by_form.setdefault(self._form(t.display), []).append(t.display)
        return by_form

    def _checked(self, link: ParsedLink, found: Resolution) -> Resolution:
        """A resolved link whose heading or line range its target does not have is broken."""
        target = found.target
        if found.status != OK or target is None or not link.fragment:
            return found
        lines = _LINES.fullmatch(link.fragment)
        text = target.text
        if lines is not None and link.form != WIKI:
            end = int(lines.group(2) or lines.group(1))
            if text is not None and end > text.lines:
                return Resolution(BROKEN, target, why=f"{target.display} has {text.lines} lines, not {end}")
            return found
        if text is not None and not has_heading(text.headings, link.fragment):
            return Resolution(BROKEN, target, why=f"{target.display} has no heading {link.fragment!r}")
        return found


def has_heading(headings: Iterable[str], wanted: str) -> bool:
    """``wanted`` as a heading's text (case and spacing aside) or as its GitHub-style anchor."""
    text, anchor = _plain(wanted), _anchor(wanted)
    return any(_plain(h) == text or _anchor(h) == anchor for h in headings)


def _plain(heading: str) -> str:
    return " ".join(heading.split()).casefold()


def _anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _stem(name: str) -> str:
    return name[:-3] if name.endswith(".md") else name


def _same(text: str) -> str:
    return text


def _same_file(path: str, st: os.stat_result) -> bool:
    try:
        other = os.lstat(path)
    except OSError:
        return False
    return (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino)


def folds_case(files: Mapping[str, int]) -> bool:
    """Whether the file system of the memory files folds case: one of ``files`` (absolute path ->
    inode) with a letter in its name, asked for under its name with the case swapped."""
    for path, inode in files.items():
        folder, name = os.path.split(path)
        swapped = name.swapcase()
        if swapped == name:
            continue
        try:
            return os.lstat(os.path.join(folder, swapped)).st_ino == inode
        except OSError:
            return False
    return False
