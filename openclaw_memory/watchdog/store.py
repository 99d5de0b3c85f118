"""Snapshots in the state database: one row per label, its body a compact columnar table.

A snapshot body is one line of JSON (label, seal, guard, ignore rules, section
sizes, a checksum of the body) followed by a binary body of columns: the paths
joined by NUL, one type letter per entry, the stat fields as 64-bit arrays,
16-byte xxh3-128 digests, and one flag byte per entry. Loading 100,000 entries
is a few array copies and one ``split`` instead of parsing JSON objects.

The ``snapshots`` table orders them oldest first (``seq``); the last one is the baseline. A
save is one transaction, so a crash leaves the previous baseline in force; the body keeps its
checksum, so bytes damaged inside a sound database are still found (``doctor``).
"""

from __future__ import annotations

import errno
import json
import os
import re
import sqlite3
import sys
from array import array
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import xxhash

from ..database import Database, dec, enc
from ..database.failures import stat_int
from ..errors import DiskFull, UsageError, disk_full, os_error, shown
from ..types import typed_moment

if TYPE_CHECKING:
    from ..settings import Settings

FORMAT = "openclaw-memory-snapshot"
VERSION = 1
LABEL_RE = re.compile(r"[A-Za-z0-9._-]{1,100}")
SUFFIX = ".snap"
# Flag bits per entry.
HASHED = 1
RACY = 2
_INT_COLUMNS = ("mode", "size", "mtime", "ctime")


def validate_label(label: str) -> str:
    """A new snapshot's label: one that ``rollback --to`` would also read as a time is refused (it
    took the snapshot without a word, where the time was as likely meant)."""
    if not LABEL_RE.fullmatch(label) or label.startswith("."):
        raise UsageError(
            f"invalid snapshot label {shown(label)}: use 1 to 100 letters, digits, '.', '_' or '-', not starting with '.'"
        )
    try:
        typed_moment(label)
    except ValueError:
        return label
    raise UsageError(f"invalid snapshot label {shown(label)}: it reads as a time, which `rollback --to {label}` would "
                     f"have to tell from the snapshot; give a label that is not a date or time (before-{label})")


def _file_name(label: object) -> str:
    """A damaged row's label as a file name: itself when it is a label a snapshot can have; else (the
    row damaged there too: "../../x", a NUL, 10,000 characters, not text) a name made from its hash,
    so that setting the row aside never writes outside ``damaged/`` nor fails on the name."""
    if isinstance(label, str) and LABEL_RE.fullmatch(label) and not label.startswith("."):
        return label
    return "label-" + xxhash.xxh3_64_hexdigest(str(label).encode("utf-8", "surrogatepass"))


class SnapshotDamaged(UsageError):
    """A snapshot's body is unreadable or corrupt (its checksum fails)."""


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
    git_head: str | None = None  # the HEAD commit of the git work tree holding the workspace
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
        self.mtime.append(stat_int(st.st_mtime_ns))  # within signed 64 bits, as a time past 2262 is not
        self.ctime.append(stat_int(st.st_ctime_ns))
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
            "git_head": self.git_head,
            "count": len(self.paths),
            "byteorder": sys.byteorder,
            "sections": [[name, len(blob)] for name, blob in blobs],
            "checksum": xxhash.xxh3_128_hexdigest(body),
        }
        return json.dumps(header, ensure_ascii=True, separators=(",", ":")).encode() + b"\n" + body

    @classmethod
    def from_bytes(cls, data: bytes, where: str) -> Table:
        header, parts, columns = _sections(data, where)
        text = bytes(parts["paths"]).decode("utf-8", "surrogateescape")
        paths = text.split("\0") if header["count"] else []
        return cls(
            header["label"], header["workspace"], header["taken_at"], header["seal_ns"], header["guard_ns"],
            list(header["ignore"]), paths, bytearray(parts["kinds"]), columns["mode"], columns["size"],
            columns["mtime"], columns["ctime"], columns["ino"], bytearray(parts["digests"]), bytearray(parts["flags"]),
            header.get("git_head"),  # absent from snapshots taken before it was recorded
        )


def check_body(data: bytes, where: str) -> None:
    """Raise SnapshotDamaged where :meth:`Table.from_bytes` would, in its words, without building
    the table (its paths are a string a file): doctor checks every kept snapshot."""
    _sections(data, where)


