"""What the index holds, per collection: each file's stat, content hash and chunk points.

``<data-dir>/index/manifests/<collection>.json``. A file is not re-read while its stat matches
the entry: size, ns mtime, ns ctime and inode (the watchdog's rule), and the entry is not
*racy* (read less than the file system's timestamp granularity after its mtime: a rewrite of
the same size in that window would keep every stat field, so a racy entry is hashed again at
the next run). A file whose stat changed is hashed, and only a changed hash means new content. The manifest is written last, after the store: a crash leaves the old
manifest, so the next run redoes that work (point ids are deterministic: no
duplicates). A ``.dirty`` marker, set before the first write to the store and
cleared after the manifest is saved, tells the next run to reconcile the store
with the manifest even when no file changed.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..fsutil.atomic import atomic_write_bytes, atomic_write_text
from ..fsutil.hashing import hash_bytes, hash_file
from ..fsutil.safeopen import FolderSwapped, NotRegularFile, open_regular_in_roots

VERSION = 1


@dataclass(frozen=True)
class FileStat:
    """The stat of the bytes read (from the descriptor they were read through), and whether the
    read came so soon after the mtime that a same-size rewrite could keep all of it (racy)."""

    size: int
    mtime_ns: int
    ctime_ns: int = 0
    inode: int = 0
    racy: bool = False

    def matches(self, f) -> bool:
        """Whether the scanned file ``f`` (a MemoryFile) is known unchanged by its stat alone."""
        return (not self.racy and self.size == f.size and self.mtime_ns == f.mtime_ns and self.ctime_ns == f.ctime_ns
                and self.inode == f.inode)


@dataclass
class FileEntry:
    stat: FileStat
    hash: str
    chunks: list[tuple[str, str]] = field(default_factory=list)  # (point id, chunk hash)

    @property
    def size(self) -> int:
        return self.stat.size

    def to_json(self) -> dict:
        s = self.stat
        return {"size": s.size, "mtimeNs": s.mtime_ns, "ctimeNs": s.ctime_ns, "inode": s.inode, "racy": s.racy,
                "hash": self.hash, "chunks": [list(c) for c in self.chunks]}

    @classmethod
    def from_json(cls, data: dict) -> FileEntry:
        # Entries written before 0.2 have no ctime or inode: they differ from every scan once, are
        # hashed again (nothing is re-embedded when the hash is the same) and saved with them.
        stat = FileStat(int(data["size"]), int(data["mtimeNs"]), int(data.get("ctimeNs", 0)), int(data.get("inode", 0)),
                        bool(data.get("racy", False)))
        return cls(stat, str(data["hash"]), [(str(i), str(h)) for i, h in data["chunks"]])


@dataclass
class Manifest:
    collection: str
    agent: str
    fingerprint: str = ""
    settings_key: str = ""
    model: str = ""
    embed_backend: str = ""
    store_backend: str = ""
    dim: int = 0
    indexed_at: float = 0.0
    files: dict[str, FileEntry] = field(default_factory=dict)

    @property
    def chunk_count(self) -> int:
        return sum(len(f.chunks) for f in self.files.values())

    def json_blocks(self) -> Iterator[bytes]:
        """The manifest as JSON, about a MiB at a time: a large index is saved without a second
        copy of its entries in memory (the peak of ``index`` stays bounded, bench/index_memory.py)."""
        head = {
            "version": VERSION,
            "collection": self.collection,
            "agent": self.agent,
            "fingerprint": self.fingerprint,
            "settingsKey": self.settings_key,
            "model": self.model,
            "embedBackend": self.embed_backend,
            "storeBackend": self.store_backend,
            "dim": self.dim,
            "indexedAt": self.indexed_at,
        }
        block = [json.dumps(head, ensure_ascii=False)[:-1], ', "files": {']
        size = 0
        for n, (path, entry) in enumerate(self.files.items()):
            piece = f"{', ' if n else ''}{json.dumps(path, ensure_ascii=False)}: {json.dumps(entry.to_json(), ensure_ascii=False)}"
            block.append(piece)
            size += len(piece)
            if size >= 1 << 20:
                yield "".join(block).encode("utf-8")
                block, size = [], 0
        block.append("}}\n")
        yield "".join(block).encode("utf-8")


def manifest_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "index" / "manifests"


def load_manifest(data_dir: Path, collection: str) -> Manifest | None:
    """The saved manifest, or None when the collection was never indexed (or the file is unusable)."""
    path = manifest_dir(data_dir) / f"{collection}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != VERSION:
            return None
        return Manifest(
            collection=data["collection"],
            agent=data["agent"],
            fingerprint=data["fingerprint"],
            settings_key=data["settingsKey"],
            model=data["model"],
            embed_backend=data["embedBackend"],
            store_backend=data["storeBackend"],
            dim=int(data["dim"]),
            indexed_at=float(data["indexedAt"]),
            files={p: FileEntry.from_json(f) for p, f in data["files"].items()},
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        # A damaged manifest only costs a reconcile with the store, never wrong results.
        return None


def manifest_damage(data_dir: Path, collection: str) -> str | None:
    """Why the collection's manifest file cannot be used, or None (also when there is none)."""
    path = manifest_dir(data_dir) / f"{collection}.json"
    if not os.path.lexists(path) or load_manifest(data_dir, collection) is not None:
        return None
    return f"its manifest {path} cannot be read"


