"""What the index holds and how it stands against the files, without loading any model.

``index_status`` reads each manifest's row, its files' change keys and the entries of the files
whose stat moved (hashing only those, which the change rule cannot vouch for); it opens no
shard. ``index_findings`` turns the same facts into doctor-style findings;
``remove_orphaned_shards`` is their repair for orphans.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..files.scan import scan_workspace
from ..findings import Finding
from ..types import Severity
from ..watchdog.gitstate import GitChanges
from ..wire import key
from .agent_lock import index_builder
from .collections import Collection, LeftOut, assign_files, left_out, registered_names, resolve_collections, unreadable_folders
from .config import IndexConfig, index_config, settings_parts
from .embedding import backend_recipe, fingerprint_parts, recipe_outdated, what_changed
from .manifest import delete_manifest, is_dirty, load_manifest_head, manifest_chunk_count, stale_known

if TYPE_CHECKING:
    from ..settings import Settings


@dataclass(frozen=True)
class CollectionStatus:
    name: str
    kind: str
    path: str
    pattern: str
    indexed: bool
    files: int  # memory files the collection covers now
    chunks: int  # points recorded by the last index
    stale: tuple[str, ...] = key("staleFiles")
    interrupted: bool = key()  # an index run was killed before saving this collection's manifest (not one going on)
    last_indexed: str | None = key()  # ISO 8601, UTC
    model: str = key()
    settings_changed: bool = key()
    backend: str = key()
    disk_bytes: int = key()


@dataclass(frozen=True)
class IndexStatus:
    agent: str
    workspace: str
    model: str
    backend: str
    collections: tuple[CollectionStatus, ...]
    not_indexable: tuple[str, ...]  # images and audio: listed, not embedded by a text model
    orphaned: tuple[str, ...] = key("orphanedShards")  # shards no current collection of this agent owns
    # Memory files a git work tree has not committed or ignores (watchdog.gitstate), and why a
    # repository could not be read; `status` only (doctor reports them as findings of its own).
    git: tuple[GitChanges, ...] = key(omit=lambda s: not s.git, default=())
    git_notes: tuple[str, ...] = key(omit=lambda s: not s.git_notes, default=())
    # Markdown memory files the index leaves out (too large, a name it cannot take, unreadable), each
    # with why: search never finds them (`index` warns of each; doctor too); then the folders the
    # scan could not read (``folder``: doctor's `unreadable-folder` names them).
    left_out: tuple[LeftOut, ...] = key(omit=lambda s: not s.left_out, default=())
    # An index run is going on right now (an `index`, the service's sync), holding the agent's index
    # lock: its dirty marks are those of a run going on, not of one interrupted. Its pid, an integer as
    # every pid in the JSON is, where the lock file names one (not yet written, or damaged: unknown).
    running: bool = key("indexRunning", omit=lambda s: not s.running, default=False)
    running_pid: int | None = key("indexRunningPid", omit=lambda s: s.running_pid is None, default=None)

    JSON_DERIVED: ClassVar = ("indexed",)

    @property
    def indexed(self) -> bool:
        return any(c.indexed for c in self.collections)

    @property
    def pid_words(self) -> str:
        """The running index's pid as the plain output says it: the number, or "unknown"."""
        return "unknown" if self.running_pid is None else str(self.running_pid)

    @property
    def stale(self) -> list[str]:
        return sorted({p for c in self.collections for p in c.stale})


def _iso(ts: float) -> str | None:
    if not ts:
        return None
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).isoformat(timespec="seconds")


def index_status(settings: Settings, store, scan=None) -> IndexStatus:
    config = index_config(settings)
    collections = resolve_collections(settings)
    if scan is None:
        scan = scan_workspace(settings)
    groups = assign_files(collections, scan.files)
    running = index_builder(settings)
    rows = []
    for c in collections:
        # Its row only: no file's chunk list is needed (stale_known reads the suspects' entries).
        m = load_manifest_head(settings.data_dir, c.name)
        exists = store.exists(c.name)
        built = m if exists else None  # the manifest of a collection the store holds
        rows.append(
            CollectionStatus(
                name=c.name,
                kind=c.kind,
                path=c.root,
                pattern=c.pattern,
                indexed=built is not None,
                files=len(groups[c.name]),
                chunks=(manifest_chunk_count(settings.data_dir, c.name) or 0) if built is not None else 0,
                stale=tuple(stale_known(settings.data_dir, built, groups[c.name])),
                interrupted=running is None and is_dirty(settings.data_dir, c.name),
                last_indexed=_iso(m.indexed_at) if m else None,
                model=m.model if m else config.model,
                settings_changed=m is not None and (not config.vectors_hold(m.settings_key) or recipe_outdated(m.fingerprint)),
                backend=store.backend,
                disk_bytes=store.disk_usage(c.name) if exists else 0,
            )
        )
    media = tuple(f.path for f in scan.files if f.kind != "markdown")
    return IndexStatus(
        agent=settings.agent,
        workspace=str(settings.workspace),
        model=config.model,
        backend=store.backend,
        collections=tuple(rows),
        not_indexable=media,
        orphaned=tuple(orphaned_shards(settings, store, collections)),
        left_out=(*left_out(scan.files), *unreadable_folders(scan)),
        running=running is not None,
        running_pid=int(running) if running is not None and running.isdigit() else None,
    )