def _sections(data: bytes, where: str) -> tuple[dict, dict[str, memoryview], dict[str, array]]:
    """A snapshot's header, its body's sections and its integer columns, every one checked: the
    format, the checksum of the body, each column's length against the file count."""
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
        # The paths text.split("\0") gives, counted on the bytes (a NUL byte decodes to "\0" alone).
        listed = bytes(parts["paths"]).count(b"\0") + 1 if count else 0
        if listed != count or any(len(c) != count for c in columns.values()):
            raise ValueError("column lengths disagree")
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise SnapshotDamaged(
            f"snapshot {where} is damaged ({_reason(exc)}); `openclaw-memory doctor --fix` sets it aside "
            "(the previous snapshot becomes the baseline)"
        ) from None
    return header, parts, columns


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
    """The snapshots of one workspace: rows of the state database's ``snapshots`` table, oldest
    first by ``seq``; the last is the baseline. A snapshot is one row and its body one blob, so
    loading the baseline is one read, and saving one is one transaction (a whole one or none)."""

    def __init__(self, data_dir: Path):
        self.data_dir = Path(data_dir)
        self.db = Database(self.data_dir)

    @property
    def path(self) -> Path:
        """Where the snapshots are: the state database."""
        return Path(self.db.path)

    def where(self, label: str) -> str:
        return f"'{label}' in the state database ({self.db.path})"

    def entries(self) -> list[IndexEntry]:
        return [IndexEntry(label, taken_at, count) for label, taken_at, count in
                self.db.rows("SELECT label, taken_at, count FROM snapshots ORDER BY seq")]

    def damaged(self) -> list[tuple[str, str]]:
        """(where, reason) for each snapshot whose body does not load (checked as a load checks it,
        the table not built). Only reads."""
        found: list[tuple[str, str]] = []
        for entry in self.entries():
            try:
                check_body(self._body(entry.label), self.where(entry.label))
            except SnapshotDamaged as exc:
                found.append((self.where(entry.label), exc.message))
        return found

    def rebuild(self, keep: int) -> tuple[list[Path], str | None]:
        """Set aside every snapshot whose body does not load: its bytes are written under
        ``<data dir>/damaged/<stamp>/snapshots/<label>.snap`` (fsynced) before its row is deleted.
        Returns (the files written, the new baseline label)."""
        from ..fsutil.setaside import set_aside_bytes

        moved: list[Path] = []
        with self.db.transaction() as conn:
            for label, body in conn.execute("SELECT label, CAST(body AS BLOB) FROM snapshots ORDER BY seq").fetchall():
                try:
                    Table.from_bytes(bytes(body), self.where(label))
                except SnapshotDamaged:
                    try:
                        moved.append(set_aside_bytes(self.data_dir, f"snapshots/{_file_name(label)}{SUFFIX}", bytes(body)))
                    except OSError as exc:
                        raise os_error(exc, f"the state dir ({self.data_dir})",
                                       "the damaged snapshot was not removed") from None
                    conn.execute("DELETE FROM snapshots WHERE label = ?", (label,))
            _prune(conn, keep)
        return moved, self.latest_label()

    def latest_label(self) -> str | None:
        row = self.db.one("SELECT label FROM snapshots ORDER BY seq DESC LIMIT 1")
        return row[0] if row else None

    # Bodies are read as blobs whatever type the row holds: a body made text (by hand, a bad restore)
    # failed in sqlite3's UTF-8 decoding, exit 1 with the body's bytes in the message, where its
    # checksum says whether it is sound (exit 2, naming doctor --fix).

    def baseline(self) -> Table | None:
        """The newest snapshot (one row read), or None when there is none."""
        row = self.db.one("SELECT label, CAST(body AS BLOB) FROM snapshots ORDER BY seq DESC LIMIT 1")
        return Table.from_bytes(bytes(row[1]), self.where(row[0])) if row else None

    def load(self, label: str) -> Table:
        return Table.from_bytes(self._body(label), self.where(label))

    def _body(self, label: str) -> bytes:
        row = self.db.one("SELECT CAST(body AS BLOB) FROM snapshots WHERE label = ?", (label,))
        if row is None:
            raise SnapshotDamaged(f"snapshot {self.where(label)} is gone; take one with `openclaw-memory watchdog snapshot`")
        return bytes(row[0])

    def save(self, table: Table, keep: int, files: Mapping[str, tuple[str, int]] | None = None,
             max_bytes: int | None = None) -> Path:
        """Store ``table`` as the baseline (a reused label becomes the newest) with ``files`` (path ->
        (version, size): the memory files whose bytes are stored objects), and prune to the newest
        ``keep`` and to ``max_bytes`` of kept content, in one transaction: a full disk leaves the
        previous baseline in force. A file whose object went meanwhile (history's eviction) gets no row."""
        body = table.to_bytes()
        with self.saving() as conn:
            conn.execute("DELETE FROM snapshots WHERE label = ?", (table.label,))
            conn.execute("DELETE FROM snapshot_files WHERE label = ?", (table.label,))
            conn.execute(
                "INSERT INTO snapshots VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM snapshots), ?, ?, ?)",
                (table.label, table.taken_at, len(table), body))
            conn.executemany(
                "INSERT INTO snapshot_files SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM objects WHERE version = ?)",
                [(table.label, enc(path), version, size, version) for path, (version, size) in (files or {}).items()])
            _prune(conn, keep, max_bytes)
        return self.path

    def files(self, label: str) -> dict[str, tuple[str, int]]:
        """What snapshot ``label`` kept of each memory file: path -> (version, size); empty for a
        snapshot taken before content was kept (its hashes still verify)."""
        return {dec(path): (version, size) for path, version, size in
                self.db.rows("SELECT path, version, size FROM snapshot_files WHERE label = ?", (label,))}

    def content_bytes(self) -> int:
        """The compressed bytes of the objects the snapshots keep (each counted once)."""
        row = self.db.one(_CONTENT_BYTES)
        return row[0] if row else 0

    @contextmanager
    def saving(self) -> Iterator[sqlite3.Connection]:
        """The transaction that saves a baseline (with what goes with it: a heartbeat's checkpoint):
        a full disk leaves the previous baseline in force, and says so."""
        try:
            with self.db.transaction() as conn:
                yield conn
        except DiskFull:
            raise disk_full(OSError(errno.ENOSPC, "No space left on device"), f"the state dir ({self.data_dir})",
                            "no snapshot was saved; the previous baseline is unchanged", folder=self.data_dir) from None


