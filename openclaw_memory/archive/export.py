"""``export FILE``: the agent's memory files and their history as one tar archive (gzip).

The memory files are the ones ``files`` lists (Markdown: media files are not carried, the history
never keeps them either), each read from its folder's descriptor, with its permission bits (import
gives them back: a private note stays private). Each file's version as it is now
is recorded in the history first (a sighting, as ``history`` makes), so the archive's history
ends with what the file holds. The history is every version the log holds of a path under the
workspace or an extra path, removed and moved files too, and the stored bytes of each version the
store still has (an evicted one is listed, as ``history`` lists it, without bytes).

The manifest comes first, and names every member's size and xxh3_128 hash before its bytes
follow: each file's bytes are hashed again as they are copied, and a file that changed between
its sighting and its copy stops the export. The archive is written to a temp file beside FILE,
fsynced, then renamed into place (linked, so that a FILE made meanwhile is never replaced unless
``force``); a failure leaves no temp file.
"""

from __future__ import annotations

import bisect
import os
import re
import stat
import tarfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import xxhash

from .. import __version__
from ..errors import MemoryToolError, UsageError, os_error, printable
from ..files.paths import PATH_MAX, absolute_path
from ..files.read import open_resolved, resolve_memory_path
from ..files.scan import scan_workspace
from ..fsutil.atomic import dead_leftovers, temp_stem, unlink_quietly
from ..fsutil.move import link_noreplace
from ..fsutil.private import identity
from ..fsutil.safeopen import as_scanned, open_folder
from ..history.store import FileVersion, HistoryStore, snapshot_fd
from ..history.versions import LoggedRow, iso_time
from ..wire import key
from .manifest import (
    MANIFEST,
    MANIFEST_LIMIT,
    MEMBER_LIMIT,
    PERMISSIONS,
    TOTAL_LIMIT,
    ArchiveManifest,
    FileRecord,
    FolderRecord,
    Member,
    PathHistory,
    Root,
    Version,
    file_member,
    object_member,
)
from .places import place_of, roots_of

if TYPE_CHECKING:
    from ..files.read import ResolvedPath
    from ..settings import Settings


@dataclass(frozen=True)
class ExportResult:
    archive: str  # where it was written (absolute)
    agent: str
    files: tuple[str, ...] = key()  # the memory files it holds, as `files` shows them
    versions: int = key()  # history entries it holds
    objects: int = key()  # stored versions' bytes it holds
    size: int = key()  # the archive's size in bytes
    warnings: tuple[str, ...] = key(omit=lambda r: not r.warnings, default=())  # a file left out (its name)


_BATCH = 256


class _ChangedWhileExported(Exception):
    """A file changed between its sighting and its copy."""


class _TooBig(Exception):
    """A file past the member limit import takes (its size, from the open file's stat)."""


