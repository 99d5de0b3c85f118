"""The one door: every operation on an agent's memory, as one typed protocol.

The CLI, MCP (stdio and HTTP) and the service's own loop call a :class:`Memory`; which
implementation they get (in this process, or the workspace's service) is chosen once, by
:func:`~openclaw_memory.memory.open_memory`. Results are the package's frozen dataclasses; errors
are :class:`~openclaw_memory.errors.MemoryToolError` subclasses.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..types import MAX_LIMIT
from .operations import Cli, Operation, Tool, operation

if TYPE_CHECKING:
    from ..archive.export import ExportResult
    from ..archive.importer import ImportResult
    from ..doctor.model import Finding
    from ..doctor.runner import DoctorReport
    from ..files.read import ReadResult
    from ..files.scan import ScanResult
    from ..history.diff import DiffRead
    from ..history.guard import WriteResult
    from ..history.inventory import MemoryListing
    from ..history.listing import VersionHistory
    from ..history.moves import MoveResult, RemoveResult
    from ..history.report import StateReport
    from ..index.api import CollectionsResult
    from ..index.migrate import MigrationResult
    from ..index.results import SearchResult, SyncSummary
    from ..index.status import IndexStatus
    from ..links.report import LinkReport
    from ..log.activity import ActivityLog
    from ..prompt.loader import PromptSection
    from ..rollback.apply import RollbackResult
    from ..settings import Settings
    from ..types import ProgressCallback, SearchMode
    from ..watchdog.heartbeat import HeartbeatResult
    from ..watchdog.snapshot import SnapshotInfo
    from ..watchdog.verify import VerifyResult
    from .service_status import ServiceStatus


MEMORY_PATH = "Memory file, relative to the workspace (or inside an extra path)."



def _min_score() -> float:
    from ..index.results import DEFAULT_MIN_SCORE  # the search layer's (its import is for `search` alone)

    return DEFAULT_MIN_SCORE


class Memory(Protocol):
    """An agent's memory in one workspace, for one session (``settings.agent``, ``settings.session``).

    Each operation is declared here once (:func:`~.operations.operation`): its signature, what does
    the work, whether the service answers it, and its CLI command and MCP tool.
    """

    @property
    def settings(self) -> Settings: ...

    def for_session(self, session: str | None) -> Memory:
        """The same memory (and its warm index) for another session of the agent."""
        ...

    def call(self, op: Operation, args: tuple = (), kwargs: dict[str, Any] | None = None) -> Any:
        """A declared operation called by its declaration: what the front-ends do (each typed method
        below is this call)."""
        ...

    # -- files ---------------------------------------------------------------------------------

    @operation(impl=".files.scan:scan_workspace", cli=Cli("files", also=("ls", "list")))
    def files(self) -> ScanResult:
        """List the memory files: MEMORY.md, USER.md, the dream diary, memory/**/*.md, extra paths.

        In OpenClaw's order, with what was skipped and why."""
        ...

    @operation(impl=".history.reads:read", service=True,
               help={"path": f"{MEMORY_PATH[:-1]}, or a search citation (PATH#L10-L24).",
                     "from_line": "First line to return (1-based; default 1, or a citation's first line).",
                     "lines": "How many lines (default 120).", "max_chars": "Character budget (default 12000).",
                     "clamp": "Take the window as OpenClaw's reader does (floored; below 1 read as 1)."},
               cli=Cli("read", flags={"from_line": ("--from",)}, hidden=("clamp",), also=("get", "cat")),
               tool=Tool("memory_get", "Read memory",
                         "Read lines of one memory file (a window: from, lines). Readable: {scope} Returns "
                         "{text, path, from, lines, truncated?, nextFrom?, lineChars?, version}; version is the whole "
                         "file's content hash, recorded as read (memory_write checks it). A first line longer than "
                         "maxChars is cut short (truncated, no nextFrom): lineChars is its length, and the same from "
                         "with maxChars=lineChars reads it whole.",
                         names={"from_line": "from"}, only=("path", "from_line", "lines", "max_chars"),
                         corpora=("memory", "wiki", "all"),
                         fixed={"clamp": True}, kinds={"from_line": "window", "lines": "window", "max_chars": "number"},
                         help={"path": "Memory file: relative to the workspace (MEMORY.md, memory/...) or inside an extra "
                                       "path; or a memory_search citation (memory/notes.md#L10-L24), which reads those lines.",
                               "from_line": "First line to return (1-based, 1 or more; default 1).",
                               "lines": "How many lines (1 or more; default 120).",
                               "max_chars": "Character budget (UTF-16 units; default contextLimits.memoryGetMaxChars, "
                                            "12000; a fraction is floored, below 1 reads 1)."}))
    def read(self, path: str, *, from_line: float | None = None, lines: float | None = None,
             max_chars: float | None = None, clamp: bool = False) -> ReadResult:
        """Read a window of a memory file by lines and characters (OpenClaw's memory_get).

        Recorded as read by this session. ``path`` may be a search citation (``memory/a.md#L10-L24``):
        its lines, unless ``from_line``/``lines`` say otherwise. ``clamp``: take the window as
        OpenClaw's reader takes it (floored, below 1 raised to 1) instead of refusing values below 1.
        """
        ...

    @operation(impl=".history.reads:read_diff", service=True)
    def read_diff(self, path: str, *, from_line: int | None = None, lines: int | None = None,
                  max_chars: int | None = None) -> DiffRead:
        """What changed since this agent last read the file; counts as a read."""
        ...

    @operation(impl=".memory.writes:write", on="memory", service=True, writes=True, changes_notes=True,
               help={"path": MEMORY_PATH, "content": "The whole new content of the file (replaces it).",
                     "append": "Add TEXT on its own line at the end of the file.",
                     "expect": "Write only if the file is at this version, the one this session last read (prefix of "
                               "8+ hex characters).",
                     "update_index": "Do not update the search index afterwards.",
                     "idempotency_key": "Retry-safe key of this session: a second write with it within 24 h writes nothing "
                                        "and prints the first result (default: agent, path, mode and content; a "
                                        "default key is a retry only until the session reads or writes the file again).",
                     "replace_unread": "Replace the content though this session read only some of its lines, or "
                                       "bytes that are not UTF-8, which reads show as U+FFFD (what was not read "
                                       "is dropped; the history keeps it).",
                     "tool": "Which tool makes the write (write or memory_write): part of the default idempotency key."},
               cli=Cli("write", flags={"update_index": ("--no-index",)}, hidden=("content", "tool")),
               tool=Tool("memory_write", "Write memory",
                         "Write one memory file atomically, guarded: give content (replace) or append. Writable: {scope} "
                         "The write is refused (tool error) when the file changed since you last read it with memory_get: "
                         "read it again and redo the change. Replacing the content (content) needs a read of every line: "
                         "after a window (truncated), read the rest or append. Appending to a daily note "
                         "(memory/YYYY-MM-DD.md) is allowed while the file only grew. expect makes it a strict "
                         "compare-and-swap on the version you read. "
                         "A retried call (same idempotencyKey, by default the same path, mode and content) within 24 hours "
                         "writes nothing and returns the first result with replayed: true; without an idempotencyKey, "
                         "only until you read the file with memory_get or write it again (then the same text is a new "
                         "entry). Every version stays in the "
                         "history (openclaw-memory history / restore).",
                         only=("path", "content", "append", "expect", "idempotency_key", "replace_unread"),
                         fixed={"tool": "memory_write"},
                         kinds={"content": "string", "append": "string"},
                         help={"path": "Memory file to write: MEMORY.md, memory/... or a file inside an extra path.",
                               "append": "Text to add on its own line at the end of the file.",
                               "expect": "Write only if the file is at this version: 8+ hex characters of the `version` "
                                         "your last memory_get of it returned (another version is refused).",
                               "idempotency_key": "Retry-safe key of this session: a second write with the same key within "
                                                  "24 hours writes nothing and returns the first result (default: derived "
                                                  "from agent, path, mode and content, and a retry only until you read or "
                                                  "write the file again).",
                               "replace_unread": "With content: replace the file though your memory_get showed only some "
                                                 "of its lines, or bytes that are not UTF-8 as U+FFFD (what it did not "
                                                 "show is dropped). Default false: refused."}))
    def write(self, path: str, *, content: bytes | str | None = None, append: bytes | str | None = None,
              expect: str | None = None, update_index: bool = True, idempotency_key: str | None = None,
              tool: str = "write", progress: ProgressCallback | None = None, replace_unread: bool = False) -> WriteResult:
        """Write a memory file atomically, blocked (exit 3) if it changed since this agent read it (or it read only some lines).

        Guarded (WriteBlocked) and idempotent: a write with the key of one made less than 24 hours
        ago writes nothing and returns that first result while the file still holds what it made."""
        ...

    @operation(impl=".memory.writes:restore", on="memory", service=True, writes=True, changes_notes=True,
               help={"path": "Memory file to restore.",
                     "version": "The version to bring back (a unique prefix of 8+ hex characters).",
                     "last": "Bring back the version `rm` last removed (instead of VERSION).",
                     "update_index": "Do not update the search index afterwards."},
               cli=Cli("restore", flags={"update_index": ("--no-index",)}, args=("path", "version")))
    def restore(self, path: str, version: str | None = None, *, last: bool = False,
                update_index: bool = True) -> WriteResult:
        """Restore an earlier version atomically (or a removed file: --last); the current one is kept, so this can be undone."""
        ...

    @operation(impl=".memory.writes:restore_all", on="memory", service=True, writes=True, changes_notes=True,
               help={"to": "The moment: a watchdog snapshot's label, or a time (ISO 8601: 2026-12-05T09:30:00Z; "
                           "a date is its start; no offset is UTC).",
                     "dry_run": "List each file's fate (rewrite, archive, bring-back, unchanged) and change nothing.",
                     "force": "Replace files this session has not read as they are now (what they hold is kept "
                              "in the history first).",
                     "update_index": "Do not update the search index afterwards."},
               cli=Cli("rollback", flags={"update_index": ("--no-index",)}, args=(), also=("restore-all", "revert"),
                       spelled=("restore", "--all")))
    def restore_all(self, to: str, *, dry_run: bool = False, force: bool = False,
                    update_index: bool = True) -> RollbackResult:
        """Put every memory file back as it was at a watchdog snapshot or a time, as one journaled step (undone by another).

        Files changed since are rewritten, files made since archived as ``rm`` archives, files
        removed since brought back; what each holds now is kept in the history first. Blocked
        (exit 3) by a file this session has not read as it is now, unless ``force``. The result's
        ``undo`` is the moment just before it: ``restore_all(undo)`` undoes it."""
        ...

    @operation(impl=".memory.writes:move", on="memory", service=True, writes=True, changes_notes=True,
               help={"source": "Memory file to move.",
                     "destination": "Where it goes: a memory path (folders are made as needed), or a folder (FOLDER/: the same name in it).",
                     "force": "Replace a file at DESTINATION this session read as it is (archived as rm archives), or move MEMORY.md/USER.md.",
                     "expect": "Move only if the file is at this version (prefix of 8+ hex characters).",
                     "update_index": "Do not update the search index afterwards.",
                     "update_links": "Rewrite the links that named SOURCE to name DESTINATION (each file one "
                                     "guarded, versioned write; a file changed meanwhile is left and named)."},
               cli=Cli("mv", flags={"update_index": ("--no-index",)}, also=("move", "rename")))
    def move(self, source: str, destination: str, *, force: bool = False, expect: str | None = None,
             update_index: bool = True, update_links: bool = False) -> MoveResult:
        """Move or rename a memory file, guarded like a write; its history and index points follow it.

        Atomic (a rename; across file systems a verified copy, then the source removed). The result
        names the old and the new path."""
        ...

    @operation(impl=".memory.writes:remove", on="memory", service=True, writes=True, changes_notes=True,
               help={"path": "Memory file to remove.",
                     "force": "Remove MEMORY.md or USER.md too (they leave the agent's startup).",
                     "expect": "Remove only if the file is at this version (prefix of 8+ hex characters).",
                     "update_index": "Do not update the search index afterwards."},
               cli=Cli("rm", flags={"update_index": ("--no-index",)}, also=("remove", "delete")))
    def remove(self, path: str, *, force: bool = False, expect: str | None = None,
               update_index: bool = True) -> RemoveResult:
        """Remove a memory file into the history, guarded like a write: `restore PATH --last` brings it back.

        Never destroys: its bytes stay in the history (never evicted); it leaves the index and the prompt."""
        ...

    # export and import run in the caller's process (service=False): the archive is a file of the
    # caller's, named relative to its own folder. No MCP tool: an agent should not move whole memories.
    @operation(impl=".archive.export:export_archive", writes=True,
               help={"archive": "The archive file to write (a tar.gz; must not exist unless --force).",
                     "force": "Replace ARCHIVE if it exists."},
               cli=Cli("export", also=("backup", "dump")))
    def export_archive(self, archive: str, *, force: bool = False) -> ExportResult:
        """Write the memory files and their history (every version's bytes the history keeps) to one archive.

        A tar archive (gzip) with a manifest of every member's size and xxh3_128 hash; ``import``
        reads it into another workspace. Each file's current version is recorded in the history first."""
        ...

    @operation(impl=".archive.importer:import_archive", writes=True, changes_notes=True,
               help={"archive": "The archive `export` wrote.",
                     "force": "Replace memory files that exist here (what they hold is kept in the history first)."},
               cli=Cli("import", also=("restore-archive", "load")))
    def import_archive(self, archive: str, *, force: bool = False) -> ImportResult:
        """Import an archive `export` wrote: its memory files and their history, every hash checked first.

        A damaged or hostile archive is refused whole (nothing written); a memory file that exists
        here is refused unless ``force``. The index picks the files up at the next index or search."""
        ...

    @operation(impl=".history.listing:file_history", help={"path": MEMORY_PATH}, cli=Cli("history"))
    def history(self, path: str) -> VersionHistory:
        """List the versions of a memory file kept in the history, newest first."""
        ...

    @operation(impl=".log.activity:activity", service=True,
               help={"since": "Only versions logged on or after this day (YYYY-MM-DD, local time).",
                     "until": "Only versions logged on or before this day (YYYY-MM-DD, local time).",
                     "paths": "Only files matching this glob (repeatable; memory/people/*.md, as search --path).",
                     "agent": "Only versions this agent wrote or restored.",
                     "session": "Only versions this session of the agent wrote or restored.",
                     "origins": "Only this origin (repeatable): agent-write, external-edit, restore, doctor-fix, move, remove.",
                     "limit": "Most versions to list (newest first)."},
               # --agent and --session are the settings flags, as given (cli/spec.py): hidden here.
               cli=Cli("log", flags={"paths": ("--path",), "origins": ("--origin",)}, hidden=("agent", "session")))
    def activity(self, *, since: str | None = None, until: str | None = None, paths: tuple[str, ...] = (),
                 agent: str | None = None, session: str | None = None, origins: tuple[str, ...] = (),
                 limit: int = 50) -> ActivityLog:
        """List every recorded version across the memory files, newest first: who changed what, when, how much.

        Each entry: path, time, origin, agent, session, lines added and removed against the path's
        previous version (None when either's bytes were evicted), and the version ``restore`` takes."""
        ...

    @operation(impl=".history.report:file_states", service=True, cli=Cli("state"))
    def state(self) -> StateReport:
        """Show each memory file's state for this agent: read_fresh, read_stale, discovered_unread, written_unread."""
        ...

    @operation(impl=".history.inventory:memory_listing", service=True,
               tool=Tool("memory_files", "List memory files",
                         "List the memory files: {scope} Returns {workspace, agent, files: [{path, absPath, source, kind, "
                         "size, modified, state?, seenLines?}], skipped: [{path, reason}]} in OpenClaw's order: modified is the "
                         "file's last change (UTC); state is what this session has seen of it: read_fresh (read, "
                         "unchanged since; seenLines [first, last] when only those lines were read: content is "
                         "refused until the rest is read), read_stale (changed since this session read or wrote it: memory_get it "
                         "again before memory_write), discovered_unread (never read by this session), written_unread "
                         "(this session wrote what it holds)."))
    def listing(self) -> MemoryListing:
        """The memory files as ``files`` lists them, each with its modified time and this session's state of it."""
        ...

    @operation(impl=".links.report:note_links", service=True,
               help={"path": "The memory file whose links and backlinks to list (default: every link of the memory).",
                     "broken": "Only the links that name no memory file, or more than one (ambiguous)."},
               cli=Cli("links", args=("path",)),
               tool=Tool("memory_links", "Memory links",
                         "The links between memory notes: [[name]], [[name#heading|label]], [label](path.md), citations "
                         "(memory/2026-11-03.md#L3-L9) and mentions (see memory/2026-11-03.md). With path: that note's "
                         "outgoing links and its backlinks, the notes that link to it (changing it affects them). With "
                         "broken: only the links that name no file, or several (ambiguous: never guessed). Covers: {scope} "
                         "Returns {path?, outgoing: [{source, line, form, text, target, status, fragment?, resolved?, "
                         "candidates?, problem?}], backlinks?, files, parsed}; status is ok, broken or ambiguous."))
    def links(self, path: str | None = None, *, broken: bool = False) -> LinkReport:
        """List a memory file's links and backlinks with line numbers, or every link; --broken: those that name nothing."""
        ...

    @operation(impl=".prompt.loader:memory_prompt",
               help={"today": "Which day is 'today' (YYYY-MM-DD; default: the local date).",
                     "consume": "Show a pending workspace-change checkpoint without consuming it."},
               cli=Cli("prompt", flags={"today": ("--date",), "consume": ("--peek",)}))
    def prompt(self, *, today: dt.date | None = None, consume: bool = True) -> PromptSection:
        """Build the startup memory section: MEMORY.md, recent daily notes, within OpenClaw's caps.

        A pending watchdog checkpoint is included once (``consume``)."""
        ...

    @operation(impl=".prompt.loader:consume_shown", writes=True)
    def consume_shown(self, *, upto: int) -> None:
        """Consume the watchdog checkpoint a prompt showed, up to its ``checkpoint_upto``, once it is out."""
        ...

    # -- index and search ------------------------------------------------------------------------

    @operation(impl=".index.operations:index", on="memory", service=True, writes=True,
               help={"full": "Drop the agent's index and rebuild it from scratch (--force: OpenClaw's spelling)."},
               cli=Cli("index", flags={"full": ("--full", "--force")}, also=("sync", "reindex")))
    def index(self, *, full: bool = False, progress: ProgressCallback | None = None) -> SyncSummary:
        """Index the memory files for search (incremental: only what changed is re-embedded)."""
        ...

    @operation(impl=".index.operations:search", on="memory", service=True,
               help={"query": "What to look for (put -- before a query that starts with -).",
                     "limit": "Most results to return (--max-results: OpenClaw's spelling; default: openclaw.json's "
                              "memory.search.query.maxResults, else 6).",
                     "min_score": "The score the best result needs, else nothing answers; the others need half of it "
                                  "(0-1: calibrated relevance, same scale in every mode).",
                     "mode": "hybrid (default), vector or text (keywords only; never loads the model).",
                     "sync": "Do not re-index changed files first; list them in `stalePaths` (and say `stale`).",
                     "collections": "Only this collection (repeatable; names as `collections` lists them).",
                     "paths": "Only files matching this glob (repeatable; memory/people/*.md).",
                     "since": "Only files dated (daily notes) or modified on or after this day.",
                     "until": "Only files dated or modified on or before this day."},
               cli=Cli("search", also=("find", "query", "grep"), flags={"limit": ("--limit", "--max-results"), "collections": ("--collection",),
                                        "paths": ("--path",)}),
               tool=Tool("memory_search", "Search memory",
                         "Search the agent's memory by meaning and keywords. Searches: {scope} Returns "
                         "{results: [{path, startLine, endLine, score, vectorScore?, textScore?, snippet, source, corpus, citation, "
                         "date?, alsoIn?, passages: "
                         "[{startLine, endLine, score, snippet, citation, date?}]}], provider, model, citations, mode, terms, notes?, "
                         "stale?, warning?, action?, stalePaths?, updating?, filteredOut?, message?}: one result per "
                         "file with its best passage, and in passages that one and up to two more entries of the file that "
                         "answer; message says so when nothing matched; date (YYYY-MM-DD) is the dated heading or daily note "
                         "a passage sits under: of two that disagree, the newer is the current one. "
                         "If the response has stale=true, tell the user and include the warning/action guidance. "
                         "vectorScore (meaning: cosine) and textScore (keywords, 0-1) are the two signals score fuses. "
                         "Pass a citation to memory_get to read the passage.",
                         names={"limit": "maxResults", "collections": "collection"},
                         only=("query", "limit", "min_score", "collections", "paths", "since", "until"),
                         corpora=("memory", "wiki", "all", "sessions"),
                         bounds={"limit": (1, MAX_LIMIT), "min_score": (0.0, 1.0)}, defaults={"min_score": _min_score},
                         help={"query": "What to look for (meaning and keywords: hybrid search).",
                               "min_score": "The score the best result needs, else nothing answers; the others need half of it "
                                           "(0-1, calibrated relevance).",
                               "collections": "Only these collections (names as memory_status lists them).",
                               "paths": "Only files matching one of these globs (memory/people/*.md).",
                               "since": "Only files dated (daily notes) or modified on or after this day (YYYY-MM-DD).",
                               "until": "Only files dated or modified on or before this day (YYYY-MM-DD)."}))
    def search(self, query: str, *, limit: int | None = None, min_score: float | None = None, mode: SearchMode = "hybrid",
               sync: bool = True, collections: tuple[str, ...] = (), paths: tuple[str, ...] = (),
               since: str | None = None, until: str | None = None, progress: ProgressCallback | None = None) -> SearchResult:
        """Search the memory: hybrid (meaning + keywords) by default, one result per file.

        Line-exact citations; ``limit`` None: openclaw.json's ``memory.search.query.maxResults`` (else 6,
        ``settings.max_results``); ``min_score`` None: the calibrated default. ``progress`` hears the
        first index a search builds (the agent had none), as ``index``'s does."""
        ...

    @operation(impl=".index.operations:status", on="memory", service=True, cli=Cli("status"),
               tool=Tool("memory_status", "Memory index status",
                         "The search index of this memory: per collection files, chunks, stale files, last indexed, "
                         "model, size. Covers: {scope}"))
    def status(self) -> IndexStatus:
        """Show the index per collection: files, chunks, stale files, last index, model, size on disk."""
        ...

    @operation(impl=".index.operations:collections", on="memory", service=True, cli=Cli("collections"))
    def collections(self) -> CollectionsResult:
        """List the agent's collections: names, paths, patterns, point counts, backend."""
        ...

    @operation(impl=".index.migrate:migrate_index", writes=True,
               help={"to": "Where to copy the index: a Qdrant URL (http://HOST:6333) or 'embedded'.",
                     "source": "Where to copy it from: 'embedded' (default when --to is a URL) or a Qdrant URL."},
               cli=Cli("migrate", flags={"source": ("--from",)}, args=()))
    def migrate(self, to: str, source: str | None = None,
                progress: Callable[[str, int, int], None] | None = None) -> MigrationResult:
        """Copy every collection of the workspace (vectors and payloads, no re-embedding), verify counts; resumable."""
        ...

    @operation(impl=".memory.local:service_status", on="memory", service=True)
    def service(self) -> ServiceStatus:
        """The workspace's service: running (its figures) or not (and why, when it should be)."""
        ...

    # -- repair and watchdog ---------------------------------------------------------------------

    @operation(impl=".doctor:run_doctor", writes=True, changes_notes=True,
               help={"fix": "Repair what can be repaired (asks first on a terminal).",
                     "workspace_suggestions": "Leave out OpenClaw's suggestion to start a memory system (no MEMORY.md "
                                              "yet), as OpenClaw's doctor flag does."},
               cli=Cli("doctor", flags={"fix": ("--fix", "--repair"), "workspace_suggestions": ("--no-workspace-suggestions",)},
                       also=("check", "verify")))
    def doctor(self, *, fix: bool = False, workspace_suggestions: bool = True,
               confirm: Callable[[Finding, str], bool] | None = None,
               on_lock_wait: Callable[[str], None] | None = None) -> DoctorReport:
        """Check the memory files (split or legacy root, symlinks, extra paths, prompt caps, UTF-8, watchdog, index); --fix repairs.

        Without losing a byte."""
        ...

    @operation(impl=".watchdog.snapshot:take_snapshot", writes=True,
               help={"label": "Name for this snapshot (letters, digits, . _ -; default: a UTC timestamp)."},
               cli=Cli("watchdog snapshot", args=("label",)))
    def snapshot(self, label: str | None = None) -> SnapshotInfo:
        """Record every workspace file (type, stat, content hash); the newest snapshot is the baseline."""
        ...

    @operation(impl=".watchdog.verify:verify_workspace", cli=Cli("watchdog verify"))
    def verify(self) -> VerifyResult:
        """Compare the workspace with the baseline. Exit 0: no break; 1: files changed or deleted; 2: no baseline."""
        ...

    @operation(impl=".watchdog.heartbeat:heartbeat", writes=True, cli=Cli("watchdog heartbeat"))
    def heartbeat(self) -> HeartbeatResult:
        """Verify, then take a timestamped snapshot. Clean: prints HEARTBEAT_OK. Break: lists the changes, writes a checkpoint."""
        ...

    # -- lifetime --------------------------------------------------------------------------------

    @operation(impl=".memory.local:end_session", on="memory", service=True, writes=True)
    def end_session(self) -> None:
        """This session is over: its read records go."""
        ...

    @operation(impl=".memory.local:forget_read", on="memory", writes=True,
               help={"path": "The file read, as its read result names it.", "version": "The version that read returned."})
    def forget_read(self, path: str, version: str) -> None:
        """A read of this session whose answer never reached its reader (the connection dropped): its
        record goes while it still holds that version, so the session reads again before it writes."""
        ...

    def warm(self) -> None:
        """Load the model now when the agent has an index, so the first search answers at once."""
        ...

    def close(self) -> None:
        """Let go of the index and the service's connection; a later call is MemoryClosed."""
        ...

    def __enter__(self) -> Memory: ...

    def __exit__(self, *exc: object) -> None: ...
