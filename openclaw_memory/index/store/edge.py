"""Qdrant Edge, the Qdrant engine in-process: one shard folder per collection.

Layout under ``<data-dir>/index``: ``edge/<collection>/`` (the shard: WAL and
segments) and ``locks/<collection>.lock``. The engine lets one process open a
shard at a time (a second open fails deep in the WAL), so every open takes the
collection's file lock first: a second process waits, says who holds it, and
gives up with a clear message instead of an engine error.

Inside one process, threads share the open shards through the store's :class:`ReadView`:
searches read side by side, and what changes the state they read (a sync's commit, closing or
swapping a shard) waits for the searches in flight and has the shards alone, briefly. The
engine lets readers query a shard while it optimizes it (``optimize`` releases the GIL and
the engine keeps every segment readable, measured with reader threads against an optimizing
writer: no panic, no inconsistent count); its updates hold the GIL, so each one is whole, but
a file's new chunks and the removal of its old ones are two updates: the view keeps searches
from seeing the state between them.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from ...database import Database, is_read_only
from ...errors import DiskFull, IndexDamaged, MemoryToolError, is_out_of_memory, limit_reached, out_of_memory
from ...fsutil.exchange import AT_FDCWD, exchange
from ...fsutil.lock import FileLock, read_only_mount
from ...fsutil.private import make_dirs
from ...fsutil.space import free_bytes
from ...fsutil.sparse import copy_sparse_tree
from .base import AGENT_FIELD, PATH_FIELD, TERMS_FIELD, WaitCallback, folder_bytes
from .edge_shard import LOAD_ROOM, EdgeShard, engine_config, ensure_room, is_engine_failure, load_engine
from .view import ReadView

if TYPE_CHECKING:
    pass

PROBE_TIMEOUT_S = 300.0

# Run in a child process: a damaged shard can make the engine abort (SIGABRT) instead of
# raising, which would take the whole command down. The child loads the shard and reads
# every part a command reads (count, the path facet, each point's payload and vector, a
# dense and a full-text query), then prints what a parent checks against the manifest: the
# counts, and the digest of which points it holds (_points_digest, computed the same way).
_PROBE = r"""
import hashlib, json, math, sys
import qdrant_edge as qe
path = sys.argv[1]
with open(path + "/edge_config.json", encoding="utf-8") as fh:
    dim = int(json.load(fh)["vectors"]["dense"]["size"])
shard = qe.EdgeShard.load(path)
count = int(shard.count(qe.CountRequest(exact=True)))
facet = sum(int(h.count) for h in shard.facet(qe.FacetRequest("path", limit=1 << 30, exact=True)))
bad = seen = 0
offset = None
held = []
while True:
    points, offset = shard.scroll(qe.ScrollRequest(offset=offset, limit=1024, with_payload=True, with_vector=True))
    for p in points:
        seen += 1
        held.append(f"{p.id}\0{(p.payload or {}).get('hash')}")
        v = p.vector["dense"] if isinstance(p.vector, dict) else p.vector
        norm = math.sqrt(sum(x * x for x in v)) if v else 0.0
        if not (p.payload and isinstance(p.payload.get("path"), str)) or abs(norm - 1.0) > 1e-3:
            bad += 1
            continue
        # A chunk's body is exactly its lines: a start, an end or a body changed in place (the
        # payload pages hold no checksum) would cite other lines than the snippet shows.
        body, first, last = p.payload.get("body"), p.payload.get("startLine"), p.payload.get("endLine")
        if isinstance(body, str) and not (isinstance(first, int) and isinstance(last, int)
                                          and 1 <= first <= last and body.count("\n") == last - first):
            bad += 1
    if offset is None:
        break