def export_archive(settings: Settings, archive: str, *, force: bool = False) -> ExportResult:
    target = _target(settings, archive, force)
    store = HistoryStore.for_settings(settings)
    files: list[tuple[FileRecord, ResolvedPath, Member]] = []
    scan = scan_workspace(settings, multimodal=False)
    found = [f for f in scan.files if place_of(settings, f.abs_path) is not None]
    # A name with a backslash is no memory path (every command refuses it, and import an archive naming
    # it): the file is left out, said, and the rest exported (it blocked the whole export).
    left_out = [f for f in found if "\\" in (place_of(settings, f.abs_path) or ("", ""))[1]]
    # A note deeper than the system lets a path name (reached by the scan one folder at a time): no
    # command opens it by name, and the whole export was refused without naming it.
    too_long = [f for f in found if len(os.fsencode(f.abs_path)) >= PATH_MAX and f not in left_out]
    found = [f for f in found if f not in left_out and f not in too_long]
    # The sightings in transactions of _BATCH files: one commit (an fsync) each was 5 of the 7.6 s
    # a 1,000-file export took; a batch keeps other writers' wait short.
    too_big: list[tuple[str, int]] = []
    for start in range(0, len(found), _BATCH):
        with store.lock():
            for memory_file in found[start:start + _BATCH]:
                try:
                    seen = _sighting(settings, store, memory_file.abs_path)
                except _TooBig as big:
                    too_big.append(big.args)
                    continue
                if seen is not None:
                    resolved, version, mode = seen
                    place = place_of(settings, resolved.abs_path)
                    assert place is not None
                    name = file_member(*place, resolved.name)
                    files.append((FileRecord(*place, name, mode), resolved, Member(name, version.size, version.version)))
    history: list[PathHistory] = []
    for abs_path in store.log.paths():
        place = place_of(settings, abs_path)
        if place is not None and "\\" not in place[1]:
            history.append(PathHistory(*place, _versions(settings, place, store.log.entries_as_logged(abs_path))))
    sizes = {v.version: v.size for h in history for v in h.versions}
    # A stored version past the member limit (a history configured to keep one that big) is listed
    # without its bytes, as an evicted one is: import refuses a member past it, so the whole archive.
    unstored = sorted(v for v in sizes if sizes[v] > MEMBER_LIMIT and store.objects.has(v))
    stored = sorted(v for v in sizes if sizes[v] <= MEMBER_LIMIT and store.objects.has(v))
    try:
        manifest = ArchiveManifest(
            f"openclaw-memory {__version__}", settings.agent, iso_time(time.time()),
            tuple(Root(*r) for r in roots_of(settings)),
            tuple(m for _, _, m in files) + tuple(Member(object_member(v), sizes[v], v) for v in stored),
            tuple(f for f, _, _ in files), tuple(history), _folders(files))
        _refuse_past_limits(manifest)
        size = _write(target, force, manifest, files, store, stored)
    except _ChangedWhileExported as exc:
        raise MemoryToolError(f"{exc.args[0]} changed while it was exported; nothing was written: try again") from None
    warnings = tuple(f"{f.path} was left out of the archive: its name has a backslash, which no memory path may "
                     "hold (import would refuse the archive): rename it, then export again" for f in left_out)
    warnings += tuple(f"{printable(f.path)} was left out of the archive: its path is {len(os.fsencode(f.abs_path)):,} bytes, "
                      f"past the {PATH_MAX - 1:,} a path may have here (no command reads it by name): move it to a "
                      "shallower folder, then export again" for f in too_long)
    # What the scan skipped, as `files` lists it (a symlinked note: the archive holds no link, and what
    # it points to is no memory file here); an export said "exported 9 memory files" and nothing more.
    warnings += tuple(f"{printable(s.path)} was left out of the archive: {s.reason}" for s in scan.skipped)
    # Import refuses an archive with a member past its limit (it reported success, and the archive was
    # refused whole by every import): the file is left out, said, and the rest exported.
    warnings += tuple(f"{display} was left out of the archive: it is {size:,} bytes, past the {MEMBER_LIMIT:,} a "
                      "file import takes (import would refuse the archive)" for display, size in too_big)
    if unstored:
        warnings += (f"{len(unstored)} stored version(s) past the {MEMBER_LIMIT:,} bytes a member import takes "
                     "are listed without their bytes, as an evicted version is",)
    return ExportResult(target, settings.agent, tuple(r.display for _, r, _ in files),
                        sum(len(h.versions) for h in history), len(stored), size, warnings)


def _refuse_past_limits(manifest: ArchiveManifest) -> None:
    """An archive import would refuse whole for its size is not written: its members past the total,
    or its manifest past the limit on one (each file past the member limit is left out already)."""
    total = sum(m.size for m in manifest.members)
    if total > TOTAL_LIMIT:
        raise UsageError(f"refused: the archive would hold {total:,} bytes of memory files and stored versions, past the "
                         f"{TOTAL_LIMIT:,} import takes (it would refuse the archive whole); nothing was written")
    body = len(manifest.to_bytes())
    if body > MANIFEST_LIMIT:
        raise UsageError(f"refused: the archive's manifest would be {body:,} bytes, past the {MANIFEST_LIMIT:,} import "
                         "takes (it would refuse the archive whole); nothing was written")


def _folders(files: list[tuple[FileRecord, ResolvedPath, Member]]) -> tuple[FolderRecord, ...]:
    """Each folder below a root on the way to an exported file, with its permission bits (each
    opened from its root as the file was, never through a symlink): import makes a missing one
    with them, so a ``0700`` folder's file names stay private."""
    found: dict[tuple[str, str], FolderRecord] = {}
    for record, resolved, _ in files:
        dirs = resolved.parts[:-1]
        for depth in range(1, len(dirs) + 1):
            place = (record.root, "/".join(dirs[:depth]))
            if place in found:
                continue
            try:
                fd = open_folder(resolved.root, dirs[:depth])
            except OSError:
                raise _ChangedWhileExported(resolved.display) from None
            try:
                found[place] = FolderRecord(*place, os.fstat(fd).st_mode & PERMISSIONS)
            finally:
                os.close(fd)
    return tuple(found.values())