def save_manifest(data_dir: Path, manifest: Manifest) -> None:
    folder = manifest_dir(data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    manifest.indexed_at = time.time()
    atomic_write_bytes(folder / f"{manifest.collection}.json", manifest.json_blocks())


def delete_manifest(data_dir: Path, collection: str) -> None:
    for suffix in (".json", ".dirty", ".terms.json"):
        try:
            os.unlink(manifest_dir(data_dir) / f"{collection}{suffix}")
        except FileNotFoundError:
            pass


def mark_dirty(data_dir: Path, collection: str) -> None:
    folder = manifest_dir(data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / f"{collection}.dirty", f"{os.getpid()}\n")


def clear_dirty(data_dir: Path, collection: str) -> None:
    try:
        os.unlink(manifest_dir(data_dir) / f"{collection}.dirty")
    except FileNotFoundError:
        pass


def is_dirty(data_dir: Path, collection: str) -> bool:
    return (manifest_dir(data_dir) / f"{collection}.dirty").exists()


@dataclass(frozen=True)
class Diff:
    unchanged: list  # MemoryFile whose stat matches the manifest's (FileStat.matches): not re-read
    suspects: list  # MemoryFile new or with another stat: read and hash to know
    removed: list[str]  # manifest paths no longer scanned


def diff_files(manifest: Manifest | None, files: list) -> Diff:
    """Split scanned files by stat against the manifest; nothing is read here."""
    known = manifest.files if manifest else {}
    unchanged, suspects = [], []
    for f in files:
        entry = known.get(f.path)
        if entry is not None and entry.stat.matches(f):
            unchanged.append(f)
        else:
            suspects.append(f)
    scanned = {f.path for f in files}
    return Diff(unchanged, suspects, sorted(p for p in known if p not in scanned))


@dataclass(frozen=True)
class FileContent:
    """The bytes of a file as read once, with the stat and hash of exactly those bytes."""

    data: bytes
    stat: FileStat
    hash: str

    @property
    def size(self) -> int:
        return self.stat.size


def read_version(abs_path: str, roots: Sequence[str], racy_guard_ns: int) -> FileContent | None:
    """Read a file (no symlinks, FIFOs or devices) from the descriptor of its allowed root
    (``roots``: the workspace and the extra paths), one folder at a time, so a folder swapped for
    a symlink is never read through; None when it vanished or is no longer a regular file.
    ``racy_guard_ns``: the timestamp granularity of the file systems (``watchdog.fsclock``)."""
    started_ns = time.time_ns()
    try:
        fd, st = open_regular_in_roots(roots, abs_path)
    except (FileNotFoundError, NotADirectoryError, NotRegularFile, FolderSwapped, PermissionError):
        return None
    try:
        chunks = []
        while True:
            block = os.read(fd, 1 << 20)
            if not block:
                break
            chunks.append(block)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    racy = started_ns - max(st.st_mtime_ns, st.st_ctime_ns) < racy_guard_ns
    return FileContent(data, FileStat(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, racy), hash_bytes(data))


def stale_paths(manifest: Manifest | None, files: list) -> list[str]:
    """Paths whose content differs from the index (new, edited or removed), hashing only stat suspects."""
    diff = diff_files(manifest, files)
    known = manifest.files if manifest else {}
    stale = list(diff.removed)
    for f in diff.suspects:
        entry = known.get(f.path)
        if entry is None:
            stale.append(f.path)
            continue
        try:
            digest = hash_file(f.abs_path)
        except (FileNotFoundError, NotRegularFile, PermissionError):
            stale.append(f.path)
            continue
        if digest != entry.hash:
            stale.append(f.path)
    return sorted(stale)
