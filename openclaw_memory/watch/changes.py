"""What one sync applied, file by file, read from the agent's manifests before and after it.

The sync reports totals only; the manifests say, per file, its content hash and its chunk
points. A chunk point that is new for a file was either embedded or reused: reused when its
chunk hash was already indexed anywhere for the agent before the sync (the sync looks vectors
up by chunk hash the same way), embedded otherwise. When one file changed, the sync's own
totals are exact and are used as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import printable
from ..index.collections import resolve_collections
from ..index.manifest import FileEntry, load_manifest
from ..wire import key

if TYPE_CHECKING:
    from ..settings import Settings

ADDED, UPDATED, REMOVED, MOVED = "added", "updated", "removed", "moved"


@dataclass(frozen=True)
class FileChange:
    path: str
    action: str  # added | updated | removed | moved (``source`` is where it was)
    version: str | None  # the content hash now indexed; None once removed
    chunks: int  # chunks the file has in the index now
    embedded: int = key("chunksEmbedded")
    reused: int = key("chunksReused")
    removed: int = key("chunksRemoved")  # chunk points deleted
    ms: int = key()  # how long the sync that applied it took
    source: str | None = key("from", omit=lambda c: c.source is None, default=None)  # a move's old path

    def line(self) -> str:
        """The one line ``watch`` prints for it: the names as every listing shows them (a control
        character of a name drove the terminal, a newline split the line)."""
        path = printable(self.path)
        if self.action == REMOVED:
            return f"{path}: removed, {self.removed} chunks removed ({self.ms} ms)"
        if self.action == MOVED:
            return (f"{printable(self.source or '')} -> {path}: moved, {self.embedded} chunks embedded, {self.reused} reused "
                    f"({self.ms} ms)")
        return (
            f"{path}: {self.action}, {self.embedded} chunks embedded, {self.reused} reused, "
            f"{self.removed} removed ({self.ms} ms)"
        )


def indexed_files(settings: Settings) -> dict[str, FileEntry]:
    """Every file the agent's manifests list now, by path."""
    files: dict[str, FileEntry] = {}
    for c in resolve_collections(settings):
        manifest = load_manifest(settings.data_dir, c.name)
        if manifest is not None:
            files.update(manifest.files)
    return files


def applied_changes(before: dict[str, FileEntry], after: dict[str, FileEntry], ms: int, summary=None) -> list[FileChange]:
    """The files whose indexed content differs between ``before`` and ``after``, in path order."""
    known = {h for entry in before.values() for _pid, h in entry.chunks}
    out: list[FileChange] = []
    for path in sorted(set(before) | set(after)):
        old = before.get(path)
        if path not in after:
            out.append(FileChange(path, REMOVED, None, 0, 0, 0, len(before[path].chunks), ms))
            continue
        new = after[path]
        if old is not None and old.hash == new.hash:
            continue
        old_ids = {pid for pid, _h in old.chunks} if old else set()
        fresh = [(pid, h) for pid, h in new.chunks if pid not in old_ids]
        embedded = 0
        for _pid, h in fresh:
            if h not in known:
                embedded += 1
                known.add(h)  # a chunk text repeated in the batch is embedded once
        removed = len(old_ids - {pid for pid, _h in new.chunks})
        out.append(FileChange(path, UPDATED if old else ADDED, new.hash, len(new.chunks), embedded, len(fresh) - embedded, removed, ms))
    if summary is not None and len(out) == 1 and out[0].action != REMOVED:
        only = out[0]
        reused = max(0, only.embedded + only.reused - summary.chunks_embedded)
        out[0] = FileChange(only.path, only.action, only.version, only.chunks, summary.chunks_embedded, reused, summary.chunks_deleted, ms)
    return _moves(out, before)


def _moves(changes: list[FileChange], before: dict[str, FileEntry]) -> list[FileChange]:
    """A file removed and one added with exactly its content, in one sync, is one move (``mv``, a
    rename in a shell): one line naming both paths, not a removal and a new file."""
    gone: dict[str, list[FileChange]] = {}
    for c in changes:
        if c.action == REMOVED:
            gone.setdefault(before[c.path].hash, []).append(c)
    paired: set[str] = set()
    out = []
    for c in changes:
        if c.action == ADDED and gone.get(c.version or ""):
            old = gone[c.version or ""].pop(0)
            paired.add(old.path)
            out.append(FileChange(c.path, MOVED, c.version, c.chunks, c.embedded, c.reused, old.removed, c.ms, old.path))
        else:
            out.append(c)
    return [c for c in out if not (c.action == REMOVED and c.path in paired)]