def _versions(settings: Settings, place: tuple[str, str], rows: list[LoggedRow]) -> tuple[Version, ...]:
    """A path's entries as the archive carries them: each with the name it was logged under (where
    it is not the path's own: a moved file's earlier entries), a move's source, the version logged
    before it and, for an entry a move brought, how many of the path's entries precede the move
    (ids mean nothing in another history; that order is what a move here compares). Imported, `log`
    and `history` show each entry where it was, and a rollback replays the moves (each was re-filed
    under the file's name now, a move shown from its own name to itself)."""
    workspace = str(settings.workspace)

    def named(display: str | None) -> tuple[str, str] | None:
        found = None if display is None else place_of(settings, absolute_path(display, workspace))
        return None if found is None or "\\" in found[1] else found

    ids = [row.id for row in rows]
    versions = []
    for row in rows:
        name = named(row.display)
        versions.append(Version(*row.entry, mode=_bits(row.mode), name=None if name == place else name,
                                moved_from=named(row.moved_from), previous=row.previous,
                                arrived_by=None if row.arrived_by is None else bisect.bisect_left(ids, row.arrived_by)))
    return tuple(versions)


def _bits(mode: int | None) -> int | None:
    return mode & PERMISSIONS if mode is not None else None


def _sighting(settings: Settings, store: HistoryStore, abs_path: str) -> tuple[ResolvedPath, FileVersion, int] | None:
    """The file's version as it is now, recorded in the history, and its permission bits (None:
    removed since the scan)."""
    resolved = resolve_memory_path(abs_path, str(settings.workspace), settings.extra_paths)
    opened = open_resolved(resolved)
    if opened is None:
        return None
    fd = opened[0]
    try:
        size = os.fstat(fd).st_size
        if size > MEMBER_LIMIT:  # before it is read: a sparse 1 GiB file costs nothing to leave out
            raise _TooBig(resolved.display, size)
        seen = snapshot_fd(fd)
        store.observe(resolved.abs_path, resolved.display, seen, fd=fd)
        return resolved, seen, os.fstat(fd).st_mode & PERMISSIONS
    except OSError as exc:
        raise MemoryToolError(f"cannot read {resolved.display}: {exc.strerror or exc}; nothing was written") from None
    finally:
        os.close(fd)


def _target(settings: Settings, path: str, force: bool) -> str:
    """FILE as an absolute path: its folder must exist, outside what the archive holds; FILE itself
    must not, unless ``force`` (and then be a plain file: the rename would put the archive in place
    of a device, a FIFO or a symbolic link itself, never a folder)."""
    if not path or not path.strip():
        raise UsageError("no archive file given")
    if path == "-":  # a shell's "standard output": the archive is written beside its name and renamed into place
        raise UsageError("export writes a file, not standard output: give the archive a file name (./- for a file named -)")
    target = os.path.abspath(path)
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write {path}: the folder {folder} does not exist")
    _refuse_inside_memory(settings, path, target)
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(f"cannot write {path}: it is a folder; give a file name")
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"cannot write {path}: it is {_kind(st.st_mode)}, which export never replaces; give a file name")
    if not force:
        raise UsageError(f"{path} exists ({st.st_size:,} bytes); give another name, or --force to replace it")
    held = os.stat(folder)
    me = os.geteuid()
    if held.st_mode & stat.S_ISVTX and me != 0 and me not in (st.st_uid, held.st_uid):
        # (it said "cannot write in the folder /tmp: Operation not permitted", of a folder anyone may write in)
        raise UsageError(f"cannot replace {path}: it belongs to another user (uid {st.st_uid}), in a folder where only a "
                         f"file's owner may replace it ({folder}, mode {stat.S_IMODE(held.st_mode):o}); give another name")
    return target


def _refuse_inside_memory(settings: Settings, path: str, target: str) -> None:
    """An archive is written outside what it holds: in the workspace ``--force`` would replace a
    memory file or the agent's other files (AGENTS.md) without a version recorded, and in this
    project's data the history itself (``state.db``). Compared as given and with the symbolic
    links of FILE's folder resolved."""
    real = as_scanned(target)
    places = [("the workspace", str(settings.workspace)), *(("an extra path", str(e)) for e in settings.extra_paths),
              ("openclaw-memory's data", str(settings.data_dir.parent.parent))]
    within = _ancestry(target)
    for name, place in places:
        for root in {place, os.path.realpath(place)}:
            if any(t == root or t.startswith(root.rstrip("/") + "/") for t in (target, real)) or identity(place) in within:
                raise UsageError(f"cannot write {path}: it is inside {name} ({place}), which the archive holds; "
                                 "give a place outside it")


