"""Search filters: collections, path globs and a date range, turned into the points to search.

Filters are resolved against the manifests (which know every indexed file, its chunks and its
modification time), so the engine searches exactly the allowed points and the candidate pool is
never spent on files that would be dropped afterwards.

- ``collections``: collection names (as ``collections`` lists them);
- ``paths``: globs matched against the path as ``files`` writes it (``*`` also crosses ``/``;
  ``**/`` stands for any folders or none; ``../notes/*.md`` for an extra folder outside the workspace);
  a glob without ``/`` also matches the file's name; an absolute glob is matched against the file's
  absolute path; a file passes when any glob matches;
- ``since`` / ``until`` (inclusive dates): the date of a dated note (``memory/YYYY-MM-DD*.md``),
  else the day the file was last modified (local time).
"""

from __future__ import annotations

import os
import posixpath
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from fnmatch import fnmatchcase
from functools import lru_cache
from itertools import product

from ..database.failures import stat_int
from ..errors import BadValue, UsageError, shown
from ..timezones import local_date
from ..types import no_such_day, typed_day

MAX_GLOB, MAX_GLOBS = 4096, 16384
MAX_GLOBSTARS = 3  # each `**/` of a glob doubles the patterns it is read as
_GLOBSTARS = re.compile(r"(?:\*\*/)+")
DATED = re.compile(r"(?:^|/)memory/(\d{4})-(\d{2})-(\d{2})[^/]*\.md$")


def note_date(path: str) -> date | None:
    """The date in a dated note's name (``memory/2026-11-03.md``, ``memory/2026-11-03-standup.md``)."""
    m = DATED.search(path.replace("\\", "/"))
    if not m:
        return None
    try:
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


@lru_cache(maxsize=256)
def _plain(glob: str) -> str:
    """A relative glob as ``files`` writes paths: without a leading ``./`` (``./memory/*.md`` matched
    nothing, said as "no file of the memory passes --path")."""
    while glob.startswith("./"):
        glob = glob[2:].lstrip("/")
    return glob


def _read_as(glob: str) -> tuple[str, ...]:
    """The fnmatch patterns ``glob`` stands for: each ``**/`` (a run of them is one) as some folders
    (``*/``) or as none, as a globstar is read: fnmatch alone needs a folder there, so
    ``memory/**/*.md`` left out ``memory/notes.md`` and ``**/*.md`` left out ``MEMORY.md``."""
    pieces = _GLOBSTARS.split(glob)
    return tuple("".join(piece + star for piece, star in zip(pieces, (*stars, ""), strict=True))
                 for stars in product(("*/", ""), repeat=len(pieces) - 1))


def parse_day(value: str, name: str) -> date:
    """``YYYY-MM-DD`` as typed (:data:`~openclaw_memory.types.DAY`), as the CLI's date flags take it."""
    try:
        return typed_day(value)
    except ValueError:
        why = no_such_day(value)
        raise BadValue(name, f"must be a date like 2026-11-03, not {shown(value)}{f': {why}' if why else ''}") from None