shard.query(qe.QueryRequest(limit=1, query=qe.Query.Nearest([1.0] + [0.0] * (dim - 1), using="dense"), with_payload=True))
shard.query(qe.QueryRequest(limit=1, query=qe.TextQuery("terms", "memory"), with_payload=True))
shard.close()
held.sort()
digest = hashlib.blake2b("\n".join(held).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()
print(json.dumps({"count": count, "facet": facet, "seen": seen, "bad": bad, "digest": digest}))
"""


def _points_digest(points: list[tuple[str, str]]) -> str:
    """The digest of a set of points, each its (point id, chunk hash), as ``_PROBE`` computes it of
    a shard's points (their id and payload ``hash``): sorted, as the engine scrolls them in its
    own order."""
    import hashlib

    held = sorted(f"{pid}\0{h}" for pid, h in points)
    return hashlib.blake2b("\n".join(held).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


class EdgeStore:
    """Shards of Qdrant Edge under one folder; threads share them through :attr:`view`."""

    backend = "edge"

    def __init__(self, root: Path, *, lock_timeout: float = 5.0, on_wait: WaitCallback | None = None, keep_open: bool = False):
        self.root = Path(root)
        self.lock_timeout = lock_timeout
        self.on_wait = on_wait
        # A long-lived process (MCP server, benchmark) may keep shards open between calls:
        # it then holds their locks until close().
        self.keep_open = keep_open
        self._open: dict[str, tuple[EdgeShard, FileLock]] = {}
        # On a state dir mounted read-only the engine cannot open a shard in place (its load writes
        # some of its files): each shard opened is a private copy in the temporary folder, by name.
        self._copies: dict[str, str] = {}
        self.view = ReadView()
        self._loading = threading.RLock()  # one thread loads (or probes) a shard at a time
        # A resident process (the service) whose own threads search these shards: a shard being
        # copied stays open for them. Elsewhere it is closed for the copy, so that other
        # processes can open it meanwhile.
        self.serving = False

    def shard_path(self, name: str) -> Path:
        return self.root / "edge" / name

    def _lock(self, name: str) -> FileLock:
        # readable: on a state dir mounted read-only, a search opens a copy of the shard under it
        return FileLock(str(self.root / "locks" / f"{name}.lock"), timeout=self.lock_timeout, what=f"index collection {name}",
                        readable=True)

    def exists(self, name: str) -> bool:
        return (self.shard_path(name) / "edge_config.json").is_file()

    def names(self) -> list[str]:
        folder = self.root / "edge"
        try:
            return sorted(e.name for e in os.scandir(folder) if e.is_dir() and not e.name.startswith("."))
        except FileNotFoundError:
            return []

    def disk_usage(self, name: str) -> int:
        return folder_bytes(self.shard_path(name))

    def check(self, name: str, expected: int | None = None, *, record: bool = True) -> str | None:
        """``damage`` under the shard's lock, so no process opens the shard while the probe has it.

        ``record=False`` (plain ``doctor``) takes only a shared lock, writing nothing; when a
        writer holds the shard past the timeout it is not checked now (None).
        """
        if not self.shard_path(name).is_dir():
            return None
        if name in self._open:
            return None  # this process loaded it (probed then) and holds its lock: nobody else has written it
        if record:
            with self._loading:  # a search of this process that opens it meanwhile waits here, not on the file lock
                if name in self._open:
                    return None
                lock = self._acquire(name)
                try:
                    return self.damage(name, expected)
                finally:
                    lock.release()
        with _shared_lock(str(self.root / "locks" / f"{name}.lock"), self.lock_timeout) as held:
            return self.damage(name, expected, record=False) if held else None

    def damage(self, name: str, expected: int | None = None, *, record: bool = True) -> str | None:
        """Why the shard ``name`` cannot be trusted, or None when it is sound.

        Probed in a child process (see ``_PROBE``) unless its files are exactly as a process of
        ours last left them (their stat is recorded after each close), so a healthy shard is not
        probed again on every command. ``expected`` is the number of points its manifest lists.
        ``record=False`` writes nothing (plain ``doctor``). Call with the shard's lock held, or
        with nobody writing it.
        """
        return self._checked(name, expected, record=record)[0]

    def _checked(self, name: str, expected: int | None, *, record: bool = True,
                 copy: Path | None = None) -> tuple[str | None, int | None]:
        """:meth:`damage`'s answer, and the points a sound shard holds (as recorded with the stat
        its files still have, or as probed): a shard opened after it need not count them again.
        ``copy``: a private copy of the shard already made (a read-only state dir's), probed in
        place of another one."""
        key = self._stat_key(name)
        recorded = self._recorded(name)
        if key is not None and recorded is not None and recorded[0] == key:
            if expected is None or recorded[1] == expected:
                return None, recorded[1]
            return f"it holds {recorded[1]} points where its manifest lists {expected}", None
        reason, count = self._probe(name, expected) if copy is None else self._probe_copy(name, copy, expected)
        if reason is None and record:
            # The stat the probe left: its load rewrites some of the engine's files, and the stat
            # taken before it would send every later command that opens no shard (a no-op
            # `index`, doctor) to probe again. Nobody else writes it meanwhile: we hold its lock.
            self._record(name, self._stat_key(name), count)
        return reason, (count if reason is None else None)

    def _probe(self, name: str, expected: int | None) -> tuple[str | None, int]:
        path = self.shard_path(name)
        if not (path / "edge_config.json").is_file():
            return "its configuration file edge_config.json is missing", 0
        if not read_only_mount(self.root):
            return self._probe_at(name, path, expected)
        # The engine's load writes to the folder it opens: in place on a read-only mount it fails
        # ("Read-only file system"), which says nothing of the shard. Probe what a search there
        # loads, a private copy (see _load_copy). A copy that does not fit in the temporary folder
        # says so (MemoryToolError): the shard is not checked, not damaged.
        try:
            folder = self._copy_out(name, "checked")
        except OSError as exc:  # a file of the shard that cannot be read: the engine could not load it either
            return f"its files cannot be read ({exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''})", 0
        try:
            return self._probe_copy(name, folder / "shard", expected)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _probe_copy(self, name: str, copy: Path, expected: int | None) -> tuple[str | None, int]:
        """:meth:`_probe_at` of a private copy of the shard ``name``, naming the shard, not the copy."""
        try:
            reason, count = self._probe_at(name, copy, expected)
        except DiskFull:  # the engine's writes to the copy ran the temporary folder out (SIGBUS)
            raise MemoryToolError(self._no_room(name, "checked")) from None
        return (reason.replace(str(copy), str(self.shard_path(name))) if reason is not None else None), count

    def _probe_at(self, name: str, path: Path, expected: int | None) -> tuple[str | None, int]:
        """:meth:`_probe` of the shard ``name``'s files at ``path`` (its folder, or a copy of it)."""
        import signal
        import subprocess
        import sys

        proc = subprocess.Popen(  # -P: with -c, the current folder (a json.py in it) came first on the module path
            [sys.executable, "-P", "-c", _PROBE, str(path)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + PROBE_TIMEOUT_S
        while True:
            try:
                stdout, stderr = proc.communicate(timeout=0.5)
                break
            except subprocess.TimeoutExpired as exc:
                # The child has our limits: where the engine cannot allocate (`prlimit --as`) it says
                # "memory allocation of N bytes failed" and hangs, which was taken for damage after 300 s.
                said = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
                if is_out_of_memory(said) or time.monotonic() >= deadline:
                    proc.kill()
                    proc.communicate()
                    if is_out_of_memory(said):
                        raise MemoryToolError(f"index collection {name} cannot be checked: {out_of_memory()}") from None
                    return f"the engine did not load it within {PROBE_TIMEOUT_S:g} s", 0
        if proc.returncode == -signal.SIGBUS:
            ensure_room(path)  # a full disk, not a damaged shard
        if proc.returncode != 0 and is_out_of_memory(stderr):  # nor memory run out: a rebuild needs as much
            raise MemoryToolError(f"index collection {name} cannot be checked: {out_of_memory()}")
        if proc.returncode < 0:
            try:
                signame = signal.Signals(-proc.returncode).name
            except ValueError:
                signame = f"signal {-proc.returncode}"
            return f"the engine aborts on it ({signame})", 0
        if proc.returncode != 0:
            lines = [line for line in stderr.strip().splitlines() if line.strip()]
            return "the engine cannot load it: " + (lines[-1][-300:] if lines else f"exit status {proc.returncode}"), 0
        try:
            facts = json.loads(stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return "the engine's probe printed nothing usable", 0
        if facts["bad"]:
            return f"{facts['bad']} of its {facts['seen']} points have a damaged vector or payload", 0
        if facts["seen"] != facts["count"] or facts["facet"] != facts["count"]:
            return f"its parts disagree ({facts['count']} points counted, {facts['seen']} readable, {facts['facet']} in the path index)", 0
        if expected is not None and facts["count"] != expected:
            return f"it holds {facts['count']} points where its manifest lists {expected}", 0
        # As many points, but are they the ones listed? An index folder restored from a backup, or
        # another workspace's shard copied in, holds other chunks' text (a point id is derived from
        # its collection, path and chunk hash: sync.point_id), which a search would cite as this
        # workspace's lines. The probe is rare (only after the shard's files changed outside our
        # processes) and reads every point anyway, so the manifest's side is computed from its
        # rows now (~30 ms at 8,000 points, beside ~1 s for the probe) rather than kept at every commit.
        if expected is not None:
            from ..manifest import manifest_points

            listed = manifest_points(self.root.parent, name)
            if listed is not None and _points_digest(listed) != facts["digest"]:
                return "its points are not the ones its manifest lists: an older copy of it, or another workspace's", 0
        return None, int(facts["count"])

    def _stat_key(self, name: str) -> str | None:
        import xxhash

        root = str(self.shard_path(name))
        skip = len(root) + 1  # the path below the shard's folder (os.path.relpath: a third of a write's key at 9 segments)
        rows = []
        for folder, dirs, files in os.walk(root):
            dirs.sort()
            for f in sorted(files):
                full = os.path.join(folder, f)
                try:
                    st = os.lstat(full)
                except FileNotFoundError:
                    continue
                rows.append(f"{full[skip:]}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}")
        return xxhash.xxh3_128_hexdigest("\n".join(rows).encode("utf-8", "surrogateescape")) if rows else None

    def _probes(self) -> Database:
        return Database(self.root.parent)  # the data dir's state database (the store lives in <data dir>/index)

    def _recorded(self, name: str) -> tuple[str, int] | None:
        """(stat key, point count) recorded when a process of ours last closed the shard."""
        try:
            row = self._probes().one("SELECT key, count FROM probes WHERE collection = ?", (name,))
        except MemoryToolError:
            return None  # only a cache: the shard is probed
        return (str(row[0]), int(row[1])) if row else None

    def _record(self, name: str, key: str | None, count: int) -> None:
        if key is None or is_read_only():  # plain doctor writes nothing
            return
        try:
            with self._probes().transaction(wait=False) as conn:
                conn.execute("INSERT OR REPLACE INTO probes VALUES (?, ?, ?)", (name, key, count))
        except MemoryToolError:
            pass  # only a cache: without it the next command probes again

    def _forget_key(self, name: str) -> None:
        if is_read_only():
            return
        try:
            with self._probes().transaction(wait=False) as conn:
                conn.execute("DELETE FROM probes WHERE collection = ?", (name,))
        except MemoryToolError:
            pass  # a record that stays names files that changed since: it no longer matches

    def drop(self, name: str) -> None:
        with self.view.writing():
            self._close_one(name)
            lock = self._acquire(name)
            try:
                shutil.rmtree(self.shard_path(name), ignore_errors=True)
                self._forget_key(name)
            finally:
                lock.release()

    # -- building beside the live shard -------------------------------------------------------

    def _stage_prefix(self, name: str) -> str:
        return f".stage-{name}-"

    def stage(self, name: str, dim: int, *, copy: bool) -> str:
        """A shard beside ``name`` to build into (a copy of it, or empty); returns its name.

        Searches keep using ``name`` meanwhile; :meth:`publish` swaps the two. The copy is
        taken under ``name``'s lock (the engine's files are at rest) and keeps their holes:
        the engine's files are sparse, so only the bytes in use are copied. A shard this store
        keeps open stays open and searchable: its engine writes its state to disk first, and
        nothing writes it during the copy (its file lock is ours; the caller holds the agent's
        sync lock), so the copy is what a reload would find.
        """
        staged = f"{self._stage_prefix(name)}{os.getpid()}"
        target = self.shard_path(staged)
        shutil.rmtree(target, ignore_errors=True)
        if not copy:
            self._create(staged, dim)
            self._record(staged, self._stat_key(staged), 0)
            return staged
        if self.serving and self.keep_open and name not in self._open:
            with self.open(name):
                pass  # kept open: searches use it while it is copied
        held = self._open.get(name) if self.serving else None
        if held is not None and not held[0].closed:
            shard = held[0]
            with self.view.reading():
                shard.flush()
                copy_sparse_tree(self.shard_path(name), target)
                self._record(staged, self._stat_key(staged), shard.count())
            return staged
        with self.view.writing():
            self._close_one(name)
            lock = self._acquire(name)
        try:
            copy_sparse_tree(self.shard_path(name), target)
            recorded = self._recorded(name)
        finally:
            lock.release()
        if recorded is not None:
            self._record(staged, self._stat_key(staged), recorded[1])
        return staged

    def publish(self, staged: str, name: str) -> None:
        """Swap the built shard in place of ``name`` in one step, under ``name``'s lock.

        This process's searches wait for the swap only: closing the old shard, the rename, and
        loading the new one where the store keeps shards open; the old files are removed after.
        """
        self._close_one(staged)  # nobody searches it
        previous: Path | None = None
        with self.view.writing():
            reopen = self.serving and name in self._open
            self._close_one(name)
            recorded = self._recorded(staged)
            lock = self._acquire(name)
            try:
                final, built = self.shard_path(name), self.shard_path(staged)
                if final.exists():
                    if not exchange(AT_FDCWD, str(built), str(final)):
                        old = final.parent / f".old-{name}-{os.getpid()}"
                        os.rename(final, old)
                        os.rename(built, final)
                        built = old
                    previous = built  # now the previous shard
                else:
                    os.rename(built, final)
                if recorded is not None:
                    self._record(name, recorded[0], recorded[1])  # the stat of the files moves with them
                else:
                    self._forget_key(name)
            finally:
                lock.release()
            if reopen:
                with self.open(name):
                    pass
        if previous is not None:
            shutil.rmtree(previous, ignore_errors=True)
        self._forget_stage(staged)

    def discard_stages(self, name: str) -> None:
        """Remove what a killed or failed build of ``name`` left beside it. Call under the agent's sync lock."""
        prefix = self._stage_prefix(name)
        folder = self.root / "edge"
        try:
            entries = [e.name for e in os.scandir(folder) if e.name.startswith((prefix, f".old-{name}-", f".{name}."))]
        except FileNotFoundError:
            return
        for entry in entries:
            self._close_one(entry)
            shutil.rmtree(folder / entry, ignore_errors=True)
            if entry.startswith(prefix):
                self._forget_stage(entry)

    def _forget_stage(self, staged: str) -> None:
        self._forget_key(staged)
        try:
            os.unlink(self.root / "locks" / f"{staged}.lock")
        except FileNotFoundError:
            pass

    def _acquire(self, name: str) -> FileLock:
        lock = self._lock(name)
        on_wait = self.on_wait
        lock.acquire(on_wait=(lambda pid: on_wait(f"index collection {name}", pid)) if on_wait else None)
        return lock

    @contextmanager
    def open(self, name: str, dim: int | None = None, *, keep: bool = True) -> Iterator[EdgeShard]:
        """The shard ``name``, read (or written) inside the block under :attr:`view` (``keep``: see
        :meth:`VectorStore.open`)."""
        keep = keep and self.keep_open
        with self.view.reading():
            held = self._open.get(name)
            if held is not None:
                yield held[0]
                return
            with self._loading:
                held = self._open.get(name)  # another thread may have loaded it meanwhile
                if held is None:
                    lock = self._acquire(name)
                    try:
                        engine, size, count = self._load_or_create(name, dim)
                        shard = EdgeShard(name, self.shard_path(name), engine, size, view=self.view, count=count)
                    except BaseException:
                        lock.release()
                        raise
                    if keep:
                        self._open[name] = (shard, lock)
            if held is not None or keep:
                yield held[0] if held is not None else shard
                return
            try:
                yield shard
            finally:
                try:
                    self._close_and_record(name, shard)
                finally:
                    lock.release()

    @contextmanager
    def held(self):
        """Keep shards opened inside this block open until it ends (one load instead of several)."""
        if self.keep_open:
            yield
            return
        self.keep_open = True
        before = set(self._open)
        try:
            yield
        finally:
            self.keep_open = False
            for name in [n for n in self._open if n not in before]:
                self._close_one(name)

    def _close_one(self, name: str) -> None:
        if name not in self._open:
            return
        # No search of this process is using it (none opens a shard being built, named ".stage-...").
        with self.view.writing() if not name.startswith(".") else nullcontext():
            held = self._open.pop(name, None)
            if held is not None:
                shard, lock = held
                try:
                    self._close_and_record(name, shard)
                finally:
                    lock.release()

    def _close_and_record(self, name: str, shard: EdgeShard) -> None:
        copy = self._copies.pop(name, None)
        if copy is not None:  # a read-only state dir's: nothing to record, the copy goes
            try:
                shard.close()
            finally:
                shutil.rmtree(copy, ignore_errors=True)
            return
        if shard.closed:  # it could not be reopened after an optimize: the next open probes it
            self._forget_key(name)
            return
        count = shard.count()
        shard.close()
        # The shard is as this process left it: the next open needs no probe while it stays so.
        self._record(name, self._stat_key(name), count)

    def close(self) -> None:
        """Close every shard kept open, releasing their locks."""
        for name in list(self._open):
            self._close_one(name)

    def _load_or_create(self, name: str, dim: int | None):
        """The engine of the shard ``name`` (created when ``dim`` is given and there is none), its
        vector dimension and the points it holds (None: not known without counting them)."""
        path = self.shard_path(name)
        if read_only_mount(self.root):
            return self._load_copy(name)
        ensure_room(self.root)
        try:
            if self.exists(name):
                reason, count = self._checked(name, self._listed(name))
                if reason is not None:
                    raise IndexDamaged(damaged_message(name, path, reason))
                return (*load_engine(path), count)
            if dim is None:
                raise MemoryToolError(f"index collection {name} does not exist yet: run `openclaw-memory index`")
            self._create(name, dim)
            return (*load_engine(path), 0)
        except (MemoryToolError, ModuleNotFoundError):  # the second names the extra
            raise
        except BaseException as exc:  # the engine's wording: an Exception, or pyo3's PanicException (a BaseException)
            if not is_engine_failure(exc):
                raise
            if (limit := limit_reached(exc)) is not None:  # no damage: a rebuild would meet it again
                raise MemoryToolError(f"index collection {name} cannot be opened: {limit}") from None
            if "WouldBlock" in str(exc):
                raise MemoryToolError(
                    f"index collection {name} is open in another process that does not use openclaw-memory's lock; "
                    "close it and try again"
                ) from None
            raise MemoryToolError(
                f"index collection {name} at {path} cannot be opened ({exc}); rebuild it with `openclaw-memory index --full`"
            ) from None

    def _load_copy(self, name: str):
        """The engine of a private copy of the shard ``name`` (the state dir is mounted read-only,
        and the engine's load writes to the folder it opens), made under the shard's lock, its
        vector dimension and the points it holds; the copy is removed when the shard is closed."""
        if not self.exists(name):
            raise MemoryToolError(f"index collection {name} does not exist yet, and the state dir ({self.root}) is "
                                  "mounted read-only: run `openclaw-memory index` where it can be written")
        folder = None
        try:
            folder = self._copy_out(name, "searched")
            # Checked as the shard in place is: unless its files are those a process of ours recorded
            # (a bind mount of the state dir it wrote: no probe), the copy is probed, digest and all,
            # so that an older index restored there is refused, not quoted as this workspace's lines.
            reason, count = self._checked(name, self._listed(name), record=False, copy=folder / "shard")
            if reason is not None:
                raise IndexDamaged(damaged_message(name, self.shard_path(name), reason))
            engine, dim = load_engine(folder / "shard")
        except BaseException as exc:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
            if isinstance(exc, (MemoryToolError, ModuleNotFoundError)):
                raise
            if not is_engine_failure(exc):
                raise
            if (limit := limit_reached(exc)) is not None:
                raise MemoryToolError(f"index collection {name} cannot be opened: {limit}") from None
            raise MemoryToolError(f"index collection {name} at {self.shard_path(name)} cannot be opened ({exc}); "
                                  "rebuild it with `openclaw-memory index --full` where the state dir can be written") from None
        self._copies[name] = str(folder)
        return engine, dim, count

    def _copy_out(self, name: str, doing: str) -> Path:
        """A folder in the temporary folder holding a copy of the shard ``name`` as ``shard``, for
        the engine to load where the state dir is mounted read-only; the caller removes it."""
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix=f"openclaw-memory-{name}-"))
        try:
            # The engine writes to the files it loads (memory-mapped): where they overrun the folder
            # the process dies of SIGBUS, leaving the copy. Room for the copy and a load's, first.
            if free_bytes(folder) < folder_bytes(self.shard_path(name)) + LOAD_ROOM:
                raise MemoryToolError(self._no_room(name, doing))
            copy_sparse_tree(self.shard_path(name), folder / "shard")
        except BaseException as exc:
            shutil.rmtree(folder, ignore_errors=True)
            if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise MemoryToolError(self._no_room(name, doing)) from None
            raise
        return folder

    def _no_room(self, name: str, doing: str) -> str:
        import tempfile

        return (f"index collection {name} cannot be {doing}: the state dir is mounted read-only, and its copy in the "
                f"temporary folder ({tempfile.gettempdir()}) does not fit there with the room the engine needs to load "
                f"it ({LOAD_ROOM >> 20} MiB more): set TMPDIR to a folder with room")

    def _listed(self, name: str) -> int | None:
        """The points the shard's manifest lists (None while a write to it is unfinished, or for a
        staged shard): a shard that holds another number lost points, and a search would answer
        from what is left as if it were the whole."""
        from ..manifest import is_dirty, manifest_chunk_count

        if name.startswith("."):
            return None
        data_dir = self.root.parent
        return None if is_dirty(data_dir, name) else manifest_chunk_count(data_dir, name)

    def _create(self, name: str, dim: int) -> None:
        """Build the shard in a temporary folder and rename it in place, so a crash leaves no half shard."""
        import qdrant_edge as qe

        final = self.shard_path(name)
        tmp = final.parent / f".{name}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(final, ignore_errors=True)  # a folder without a config is a failed create
        make_dirs(tmp.parent)
        engine = qe.EdgeShard.create(str(tmp), engine_config(dim))
        # Keyword candidates come from the ``terms`` field (index.terms: stems and CJK grams, one
        # statistic per agent); its postings live on disk (memory-mapped) so that the engine's
        # resident memory does not grow with the corpus. The embedded text is stored, not indexed.
        grams = qe.TextIndexParams(tokenizer=qe.TokenizerType.Whitespace, lowercase=False, scoring=True, on_disk=True)
        for field, schema in (
            (TERMS_FIELD, grams),
            (PATH_FIELD, qe.KeywordIndexParams(on_disk=True)),
            (AGENT_FIELD, qe.KeywordIndexParams(on_disk=True)),
        ):
            engine.update(qe.UpdateOperation.create_field_index(field, schema))
        engine.close()
        os.rename(tmp, final)


def damaged_message(name: str, path, reason: str) -> str:
    return (
        f"index collection {name} at {path} is damaged ({reason}); `openclaw-memory doctor --fix` "
        "rebuilds it from the memory files (so does `openclaw-memory index`)"
    )


@contextmanager
def _shared_lock(path: str, timeout: float) -> Iterator[bool]:
    """A shared flock on an existing lock file, taken without writing anything; yields whether it got it."""
    import fcntl

    try:
        # Non-blocking: a FIFO at the path would hold a plain read-only open until a writer came.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ELOOP, errno.ENXIO):
            raise
        # No process of ours ever opened the shard, or a link or socket is at the lock's path,
        # which no process can hold (the next to take the lock sets it aside: fsutil.lock).
        yield True
        return
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.05)
        yield True
    finally:
        os.close(fd)
