"""What a search and an index run return: plain frozen dataclasses, with nothing to import.

Kept apart from :mod:`.search` so that a process that only shows results (the CLI, answered by the
service) does not load the search code (its term patterns are compiled at import).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ..errors import PROGRAM
from ..wire import key

# The calibrated score below which nothing answers (index.search: CALIBRATION); here, not there, so
# the CLI's flag spec and the MCP tool read it without loading the search code.
DEFAULT_MIN_SCORE = 0.03


@dataclass(frozen=True)
class HitPassage:
    """One passage of a result: its exact lines in the result's file, its text and its own score."""

    start_line: int  # 1-based, inclusive
    end_line: int
    score: float = key(digits=4)
    snippet: str = key()
    citation: str = ""  # ``path#Lx-Ly``: set by the result that holds it
    # ``YYYY-MM-DD``: the last dated heading above the passage, else the dated note's name; left
    # out when neither says one (so that of two notes that disagree, the reader sees which is newer).
    date: str = key(omit=lambda p: not p.date, default="")


@dataclass(frozen=True)
class SearchHit:
    """One result: a file, with its best passage (``start_line``, ``end_line``, ``snippet``,
    ``citation``) and, in ``passages``, that passage and up to two more of the same file."""

    path: str
    start_line: int
    end_line: int
    score: float = key(digits=4)
    snippet: str = key()
    source: str = key()  # collection name
    # The two signals the hybrid fusion weighed for this file, in OpenClaw's keys (its result's
    # ``vectorScore`` and ``textScore``): the cosine of the query and the file's closest chunk
    # (clamped at 0), and its best chunk's keyword signal (BM25 over the BM25 of "every query term
    # once", in [0, 1]); each only in a mode that has it (vector: no textScore; text: no vectorScore).
    vector_score: float | None = key(digits=4, omit=lambda h: h.vector_score is None, default=None)
    text_score: float | None = key(digits=4, omit=lambda h: h.text_score is None, default=None)
    also_in: tuple[str, ...] = key(omit=lambda h: not h.also_in, default=())  # other files whose best passage says the same (snippets.same_saying)
    passages: tuple[HitPassage, ...] = ()  # best first; the first is the passage above
    date: str = key(omit=lambda h: not h.date, default="")  # the first passage's date (HitPassage.date)

    # OpenClaw's ``corpus`` of a hit (``memory``, ``sessions``, ``wiki``): every file searched here is a
    # memory file (``corpus`` ``all`` searches the same files), so every hit's is ``memory``.
    JSON_DERIVED: ClassVar = ("corpus", "citation")
    corpus: ClassVar = "memory"

    def __post_init__(self) -> None:
        cited = tuple(p if p.citation else replace(p, citation=cite(self.path, p.start_line, p.end_line))
                      for p in self.passages)
        object.__setattr__(self, "passages", cited)

    @property
    def citation(self) -> str:
        return cite(self.path, self.start_line, self.end_line)


def cite(path: str, start: int, end: int) -> str:
    """``path#L3-L9``, and ``path#L3`` for one line: OpenClaw 2026.9.6's ``formatCitation``, which
    ``read`` and ``memory_get`` take back as they are."""
    return f"{path}#L{start}" if start == end else f"{path}#L{start}-L{end}"


