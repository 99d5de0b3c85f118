"""``links``: a note's outgoing links and backlinks, or every link of the memory, or those that
name nothing (``broken``), each with its line and what it resolves to."""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from ..errors import PathRefused
from ..files.scan import scan_workspace
from ..wire import key
from .parse import ParsedLink
from .resolve import AMBIGUOUS, OK, LinkTarget, Resolution, Resolver, folds_case
from .table import Refreshed, refresh

if TYPE_CHECKING:
    from ..files.scan import MemoryFile
    from ..settings import Settings


@dataclass(frozen=True)
class NoteLink:
    """One link, where it is written and what it names."""

    source: str  # the memory file it is written in (as `files` shows paths)
    line: int  # 1-based
    form: str  # wiki | markdown | citation | mention
    text: str  # as written: [[heron|the heron]]
    target: str  # the name or path it gives
    status: str  # ok | broken | ambiguous
    fragment: str | None = key(omit=lambda link: link.fragment is None, default=None)  # heading or L3-L9
    resolved: str | None = key(omit=lambda link: link.resolved is None, default=None)  # the file it names
    candidates: tuple[str, ...] = key(omit=lambda link: not link.candidates, default=())  # an ambiguous name's files
    problem: str = key(omit=lambda link: not link.problem, default="")  # why it is broken or ambiguous


@dataclass(frozen=True)
class LinkReport:
    """``path``'s outgoing links and backlinks; without a path, every link (``outgoing``).
    ``broken``: only the links that name nothing, or more than one file."""

    workspace: str
    agent: str
    path: str | None = key(omit=lambda r: r.path is None, default=None)
    outgoing: tuple[NoteLink, ...] = ()
    backlinks: tuple[NoteLink, ...] = key(omit=lambda r: r.path is None, default=())
    files: int = 0  # memory files whose links were looked at
    parsed: int = 0  # of them, parsed this time (new or changed content); the others' links came from the table
    unreadable: tuple[str, ...] = key(omit=lambda r: not r.unreadable, default=())

    @property
    def warnings(self) -> list[str]:
        return [f"cannot read {path}: its links are not listed" for path in self.unreadable]


def note_links(settings: Settings, path: str | None = None, *, broken: bool = False) -> LinkReport:
    """The links of the memory files as they are now (the link table brought up to date first)."""
    from ..files.read import open_resolved, resolve_memory_path  # here: doctor's link check resolves no path

    workspace = str(settings.workspace)
    resolved = resolve_memory_path(path, workspace, settings.extra_paths) if path is not None else None
    wanted = resolved.abs_path if resolved is not None else None
    state = link_state(settings)
    if resolved is not None and wanted not in state.shown:
        # What is there and no memory file (a FIFO, a folder, a path through a file) is refused in
        # read's words (`refused: memory/fifo.md: not a regular file`), where it said no such file.
        opened = open_resolved(resolved, through_a_file="refused")
        if opened is not None:
            os.close(opened[0])  # (a file made since the listing: none when it was looked at)
        # One wording for the command line and the tools alike: an agent cannot run the command.
        raise PathRefused(f"{path}: no such memory file (the links that name nothing: `openclaw-memory links --broken`, "
                          "or memory_links with broken: true)")
    outgoing: list[NoteLink] = []
    backlinks: list[NoteLink] = []
    for f, link in state.links():
        if wanted is not None and f.abs_path != wanted and not may_name(link, wanted):
            continue
        found = state.resolver.resolve(link, f.abs_path)
        if broken and found.status == OK:
            continue
        listed = _listed(f.path, link, found)
        if wanted is None or f.abs_path == wanted:
            outgoing.append(listed)
        # A backlink is another note's link here (the notes a change of it affects): its own link to
        # itself ([[#The plan]], [[heron#Nowhere]]) is one of its outgoing links only.
        elif names(found, wanted):
            backlinks.append(listed)
    return LinkReport(workspace, settings.agent, state.shown[wanted] if wanted is not None else None, tuple(outgoing),
                      tuple(backlinks), len(state.files), state.table.parsed, state.table.unreadable)


