"""The link table: each memory file's links as parsed, kept in the state database (``link_files``,
``links``) and kept current by the index's change rule.

A file is parsed again only when its content changed: while its mode, size, ns times and inode
are those it had when its bytes were hashed (:meth:`~openclaw_memory.database.observations.FileStat.matches`,
a racy sighting excepted) it is not even read; read again, it is not parsed while its hash is the
one its links were parsed from. What a link *names* is not kept: it depends on the other files,
and is worked out when asked (:mod:`.resolve`).

The table is a cache: a state dir that cannot be written (full, read-only, another process writing
now) only means the parse is done again next time; plain ``doctor`` (read-only) writes nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..database import Database, dec, enc, is_read_only
from ..database.observations import FileStat
from ..errors import MemoryToolError
from ..fsutil.fsclock import guard_ns
from ..index.manifest import read_version
from .parse import ParsedLink, parse_note

if TYPE_CHECKING:
    from ..files.scan import MemoryFile
    from ..settings import Settings


class NoteLinks(NamedTuple):
    """What the table holds of one memory file."""

    stat: FileStat  # the file's stat when the bytes parsed were hashed
    hash: str  # xxh3_128 of those bytes
    lines: int
    headings: tuple[str, ...]
    links: tuple[ParsedLink, ...]


class Refreshed(NamedTuple):
    notes: dict[str, NoteLinks]  # by absolute path: every markdown memory file that could be read
    parsed: int  # files parsed this time (new, or their content changed)
    unreadable: tuple[str, ...]  # display paths of files that could not be read (their links are unknown)


def refresh(settings: Settings, files: Iterable[MemoryFile]) -> Refreshed:
    """The links of every Markdown file of ``files`` (a scan), parsing only what changed, and the
    table brought up to date."""
    db = Database(settings.data_dir)
    known = _load(db)
    roots = (str(settings.workspace), *map(str, settings.extra_paths))
    guard = max(guard_ns(Path(root)) for root in roots)
    notes: dict[str, NoteLinks] = {}
    changed: list[tuple[str, NoteLinks, bool]] = []  # (path, record, links changed)
    unreadable: list[str] = []
    parsed = 0
    for f in files:
        if f.kind != "markdown":
            continue
        before = known.get(f.abs_path)
        if before is not None and before.stat.matches(f):
            notes[f.abs_path] = before
            continue
        content = read_version(f.abs_path, roots, guard)
        if content is None:
            unreadable.append(f.path)
            continue
        if before is not None and before.hash == content.hash:
            record = before._replace(stat=content.stat)
            changed.append((f.abs_path, record, False))
        else:
            note = parse_note("" if b"\x00" in content.data else content.data.decode("utf-8", errors="replace"))
            parsed += 1
            record = NoteLinks(content.stat, content.hash, note.lines, tuple(note.headings), tuple(note.links))
            changed.append((f.abs_path, record, True))
        notes[f.abs_path] = record
    gone = [path for path in known if path not in notes and not os.path.lexists(path)]
    _save(db, changed, gone)
    return Refreshed(notes, parsed, tuple(unreadable))


def _load(db: Database) -> dict[str, NoteLinks]:
    links: dict[bytes, list[ParsedLink]] = {}
    for source, line, form, target, fragment, text in db.rows(
            "SELECT source, line, form, target, fragment, text FROM links ORDER BY source, seq"):
        links.setdefault(bytes(source), []).append(ParsedLink(line, form, target, fragment, text))
    out = {}
    for path, mode, size, mtime, ctime, inode, racy, digest, lines, headings in db.rows(
            "SELECT path, mode, size, mtime_ns, ctime_ns, inode, racy, hash, lines, headings FROM link_files"):
        out[dec(path)] = NoteLinks(FileStat(size, mtime, ctime, inode, bool(racy), mode), digest, lines,
                                   tuple(json.loads(headings)), tuple(links.get(bytes(path), ())))
    return out


def _save(db: Database, changed: list[tuple[str, NoteLinks, bool]], gone: list[str]) -> None:
    if is_read_only() or not (changed or gone):
        return
    try:
        with db.transaction(wait=False) as conn:
            for path in gone:
                conn.execute("DELETE FROM link_files WHERE path = ?", (enc(path),))
                conn.execute("DELETE FROM links WHERE source = ?", (enc(path),))
            for path, note, links_changed in changed:
                s = note.stat
                conn.execute("INSERT OR REPLACE INTO link_files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             (enc(path), s.mode, s.size, s.mtime_ns, s.ctime_ns, s.inode, int(s.racy), note.hash,
                              note.lines, json.dumps(note.headings, ensure_ascii=False)))
                if links_changed:
                    conn.execute("DELETE FROM links WHERE source = ?", (enc(path),))
                    conn.executemany("INSERT INTO links VALUES (?, ?, ?, ?, ?, ?, ?)",
                                     [(enc(path), seq, link.line, link.form, link.target, link.fragment, link.text)
                                      for seq, link in enumerate(note.links)])
    except MemoryToolError:
        pass  # only a cache: the files are parsed again next time