@dataclass(frozen=True)
class SearchFilters:
    collections: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    since: date | None = None
    until: date | None = None

    @classmethod
    def from_args(cls, collections: Iterable[str] = (), paths: Iterable[str] = (), since: str | None = None,
                  until: str | None = None) -> SearchFilters:
        """The filters as the CLI, MCP and the service take them: names, globs and ``YYYY-MM-DD`` strings."""
        return cls(tuple(collections), tuple(paths), parse_day(since, "since") if since else None,
                   parse_day(until, "until") if until else None)

    def __post_init__(self) -> None:
        if self.since and self.until and self.since > self.until:
            raise BadValue("since", f"{self.since} is after the until date, {self.until}")
        # No path is longer than a glob may be, and reading a glob costs the square of its length
        # ('[' * 100,000 took an MCP search 267 s, a service's thread with it; 4,096 take 0.4 s).
        for glob in self.paths:
            if not glob:  # (`--path "$DIR"` of a variable not set: "Nothing matches" said nothing of why)
                raise BadValue("paths", "must be globs, not an empty one: it matches no file (memory/people/*.md, say)")
            if not _climbs_as_files_writes(glob):  # ("memory/../**" matched nothing, said as a low score)
                raise BadValue("paths", "must be globs of memory paths as `files` writes them, where '..' only leads "
                                        f"(../notes/*.md, an extra folder outside the workspace): {shown(glob)}")
            if len(glob) > MAX_GLOB:
                raise BadValue("paths", f"must be globs of at most {MAX_GLOB} characters (a path's longest), "
                                        f"not one of {len(glob):,}: {shown(glob)}")
        if (total := sum(map(len, self.paths))) > MAX_GLOBS:
            raise BadValue("paths", f"must be globs of at most {MAX_GLOBS:,} characters in all, not {total:,}")
        for glob in self.paths:
            if (count := len(_GLOBSTARS.findall(glob))) > MAX_GLOBSTARS:
                raise BadValue("paths", f"must be globs with at most {MAX_GLOBSTARS} `**/` each, not {count}: {shown(glob)}")

    def check_collections(self, names: list[str]) -> None:
        unknown = [c for c in self.collections if c not in names]
        if unknown:
            # Quoted as given, a few of them, cut short: an agent's 10 MB name came back whole.
            named = ", ".join(shown(c, 60) for c in unknown[:5]) + (f" and {len(unknown) - 5:,} more" if len(unknown) > 5 else "")
            raise UsageError(f"no collection {named} for this agent; its collections: {', '.join(names)}")

    def wants_collection(self, name: str) -> bool:
        return not self.collections or name in self.collections

    def wants_path(self, path: str, workspace: str | os.PathLike[str] | None = None) -> bool:
        """Whether ``path`` (as ``files`` writes it) passes the globs; an absolute glob is matched
        against the file's absolute path, in ``workspace`` (none given: it matches nothing)."""
        return self.path_test(workspace)(path)

    def path_test(self, workspace: str | os.PathLike[str] | None = None) -> Callable[[str], bool]:
        """:meth:`wants_path` for many paths: the absolute globs' folders are read through their links once."""
        if not self.paths:
            return lambda path: True
        relative = [g for glob in self.paths if not os.path.isabs(glob) for g in _read_as(_plain(glob))]
        absolute = [g for glob in self.paths if os.path.isabs(glob) and workspace is not None
                    for g in _read_as(_real_glob(glob))]
        root = os.fspath(workspace).replace(os.sep, "/") if workspace is not None else ""

        def test(path: str) -> bool:
            name = path.rsplit("/", 1)[-1]
            if any(fnmatchcase(path, g) or ("/" not in g and fnmatchcase(name, g)) for g in relative):
                return True
            if absolute:
                full = posixpath.normpath(posixpath.join(root, path))
                return any(fnmatchcase(full, g) for g in absolute)
            return False
        return test

    def may_hold(self, folder: str, workspace: str | os.PathLike[str] | None = None) -> bool:
        """Whether a glob could take some file below ``folder`` (a path as ``files`` writes it): the
        part of the glob before its first wildcard and the folder lie on one line."""
        if not self.paths:
            return True
        for glob in self.paths:
            glob = _plain(glob)
            if "/" not in glob:  # (also a file's name)
                return True
            if os.path.isabs(glob):
                if workspace is None:
                    continue
                glob = _real_glob(glob)
                folder = posixpath.normpath(posixpath.join(os.fspath(workspace).replace(os.sep, "/"), folder))
            fixed = re.split(r"[*?\[]", glob, maxsplit=1)[0]
            below = folder.rstrip("/") + "/"
            if fixed.startswith(below) or below.startswith(fixed):
                return True
        return False

    def wants_day(self, day: date) -> bool:
        return (self.since is None or day >= self.since) and (self.until is None or day <= self.until)

    def by_file(self) -> bool:
        """Whether a path or date filter chooses files (their points are read from the manifests)."""
        return bool(self.paths) or self.since is not None or self.until is not None

    def point_ids(self, manifests: dict, workspace) -> set[str] | None:
        """The point ids of the files that pass (None: no path or date filter, every point)."""
        if not self.by_file():
            return None
        ids: set[str] = set()
        wants_path = self.path_test(workspace)
        for manifest in manifests.values():
            if manifest is None:
                continue
            for path, entry in manifest.files.items():
                if not wants_path(path):
                    continue
                day = note_date(path) or modified_day(entry)
                if day is not None and self.wants_day(day):
                    ids.update(pid for pid, _h in entry.chunks)
        return ids

    @staticmethod
    def today() -> date:
        return local_date(time.time())  # the caller's today, as its days are


def _climbs_as_files_writes(glob: str) -> bool:
    """Whether a glob's ``..`` are only leading ones, before some name, as ``files`` writes a file of an
    extra folder outside the workspace (``../notes/*.md``): a ``..`` inside (``memory/../x``, an absolute
    ``/a/../b``) names no path that is ever written."""
    parts = glob.split("/")
    lead = 0 if os.path.isabs(glob) else next((i for i, part in enumerate(parts) if part != ".."), len(parts))
    return ".." not in parts[lead:] and (lead == 0 or any(parts[lead:]))


def _real_glob(glob: str) -> str:
    """An absolute glob with its leading folders (those before the first wildcard) read through their
    links, as the workspace and the extra paths are (``/tmp`` on macOS is ``/private/tmp``)."""
    parts = glob.split("/")
    fixed = next((i for i, part in enumerate(parts) if any(c in part for c in "*?[")), len(parts))
    if fixed <= 1:
        return glob
    head = os.path.realpath("/".join(parts[:fixed]) or "/").replace(os.sep, "/")
    return "/".join([head.rstrip("/"), *parts[fixed:]]) if fixed < len(parts) else head


def modified_day(entry) -> date | None:
    """The caller's local day an indexed file (a manifest entry) was last modified; None when it is gone.

    From the sighting its indexed content was hashed with; once another part saw newer bytes
    (``state``, the watch, a write before its sync) that sighting is replaced, and the file's own
    stat says it (it was dated 1970: left out of every ``--since``)."""
    if entry.stat is not None:
        mtime_ns = entry.stat.mtime_ns
    else:
        try:
            mtime_ns = stat_int(os.lstat(entry.abs_path).st_mtime_ns)  # a day a date can hold (tmpfs: any time)
        except OSError:
            return None
    return local_date(mtime_ns / 1e9)


def file_dates(manifests: Iterable) -> dict[str, date]:
    """Dated notes of the indexed files, for temporal decay (undated files, MEMORY.md: none)."""
    out: dict[str, date] = {}
    for manifest in manifests:
        if manifest is None:
            continue
        for path in manifest.files:
            day = note_date(path)
            if day is not None:
                out[path] = day
    return out