def unresolved(state: LinkState) -> Iterator[NoteLink]:
    """Every link that names nothing or more than one file, in `files` order (doctor's link check)."""
    for f, link in state.links():
        found = state.resolver.resolve(link, f.abs_path)
        if found.status != OK:
            yield _listed(f.path, link, found)


class LinkState:
    """The memory's links as they are now: what every call that resolves links starts from. The
    resolver (an index of every file's name and path) is made on the first link resolved: a
    memory without links never builds it."""

    def __init__(self, settings: Settings, files: list[MemoryFile], table: Refreshed):
        self.workspace = str(settings.workspace)
        self.roots = tuple(str(extra) for extra in settings.extra_paths)
        self.files = files  # the Markdown memory files, in `files` order
        self.table = table  # each file's links as parsed (and its content hash)

    @cached_property
    def shown(self) -> dict[str, str]:
        """Absolute path -> the path as `files` shows it."""
        return {f.abs_path: f.path for f in self.files}

    def links(self) -> Iterator[tuple[MemoryFile, ParsedLink]]:
        """Each file's links in order, the files in `files` order."""
        links = self.table.links
        if not links:
            return
        for f in self.files:
            for link in links.get(f.abs_path, ()):
                yield f, link

    @cached_property
    def resolver(self) -> Resolver:
        unknown = set(self.table.unreadable)  # a file not read: what its headings and lines are is not known
        return Resolver(self.workspace,
                        [LinkTarget(f.abs_path, f.path, f.inode, None if f.path in unknown else _Text(self.table, f.abs_path))
                         for f in self.files],
                        folds_case=folds_case({f.abs_path: f.inode for f in self.files}), roots=self.roots)


class _Text:
    """A target's headings and line count, taken from the link table only when a link's heading or
    line range asks for them."""

    __slots__ = ("_table", "_path")

    def __init__(self, table: Refreshed, abs_path: str):
        self._table, self._path = table, abs_path

    @property
    def headings(self) -> tuple[str, ...]:
        record = self._table.text(self._path)
        return record.headings if record is not None else ()

    @property
    def lines(self) -> int:
        record = self._table.text(self._path)
        return record.lines if record is not None else 0


def link_state(settings: Settings, files: Iterable[MemoryFile] | None = None, *, save: bool = True,
               suspects: Collection[str] | None = None) -> LinkState:
    """The memory files (``files``, a scan's, else a scan now), the link table brought up to date
    for them (stored unless ``save`` is False: :func:`~.table.keep` then stores it; ``suspects``:
    :func:`~.table.refresh`'s), and a resolver on them."""
    scanned = scan_workspace(settings, multimodal=False).files if files is None else files
    markdown = [f for f in scanned if f.kind == "markdown"]
    return LinkState(settings, markdown, refresh(settings, markdown, save=save, suspects=suspects))


def may_name(link: ParsedLink, wanted: str) -> bool:
    """Whether ``link`` could name ``wanted`` at all (a cheap test before resolving: a link names a
    file by its name, or by a path that ends with it)."""
    return not link.target or given_name(link.target) in names_of(wanted)


def given_name(target: str) -> str:
    """The name a link's target gives (its last part, case aside): what :func:`names_of` a file it names holds."""
    return os.path.basename(target.rstrip("/")).casefold()


def names_of(path: str) -> tuple[str, str]:
    """The names a link may give the file at ``path`` by (case aside): its file name, with and without ``.md``."""
    name = os.path.basename(path)
    return name.casefold(), name[:-3].casefold()


def names(found: Resolution, wanted: str) -> bool:
    """A backlink: the link names ``wanted``, or names several files and ``wanted`` is one of them."""
    if found.target is not None and found.target.abs_path == wanted:
        return True
    return found.status == AMBIGUOUS and any(t.abs_path == wanted for t in found.candidates)


def _listed(source: str, link: ParsedLink, found: Resolution) -> NoteLink:
    return NoteLink(source, link.line, link.form, link.text, link.target, found.status, link.fragment,
                    found.target.display if found.target is not None else None,
                    tuple(t.display for t in found.candidates), found.problem)