@dataclass(frozen=True)
class SearchResult:
    """A search's answer, in the keys of OpenClaw 2026.9.6's ``memory_search`` where it has one
    (``provider``, ``model``, ``citations``, ``mode``; ``stale: true`` with ``warning`` and ``action``
    only when stale, no ``stale`` key when fresh: an agent taught OpenClaw's tool reads any value there,
    an empty list too in JavaScript, as stale) and this product's own beside them (``stalePaths``,
    ``notes``, ``terms``, ``updating``)."""

    results: tuple[SearchHit, ...]
    mode: str
    provider: str = ""  # OpenClaw's embedding provider: here the backend that embedded the index (onnx, torch, hash)
    model: str = ""  # the embedding model of the index
    # Files changed since the last index that this answer did not search as they are now.
    stale_paths: tuple[str, ...] = key(omit=lambda r: not r.stale_paths, default=())
    notes: tuple[str, ...] = key(omit=lambda r: not r.notes, default=())
    terms: tuple[str, ...] = ()  # the query's words, as the keyword side matched them (for highlighting)
    # Another process was indexing this agent (a watch, the service's live sync, `index`): the
    # stale files are being indexed now, and this answer is the last complete index's.
    updating: bool = key(omit=lambda r: not r.updating, default=False)
    # The path and date filters given admit no indexed file: nothing was searched, whatever the score
    # (an empty answer then said "no file scored 0.03 or more", and a model lowered minScore).
    filtered_out: bool = key(omit=lambda r: not r.filtered_out, default=False)
    # How the caller runs this product (``settings.command_line``), for the command ``action`` names:
    # each front-end words it with its own settings flags (:meth:`suggesting`), as it words an error's
    # hints; never on the wire (a service's flags are not its caller's).
    program: str = key(hidden=True, default=PROGRAM)
    # The state dir is mounted read-only: no index run can write there (its lock cannot be taken), so
    # ``action`` bids remount it or give a writable one, not run `index` as such.
    read_only: bool = key(hidden=True, default=False)

    # OpenClaw's values: citations "on" (every result and passage carries its `citation`); the other
    # three are left out (None) when the index is fresh.
    JSON_DERIVED: ClassVar = ("citations", "stale", "warning", "action")
    citations: ClassVar = "on"

    @property
    def stale(self) -> bool | None:
        """True when files changed since the last index were not searched as they are now and no
        other process is indexing them (that routine indexing is no warning, as in OpenClaw); else None."""
        return True if self.stale_paths and not self.updating else None

    @property
    def warning(self) -> str | None:
        if not self.stale:
            return None
        shown = ", ".join(self.stale_paths[:10]) + (" ..." if len(self.stale_paths) > 10 else "")
        return (f"Memory index is stale: {len(self.stale_paths)} file(s) changed since the last index and were not "
                f"searched as they are now: {shown}. Search results may be incomplete.")

    @property
    def action(self) -> str | None:
        if not self.stale:
            return None
        if self.read_only:
            # (Not "another --state-dir": a search there without the workspace's own settings searched another memory.)
            return (f"Remount the state dir read-write, then run: `{self.program} index` (it is mounted read-only, where "
                    "no index run can write)")
        return f"Run: `{self.program} index`"

    def suggesting(self, program: str) -> SearchResult:
        """This answer with ``action`` naming ``program`` (the caller's ``settings.command_line``)."""
        return replace(self, program=program)

    def term_spans(self, line: str) -> list[tuple[int, int]]:
        """Where the query's words occur in a line of a snippet (for highlighting), in order, not
        overlapping: as terms match (``café`` for ``cafe``, in either Unicode form)."""
        from .terms import fold_spans, term_patterns

        patterns = term_patterns(list(self.terms))  # the terms folded (terms.fold): so is the line
        spans = sorted(fold_spans(line, lambda folded: [m.span() for p in patterns for m in p.finditer(folded)]))
        kept: list[tuple[int, int]] = []
        for start, end in spans:
            if not kept or start >= kept[-1][1]:
                kept.append((start, end))
        return kept


@dataclass(frozen=True)
class SyncSummary:
    files_scanned: int
    files_changed: int
    files_removed: int
    chunks_embedded: int
    chunks_reused: int
    chunks_deleted: int
    seconds: float = key(digits=3)
    notes: tuple[str, ...] = key(omit=lambda s: not s.notes, default=())
    # Only inside ``index.sync.keeping_reads()`` (the watch): the bytes of each file this sync read,
    # and the Markdown memory files it left out (``notes`` names them), for the history to keep
    # exactly what was indexed, not what the file holds by the time the sync is done.
    read: tuple[FileRead, ...] = key(hidden=True, default=())
    left_out: tuple = key(hidden=True, default=())  # scanned MemoryFile entries


@dataclass(frozen=True)
class FileRead:
    """A memory file's bytes as one sync read them once (``version``: their xxh3 hash)."""

    path: str  # as the index names it
    abs_path: str
    version: str
    data: bytes
    inode: int  # of the file read: whether the path still names it
    read_ns: int  # time.monotonic_ns() before it was opened: the order of the versions seen of a file


@dataclass(frozen=True)
class SyncProgress:
    """Reported while indexing: files read so far, chunks embedded so far, and their totals
    (``chunks_total`` grows as files are read: files are read, embedded and written in batches)."""

    files_done: int
    files_total: int
    chunks_done: int
    chunks_total: int
    phase: str = "read"  # "read" (files), "model" (loading the embedding model), "embed" (chunks)
    # Of chunks_done, those already in the live store (kept if the run stops); what is built beside
    # the live shard (changes past one batch, --full) is swapped in only at the end.
    chunks_written: int = 0