def _ancestry(target: str) -> set[tuple[int, int]]:
    """The identities of FILE (where it exists) and of every folder above it, up to ``/``: a second
    name of the data folder (a bind mount, a container's volume) reaches it under another path, and
    ``--force`` wrote the archive over ``state.db``, the whole history gone (review)."""
    found: set[tuple[int, int]] = set()
    at = target
    while True:
        key = identity(at)
        if key is not None:
            found.add(key)
        up = os.path.dirname(at)
        if up == at:
            return found
        at = up


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a FIFO" if stat.S_ISFIFO(mode) else "a socket"


def _write(target: str, force: bool, manifest: ArchiveManifest, files, store: HistoryStore, stored: list[str]) -> int:
    """The archive, written to a temp file in FILE's folder (through its descriptor), then put in place."""
    where, name = os.path.split(target)
    tmp = f"{temp_stem(name)}.{os.urandom(4).hex()}.tmp"
    try:
        folder = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
        except BaseException:
            os.close(folder)
            raise
    except OSError as exc:
        raise os_error(exc, f"the folder {where}", "nothing was written", folder=where) from None
    _sweep_dead(folder, name, tmp)
    try:
        with os.fdopen(os.dup(fd), "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
            body = manifest.to_bytes()
            tar.addfile(_info(MANIFEST, len(body)), _Bytes(body))
            for _, resolved, member in files:
                _add_file(tar, resolved, member)
            for version in stored:
                data = store.objects.read_bytes(version, use=False)
                if data is None:  # evicted or damaged since the listing
                    raise _ChangedWhileExported(f"the history (version {version[:12]})")
                tar.addfile(_info(object_member(version), len(data)), _Bytes(data))
        os.fsync(fd)
        size = os.fstat(fd).st_size
        if force:
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        else:
            try:
                link_noreplace(folder, tmp, folder, name)
            except FileExistsError:
                raise UsageError(f"{target} was made while the archive was written; nothing was replaced") from None
        os.fsync(folder)
        return size
    except BaseException as exc:
        unlink_quietly(tmp, dir_fd=folder)
        if isinstance(exc, OSError) and not isinstance(exc, MemoryToolError):
            raise os_error(exc, f"the folder {where}", "nothing was written", folder=where) from None
        raise
    finally:
        os.close(fd)
        os.close(folder)




def _sweep_dead(folder: int, name: str, ours: str) -> None:
    """The temp archives of ``name`` that dead exports left beside it (``.NAME.<8 hex>.tmp``: an
    export killed, SIGKILL or a power cut, before it removed its own), removed: a regular file of this
    user's last written more than ten minutes ago. Nothing else is touched: another user's, a link, a
    name of another pattern, one written lately (an export still running)."""
    pattern = re.compile(re.escape(temp_stem(name)) + r"\.[0-9a-f]{8}\.tmp")
    try:
        names = [n for n in os.listdir(folder) if n != ours and pattern.fullmatch(n)]
    except OSError:
        return
    for each, _st in dead_leftovers(folder, names):
        unlink_quietly(each, dir_fd=folder)


def _add_file(tar: tarfile.TarFile, resolved: ResolvedPath, member: Member) -> None:
    opened = open_resolved(resolved)
    if opened is None:
        raise _ChangedWhileExported(resolved.display)
    fd = opened[0]
    try:
        reader = _FileReader(fd)
        try:
            tar.addfile(_info(member.name, member.size), reader)
        except OSError as exc:
            if "unexpected end of data" in str(exc):  # tarfile's words for a file that shrank
                raise _ChangedWhileExported(resolved.display) from None
            raise
        if reader.digest.hexdigest() != member.hash:
            raise _ChangedWhileExported(resolved.display)
    finally:
        os.close(fd)


def _info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime, info.type = size, 0o600, int(time.time()), tarfile.REGTYPE
    return info


class _Bytes:
    """Bytes in hand (the manifest, a stored version: at most the history's largest), as tarfile reads a member's data."""

    def __init__(self, data: bytes):
        self._data, self._at = data, 0

    def read(self, n: int = -1) -> bytes:
        end = len(self._data) if n < 0 else self._at + n
        out, self._at = self._data[self._at:end], min(end, len(self._data))
        return out


class _FileReader:
    """A memory file's bytes from its descriptor (pread: its offset stays), hashed as they go."""

    def __init__(self, fd: int):
        self.fd, self.at, self.digest = fd, 0, xxhash.xxh3_128()

    def read(self, n: int = -1) -> bytes:
        block = os.pread(self.fd, n if n >= 0 else 1 << 20, self.at)
        self.at += len(block)
        self.digest.update(block)
        return block