# A rollback in progress puts this snapshot's bytes back (rollback.journal): they stay until it is done.
_ROLLBACK_PIN = "SELECT 1 FROM rollback_ops, json_each(rollback_ops.record, '$.pins') AS pin WHERE pin.value = ?"
_CONTENT_BYTES = ("SELECT COALESCE(SUM(stored), 0) FROM objects "
                  "WHERE version IN (SELECT version FROM snapshot_files)")


def _prune(conn: sqlite3.Connection, keep: int, max_bytes: int | None = None) -> None:
    """Keep the newest ``keep`` snapshots, and drop the oldest while their kept content passes
    ``max_bytes`` (the baseline always stays). An object no snapshot keeps any more and no history
    log names goes with the last snapshot that kept it. Only the dropped snapshots' rows are looked
    at (by label, then by version: both indexed), so a save that drops nothing scans nothing."""
    dropped = [label for (label,) in conn.execute(
        "SELECT label FROM snapshots WHERE seq NOT IN (SELECT seq FROM snapshots ORDER BY seq DESC LIMIT ?)",
        (max(keep, 1),))]
    # Rows whose snapshot is gone some other way (a damaged one set aside by `rebuild`).
    dropped += [label for (label,) in conn.execute(
        "SELECT DISTINCT label FROM snapshot_files WHERE label NOT IN (SELECT label FROM snapshots)")]
    unpinned = _drop_snapshots(conn, dropped)
    while max_bytes is not None and conn.execute(_CONTENT_BYTES).fetchone()[0] > max_bytes:
        oldest = conn.execute("SELECT label FROM snapshots WHERE (SELECT COUNT(*) FROM snapshots) > 1 "
                              "ORDER BY seq LIMIT 1").fetchone()
        if oldest is None:
            break
        unpinned |= _drop_snapshots(conn, [oldest[0]])
    for version in unpinned:
        if (conn.execute("SELECT 1 FROM snapshot_files WHERE version = ? LIMIT 1", (version,)).fetchone() is None
                and conn.execute("SELECT 1 FROM versions WHERE version = ? LIMIT 1", (version,)).fetchone() is None
                and conn.execute(_ROLLBACK_PIN, (version,)).fetchone() is None):
            conn.execute("DELETE FROM objects WHERE version = ?", (version,))
            conn.execute("DELETE FROM object_parts WHERE version = ?", (version,))


def _drop_snapshots(conn: sqlite3.Connection, labels: list[str]) -> set[str]:
    """Delete these snapshots and their content rows; returns the versions those rows named."""
    versions: set[str] = set()
    for label in labels:
        versions.update(v for (v,) in conn.execute("SELECT version FROM snapshot_files WHERE label = ?", (label,)))
        conn.execute("DELETE FROM snapshots WHERE label = ?", (label,))
        conn.execute("DELETE FROM snapshot_files WHERE label = ?", (label,))
    return versions


def has_baseline(settings: Settings) -> bool:
    """Whether a snapshot exists for this workspace (here, not in ``snapshot``: doctor asks it on
    every start without importing the comparing modules)."""
    return SnapshotStore(settings.data_dir).latest_label() is not None