def orphaned_shards(settings: Settings, store, collections: list[Collection] | None = None) -> list[str]:
    """Shards of this agent no configured collection uses (an extra path was removed), and unregistered ones."""
    current = {c.name for c in (collections if collections is not None else resolve_collections(settings))}
    registry = registered_names(settings.data_dir)
    from .store.server_config import shared_on_purpose

    if store.backend != "edge" and shared_on_purpose():
        # An index shared by machines on purpose holds the others' collections too (an extra path this
        # machine no longer has, or has never had, another may search): no machine's to remove. doctor
        # --fix on one that had not indexed yet removed them all.
        return []
    orphans = []
    for name in store.names():
        entry = registry.get(name)
        if entry is None or (entry["agent"] == settings.agent and name not in current):
            orphans.append(name)
    return orphans


def remove_orphaned_shards(settings: Settings, store) -> list[str]:
    """Delete the orphaned shards and their manifests; returns their names."""
    removed = orphaned_shards(settings, store)
    for name in removed:
        store.drop(name)
        delete_manifest(settings.data_dir, name)
    return removed


def index_findings(settings: Settings, scan=None) -> list[Finding]:
    """Doctor findings about the index: missing, stale, fingerprint mismatch, orphaned shards
    (``scan``: the doctor's own scan of the workspace, not walked again)."""
    from .store.factory import open_store

    store = open_store(settings)
    try:
        status = index_status(settings, store, scan)
    finally:
        store.close()
    findings: list[Finding] = []
    files = sum(c.files for c in status.collections)
    interrupted = [c.name for c in status.collections if c.interrupted]
    if not status.indexed and status.running:  # the first index, being built: neither missing nor interrupted
        findings.append(Finding("index-running", "info", f"the first index of agent {status.agent} is being built right "
                                f"now (pid {status.pid_words}); search answers once it is done"))
    elif not status.indexed and interrupted:  # a first index killed: not "missing", and it resumes
        findings.append(_interrupted(interrupted))
    elif not status.indexed:
        missing = f"no search index for agent {status.agent} yet ({files} memory files); `openclaw-memory index` builds it"
        # Search is optional: a workspace never indexed is healthy (no finding), so `doctor --fix`
        # never starts a first, long embedding run on its own. An index folder without this
        # agent's index is a loss `--fix` repairs; a configured but unbuilt index gets a hint.
        if files and (settings.data_dir / "index").exists():
            findings.append(_finding("index-missing", "warning", missing + " (the index folder holds no index for this agent)", []))
        elif files and settings.index.configured:
            findings.append(Finding("index-missing", "info", missing))
    else:
        stale = status.stale
        if stale:
            findings.append(
                _finding("index-stale", "warning", f"{len(stale)} memory file(s) changed since the last index", stale)
            )
        changed = [c for c in status.collections if c.settings_changed]
        if changed:
            said = _settings_change(settings, index_config(settings), changed[0].name)
            findings.append(
                _finding(
                    "index-fingerprint",
                    "warning",
                    f"the embedding settings changed since the last index{': ' + said if said else ''}; "
                    "re-indexing re-embeds every chunk",
                    [c.name for c in changed],
                )
            )
        if interrupted:
            findings.append(_interrupted(interrupted))
    left = [f for f in status.left_out if not f.folder]  # (an unreadable folder is doctor's `unreadable-folder`)
    if left and status.indexed:
        more = f" and {len(left) - 5} more" if len(left) > 5 else ""
        findings.append(Finding(
            "index-left-out", "warning",
            f"{len(left)} memory file(s) are not indexed, so search never finds them: "
            f"{'; '.join(map(str, left[:5]))}{more}", False, tuple(f.path for f in left)))
    if status.orphaned:
        findings.append(
            _finding(
                "index-orphaned-shards",
                "warning",
                f"{len(status.orphaned)} index shard(s) belong to no configured collection (an extra path was removed?)",
                list(status.orphaned),
            )
        )
    return findings


def _settings_change(settings: Settings, config: IndexConfig, collection: str) -> str:
    """Which settings that shape the vectors differ from those ``collection`` was indexed with, then
    and now, or whether this version's ONNX export recipe does (:func:`.embedding.what_changed`)."""
    m = load_manifest_head(settings.data_dir, collection)
    if m is None:
        return ""
    indexed = fingerprint_parts(m.fingerprint)
    recipe = {"recipe": indexed["recipe"]} if "recipe" in indexed else {}
    now = backend_recipe(indexed.get("backend", ""))
    return what_changed({**settings_parts(m.settings_key), **recipe},
                        {**config.settings_parts(), **({"recipe": now} if now else {})})


def _interrupted(collections: list[str]) -> Finding:
    """A killed index run, the first one too (no index yet, and not "missing": it resumes)."""
    return _finding("index-interrupted", "warning", "an index run was interrupted; `openclaw-memory index` "
                    "(or `doctor --fix`) finishes it", collections)


def _finding(fid: str, severity: Severity, message: str, paths: list[str]) -> Finding:
    """An index finding `doctor --fix` repairs (by re-indexing or removing shards)."""
    return Finding(fid, severity, message, True, tuple(paths))
