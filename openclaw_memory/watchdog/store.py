"""Snapshots on disk: one compact file per label, an index naming the newest.

A snapshot file is one line of JSON (label, seal, guard, ignore rules, section
sizes, a checksum of the body) followed by a binary body of columns: the paths
joined by NUL, one type letter per entry, the stat fields as 64-bit arrays,
16-byte xxh3-128 digests, and one flag byte per entry. Loading 100,000 entries
is a few array copies and one ``split`` instead of parsing JSON objects.

``index.json`` lists the snapshots oldest first; the last one is the baseline.
Files are written atomically (temp, fsync, rename), the snapshot before the
index, so a crash leaves the previous baseline in force. Writers take a lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import xxhash

from ..errors import UsageError, os_error
from ..fsutil.atomic import atomic_write_bytes, atomic_write_text
from ..fsutil.lock import FileLock

FORMAT = "openclaw-memory-snapshot"
VERSION = 1
LABEL_RE = re.compile(r"[A-Za-z0-9._-]{1,100}")
SUFFIX = ".snap"
# Flag bits per entry.
HASHED = 1
RACY = 2
_INT_COLUMNS = ("mode", "size", "mtime", "ctime")


def validate_label(label: str) -> str:
    if not LABEL_RE.fullmatch(label) or label.startswith("."):
        raise UsageError(
            f"invalid snapshot label {label!r}: use 1 to 100 letters, digits, '.', '_' or '-', not starting with '.'"
        )
    return label


class SnapshotDamaged(UsageError):
    """A snapshot file is unreadable or corrupt."""


@dataclass
class Table:
    """A snapshot in memory: parallel columns, one row per entry."""

    label: str
    workspace: str
    taken_at: str
    seal_ns: int
    guard_ns: int
    ignore: list[str]
    paths: list[str]
    kinds: bytearray
    mode: array
    size: array
    mtime: array
    ctime: array
    ino: array
    digests: bytearray  # 16 bytes per row; meaningful where flags & HASHED
    flags: bytearray
    _index: dict[str, int] | None = field(default=None, repr=False)

    @classmethod
    def empty(cls, label: str, workspace: str, taken_at: str, seal_ns: int, guard_ns: int, ignore: list[str]) -> Table:
        return cls(label, workspace, taken_at, seal_ns, guard_ns, ignore, [], bytearray(), array("q"), array("q"),
                   array("q"), array("q"), array("Q"), bytearray(), bytearray())

    def append(self, path: str, kind: str, st: os.stat_result, digest: bytes | None, racy: bool) -> None:
        self.paths.append(path)
        self.kinds.append(ord(kind))
        self.mode.append(st.st_mode)
        self.size.append(st.st_size)
        self.mtime.append(st.st_mtime_ns)
        self.ctime.append(st.st_ctime_ns)
        self.ino.append(st.st_ino)
        self.digests += digest if digest is not None else bytes(16)
        self.flags.append((HASHED if digest is not None else 0) | (RACY if racy else 0))
        self._index = None

    def copy_row(self, other: Table, i: int) -> None:
        """Append row ``i`` of ``other`` unchanged (an entry whose stat still matches)."""
        self.paths.append(other.paths[i])
        self.kinds.append(other.kinds[i])
        self.mode.append(other.mode[i])
        self.size.append(other.size[i])
        self.mtime.append(other.mtime[i])
        self.ctime.append(other.ctime[i])
        self.ino.append(other.ino[i])
        self.digests += other.digests[16 * i : 16 * i + 16]
        self.flags.append(other.flags[i])
        self._index = None

    @property
    def index(self) -> dict[str, int]:
        if self._index is None:
            self._index = dict(zip(self.paths, range(len(self.paths))))
        return self._index

    def __len__(self) -> int:
        return len(self.paths)

    def digest(self, i: int) -> bytes | None:
        return bytes(self.digests[16 * i : 16 * i + 16]) if self.flags[i] & HASHED else None

    def racy(self, i: int) -> bool:
        return bool(self.flags[i] & RACY)

    def to_bytes(self) -> bytes:
        blobs = [
            ("paths", "\0".join(self.paths).encode("utf-8", "surrogateescape")),
            ("kinds", bytes(self.kinds)),
            *((name, getattr(self, name).tobytes()) for name in _INT_COLUMNS),
            ("ino", self.ino.tobytes()),
            ("digests", bytes(self.digests)),
            ("flags", bytes(self.flags)),
        ]
        body = b"".join(blob for _, blob in blobs)
        header = {
            "format": FORMAT,
            "version": VERSION,
            "label": self.label,
            "workspace": self.workspace,
            "taken_at": self.taken_at,
            "seal_ns": self.seal_ns,
            "guard_ns": self.guard_ns,
            "ignore": self.ignore,
            "count": len(self.paths),
            "byteorder": sys.byteorder,
            "sections": [[name, len(blob)] for name, blob in blobs],
            "checksum": xxhash.xxh3_128_hexdigest(body),
        }
        return json.dumps(header, ensure_ascii=True, separators=(",", ":")).encode() + b"\n" + body

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> Table:
        newline = data.find(b"\n")
        try:
            header = json.loads(data[:newline])
            if header.get("format") != FORMAT or header.get("version") != VERSION:
                raise ValueError("not a snapshot of this version")
            body = memoryview(data)[newline + 1 :]
            if xxhash.xxh3_128_hexdigest(body) != header["checksum"]:
                raise ValueError("checksum mismatch")
            parts: dict[str, memoryview] = {}
            offset = 0
            for name, length in header["sections"]:
                parts[name] = body[offset : offset + length]
                offset += length
            count = header["count"]
            columns = {}
            for name, code in (*((n, "q") for n in _INT_COLUMNS), ("ino", "Q")):
                column = array(code)
                column.frombytes(parts[name])
                if header["byteorder"] != sys.byteorder:
                    column.byteswap()
                columns[name] = column
            text = bytes(parts["paths"]).decode("utf-8", "surrogateescape")
            paths = text.split("\0") if count else []
            if len(paths) != count or any(len(c) != count for c in columns.values()):
                raise ValueError("column lengths disagree")
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise SnapshotDamaged(
                f"snapshot {where} is damaged ({_reason(exc)}); `openclaw-memory doctor --fix` sets it aside "
                "(the previous snapshot becomes the baseline)"
            ) from None
        return cls(
            header["label"], header["workspace"], header["taken_at"], header["seal_ns"], header["guard_ns"],
            list(header["ignore"]), paths, bytearray(parts["kinds"]), columns["mode"], columns["size"],
            columns["mtime"], columns["ctime"], columns["ino"], bytearray(parts["digests"]), bytearray(parts["flags"]),
        )


def _reason(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 at byte {exc.start}"
    if isinstance(exc, KeyError):
        return f"no {exc.args[0]!r} field"
    return str(exc) or type(exc).__name__


@dataclass(frozen=True)
class IndexEntry:
    label: str
    taken_at: str
    count: int


class SnapshotStore:
    """The snapshots of one workspace, under ``<data dir>/snapshots``."""

    def __init__(self, data_dir: Path):
        self.folder = data_dir / "snapshots"
        self.index_path = self.folder / "index.json"

    def lock(self) -> FileLock:
        return FileLock(str(self.folder / ".lock"), timeout=5.0, what="the watchdog snapshots of this workspace")

    def entries(self) -> list[IndexEntry]:
        try:
            raw = self.index_path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise SnapshotDamaged(f"cannot read {self.index_path}: {exc.strerror}") from None
        try:
            entries = [IndexEntry(e["label"], e["taken_at"], e["count"]) for e in json.loads(raw.decode("utf-8"))["snapshots"]]
            if not all(isinstance(e.label, str) and LABEL_RE.fullmatch(e.label) and isinstance(e.count, int) for e in entries):
                raise ValueError("an entry is malformed")
        except (ValueError, KeyError, TypeError) as exc:  # UnicodeDecodeError is a ValueError
            raise SnapshotDamaged(
                f"the watchdog's snapshot list {self.index_path} is damaged ({_reason(exc)}); "
                "`openclaw-memory doctor --fix` rebuilds it from the snapshot files"
            ) from None
        return entries

    def snapshot_files(self) -> list[Path]:
        try:
            return sorted(p for p in self.folder.iterdir() if p.name.endswith(SUFFIX) and not p.name.startswith("."))
        except FileNotFoundError:
            return []

    def damaged(self) -> list[tuple[Path, str]]:
        """(file, reason) for the snapshot list and each snapshot file that cannot be used. Only reads."""
        found: list[tuple[Path, str]] = []
        try:
            listed = {e.label for e in self.entries()}
        except SnapshotDamaged as exc:
            found.append((self.index_path, exc.message))
            listed = None
        for path in self.snapshot_files():
            label = path.name[: -len(SUFFIX)]
            if listed is not None and label not in listed:
                continue  # left by a save that crashed before the list: never the baseline
            try:
                self.load(label)
            except SnapshotDamaged as exc:
                found.append((path, exc.message))
        if listed:
            present = {p.name[: -len(SUFFIX)] for p in self.snapshot_files()}
            missing = sorted(listed - present)
            if missing:
                found.append((self.index_path, f"the snapshot list names {len(missing)} snapshot file(s) that are gone ({missing[0]})"))
        return found

    def rebuild(self, data_dir: Path, keep: int) -> tuple[list[Path], str | None]:
        """Set aside every damaged snapshot (and a damaged list), then rewrite the list from the
        snapshot files that load, oldest first. Returns (what was set aside, the new baseline label).
        Call under ``lock()``."""
        from ..fsutil.setaside import set_aside

        moved: list[Path] = []
        try:
            listed = [e.label for e in self.entries()]
        except SnapshotDamaged:
            listed = None
            moved.append(set_aside(data_dir, self.index_path) or self.index_path)
        tables = []
        for path in self.snapshot_files():
            label = path.name[: -len(SUFFIX)]
            if listed is not None and label not in listed:
                continue
            try:
                tables.append(self.load(label))
            except SnapshotDamaged:
                moved.append(set_aside(data_dir, path) or path)
        tables.sort(key=lambda t: (t.taken_at, t.label))
        kept = tables[-keep:]
        doc = {"snapshots": [{"label": t.label, "taken_at": t.taken_at, "count": len(t)} for t in kept]}
        atomic_write_text(self.index_path, json.dumps(doc, ensure_ascii=True, indent=1) + "\n", 0o600)
        return moved, kept[-1].label if kept else None

    def latest_label(self) -> str | None:
        entries = self.entries()
        return entries[-1].label if entries else None

    def path_of(self, label: str) -> Path:
        return self.folder / (label + SUFFIX)

    def load(self, label: str) -> Table:
        path = self.path_of(label)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise SnapshotDamaged(
                f"snapshot {path} is listed but gone; `openclaw-memory doctor --fix` rebuilds the snapshot list"
            ) from None
        except OSError as exc:
            raise SnapshotDamaged(f"cannot read snapshot {path}: {exc.strerror}") from None
        return Table.from_bytes(data, str(path))

    def save(self, table: Table, keep: int) -> Path:
        """Write ``table`` and make it the baseline; prune to the newest ``keep``. Call under ``lock()``.

        A full disk (or any write error) raises a typed error before the index names the
        new table: the previous baseline stays the baseline, and no temp file is left.
        """
        path = self.path_of(table.label)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, table.to_bytes(), 0o600)
            entries = [e for e in self.entries() if e.label != table.label]
            entries.append(IndexEntry(table.label, table.taken_at, len(table)))
            kept, dropped = entries[-keep:], entries[:-keep]
            doc = {"snapshots": [{"label": e.label, "taken_at": e.taken_at, "count": e.count} for e in kept]}
            atomic_write_text(self.index_path, json.dumps(doc, ensure_ascii=True, indent=1) + "\n", 0o600)
        except OSError as exc:
            with contextlib.suppress(OSError):
                path.unlink()  # written, but never named by the index: not a snapshot
            raise os_error(exc, f"the state dir ({self.folder})", "no snapshot was saved; the previous baseline is unchanged") from None
        for entry in dropped:
            try:
                self.path_of(entry.label).unlink()
            except FileNotFoundError:
                pass
        return path
