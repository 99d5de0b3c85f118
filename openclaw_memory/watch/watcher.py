"""The watch loop: events are hints, the incremental sync is the truth.

1. Take the agent's watch lock, arm the folder watchers (inotify; polling when the inotify
   limits are reached), run one incremental sync of everything, record every memory file's
   version in the history, load the model (it stays loaded).
2. Collect event paths; once no event came for ``QUIET_S`` (or ``MAX_WAIT_S`` after the first),
   run the same incremental sync: it stats every file and hashes only those whose stat moved,
   so an editor's rename/replace dance, a burst of saves or a lost event all end in one
   correct sync. When every event of the batch created a file or renamed one into place (an
   atomic save, the file is whole), the sync runs at once (``SETTLED_S``); a file written in
   place or removed waits the full ``QUIET_S`` (it may still be written, or be half of an
   editor's dance). Every ``BACKSTOP_S`` without events the same sync runs anyway (the kernel
   queue can overflow and drop events silently).
3. The watcher runs inside the service (:mod:`openclaw_memory.serve.service`), on the
   service's warm index: each sync and the warm-up run in ``index_session`` (shards left
   open); the sync reads the index beside the service's requests while it embeds and has it
   alone only for its commit, so a search waits for that commit at most, never for a whole
   sync; the service closes shards left unused (``[service] shard_idle``).
4. SIGINT/SIGTERM/SIGHUP stop the loop; a sync in progress is abandoned at its next Python step (the
   index is crash-safe: the next run finishes it), except inside its commit, which it finishes
   first (searches in flight would see it half done); every lock is released on the way out. A
   callback that prints (a change, a notice) is abandoned too: its stdout may be a pipe nobody reads.
"""

from __future__ import annotations

import os
import queue
import signal
import stat
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import faults
from ..errors import LockTimeout, MemoryToolError, describe_os_error
from ..files.paths import display_path
from ..files.scan import MemoryFile, scan_paths, scan_workspace
from ..fsutil.hashing import hash_bytes
from ..fsutil.safeopen import open_regular_in_roots, read_and_close
from ..index.results import FileRead
from ..index.sync import KEPT_READS_BYTES, keeping_reads
from ..links.table import refresh_synced
from ..signals import stop_signals
from ..wire import key
from .changes import FileChange, applied_changes, indexed_files
from .feeds import POLL_DELAY_MS, Feed, Message, is_permission_denied, is_undecodable_name, is_watch_limit, watch_limit_said
from .presence import hold_presence
from .targets import Targets, unreadable_folders, watch_targets
from .versions import history_mark, record_read, record_versions

if TYPE_CHECKING:
    from ..index.api import MemoryIndex
    from ..settings import Settings

QUIET_S = 0.2
SETTLED_S = 0.0  # after the feed's own step (feeds._STEP_MS): a batch of atomic saves and new files
MAX_WAIT_S = 2.0
BACKSTOP_S = 30.0
ARM_WAIT_S = 3.0  # how long to wait for the watchers to be in place before the first sync
RETRY_S = 1.0  # after a failed sync (index busy) or a watcher error
# The poller compares modification times to the second: a save in the same second as the last one it
# saw of a file (or as its first walk, after arming) is no event. Under polling, a sync that had
# events or followed an arming is followed by one more this long after it, once that second is past.
POLL_SECOND_S = 1.1
# How often the watched folders' own identity is looked at (an lstat each): a folder replaced by
# another at its path (the workspace restored from a backup, `mv ws ws.old; mkdir ws`) is no event
# the watchers pass on, and the old folder's watch follows the old folder.
IDENTITY_S = 0.25
WORKSPACE_GONE = "its workspace is gone"  # why a watch stopped by itself (WatchSummary.stopped_by)


# Reads ahead of one note closer than this are one save's writes: only the last is kept.
SETTLE_S = 0.5


class _Queue(queue.Queue):
    """The feeds' queue; while a sync runs, each message is also handed to ``tap`` (in the feed's
    thread) as it is posted: the loop reads it only once the sync is done."""

    tap: Callable[[Message], None] | None = None

    def put(self, item, block=True, timeout=None):
        tap = self.tap
        if tap is not None:
            try:
                tap(item)
            except Exception:  # noqa: BLE001 - a read ahead that failed leaves the version to the next sync
                pass
        super().put(item, block, timeout)


class WatchStopped(BaseException):
    """Raised by the signal handler to abandon a sync in progress (BaseException: nothing swallows it)."""


@dataclass(frozen=True)
class WatchStarted:
    workspace: str
    agent: str
    mode: str  # inotify | polling
    folders: tuple[str, ...]
    files: int  # memory files indexed after the first sync


@dataclass(frozen=True)
class WatchSummary:
    batches: int
    changes: int
    seconds: float = key(digits=3)
    stopped_by: str = key()  # the signal name, or "stop" when asked by the caller


def _ignore(_message: str) -> None:
    return None


def _refresh_links(settings: Settings, paths: list[str] | None) -> str | None:
    """The link table kept current with the files the sync applied (``links`` then parses nothing
    the watch saw); a note when it could not be (the table is a cache: ``links`` parses them then)."""
    try:
        refresh_synced(settings, paths)
    except (MemoryToolError, OSError) as exc:
        why = exc.message if isinstance(exc, MemoryToolError) else (exc.strerror or str(exc))
        return f"link table not updated this time: {why}"
    return None


class Watcher:
    """Keep ``settings.agent``'s index in step with its memory files until stopped.

    ``index`` is the service's warm index and ``index_session(index)`` the block each sync runs
    in (its lock). ``on_change`` gets one :class:`FileChange` per file a sync applied, ``on_notice`` a line
    of news (fallback to polling, re-arming, an index busy elsewhere), ``on_start`` the
    :class:`WatchStarted` once the first sync is done and the model is loaded.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        index: MemoryIndex,
        index_session: Callable[[MemoryIndex], AbstractContextManager[None]],
        on_change: Callable[[FileChange], None],
        on_notice: Callable[[str], None] = _ignore,
        on_start: Callable[[WatchStarted], None] | None = None,
        polling: bool = False,
        backstop_s: float = BACKSTOP_S,
        noted: list[str] | None = None,
    ):
        self.settings = settings
        self.on_change = on_change
        self.on_notice = on_notice
        self.on_start = on_start
        self.polling = polling
        self.backstop_s = backstop_s
        self._index = index
        self._index_session = index_session
        self.stop_event = threading.Event()
        self._queue: _Queue = _Queue()
        # Versions read at their events (in the feed's thread), each with the history's last entry
        # then, recorded by the next sync: a sync may take minutes, and a person's saves meanwhile
        # are each kept, not only the one the sync after it finds.
        self._ahead: list[tuple[FileRead, int]] = []
        self._ahead_bytes = 0
        self._ahead_lock = threading.Lock()
        self._queue.tap = self._read_ahead
        self._feeds: list[Feed] = []
        self._targets: Targets | None = None
        self._rearm_at: float | None = None  # when to retry watchers that failed
        self.ignore_denied = False
        self._denied: tuple[str, ...] = ()  # folders the watchers skipped as unreadable, asked again each RETRY_S
        self._denied_asked = 0.0
        self._told: set[str] = set()  # watcher errors already told
        self._said: set[str] = set()  # the previous sync's notes
        self._failing: str | None = None  # the kind of failure the syncs meet now (said once), None when they succeed
        self._quick_rearm_at = -RETRY_S  # the last re-arm at once after an undecodable name
        self._identity_at = 0.0  # when the watched folders' identity was last looked at
        self._busy = False
        # Telling the caller (on_change, on_notice, on_start) from the loop: a stop signal abandons
        # that too. A print to a stdout nobody read (a pipe whose reader stopped, a terminal paused
        # with Ctrl-S) blocked there, retried after each handler, and the stop was never seen.
        self._telling = False
        self._armed_since_sync = False  # under polling: a sync is due once the arming's second is past
        self._signal = "stop"
        # Stop signals by name, appended by the signal handler (which may take no lock). A caller's
        # own handler's list (the service's, from before it started the watch) is this one: a Ctrl-C
        # between the watch's lock and its handlers was noted there and never seen, and it ran on.
        self._noted: list[str] = noted if noted is not None else []
        self.batches = 0
        self.changes = 0

    # -- public ------------------------------------------------------------------------------

    def run(self) -> WatchSummary:
        """Watch until SIGINT/SIGTERM/SIGHUP (on the main thread) or ``stop()``."""
        started = time.monotonic()
        presence = hold_presence(self.settings)
        faults.reach("watch:held")
        restore = self._install_signals()
        try:
            self._loop(self._index)
        except WatchStopped:
            self._keep_read_ahead()  # saves read during the sync the stop abandoned
        finally:
            self._disarm()
            presence.release()
            if restore is not None:
                restore()
        stopped_by = self._noted[0] if self._noted and self._signal != WORKSPACE_GONE else self._signal
        return WatchSummary(self.batches, self.changes, time.monotonic() - started, stopped_by)

    def stop(self) -> None:
        """Ask the loop to stop (from another thread); it returns within a fraction of a second."""
        self.stop_event.set()

    def _stopping(self) -> bool:
        return bool(self._noted) or self.stop_event.is_set()

    def _committing(self) -> bool:
        """Whether this thread is inside a sync's commit (the index's read view held to write)."""
        view = self._index.store.view
        return view is not None and view.writing_here()

    # -- signals -----------------------------------------------------------------------------

    def _install_signals(self):
        if threading.current_thread() is not threading.main_thread():
            return None
        previous = {sig: signal.getsignal(sig) for sig in stop_signals()}

        def handler(signum, _frame):
            # No Event.set() here: it takes a lock the interrupted code may hold (a deadlock);
            # the loop checks ``_noted`` as often as the stop event.
            self._noted.append(signal.Signals(signum).name)
            if self._telling or (self._busy and not self._committing()):
                raise WatchStopped()

        for sig in previous:
            signal.signal(sig, handler)

        def restore():
            for sig, old in previous.items():
                signal.signal(sig, old)

        return restore

    def _tell(self, call: Callable, *args) -> None:
        """``call(*args)`` (a callback that prints), abandoned by a stop: not begun once one was
        noted, cut short by one that comes while it waits for its reader (what it did not print is
        dropped; the sync before it is done)."""
        if self._stopping():
            raise WatchStopped()
        self._telling = True
        try:
            call(*args)
        finally:
            self._telling = False

    # -- the loop ----------------------------------------------------------------------------

    def _loop(self, index: MemoryIndex) -> None:
        targets = self._arm()
        ok = self._apply(index, set(), first=True)
        if self._stopping():
            return
        self._warm(index)
        if self.on_start is not None:
            self._tell(
                self.on_start,
                WatchStarted(
                    str(self.settings.workspace),
                    self.settings.agent,
                    "polling" if self.polling else "inotify",
                    tuple(targets.paths()),
                    len(indexed_files(self.settings)),
                )
            )
        hints: set[str] = set()
        rearm = False  # a watched folder itself was removed or made again
        first_at = last_at = 0.0
        quiet = SETTLED_S  # QUIET_S once the batch has a file written in place or removed
        due = self._next_due(ok, False)  # the next sync without events
        while not self._stopping():
            now = time.monotonic()
            wait = min(last_at + quiet, first_at + MAX_WAIT_S) - now if hints else due - now
            try:
                message = self._queue.get(timeout=min(max(wait, 0.0), 0.25))
            except queue.Empty:
                message = None
            if message is not None and message.feed in self._feeds:
                if message.error is not None:
                    if self._on_feed_error(message.error):
                        targets = self._arm()
                    due = time.monotonic()  # events may have been lost with the watcher
                else:
                    fresh = {p for p in message.paths if targets.relevant(p)}
                    rearm = rearm or targets.names_a_watched_folder(message.came_or_went)
                    if fresh:
                        index.files_changed()  # a search meanwhile walks again, not waiting for the sync
                        now = time.monotonic()
                        if not hints:
                            first_at = now
                            quiet = SETTLED_S
                        last_at = now
                        hints |= fresh
                        if not fresh.isdisjoint(message.unsettled):
                            quiet = QUIET_S
            now = time.monotonic()
            if self._rearm_at is not None and now >= self._rearm_at:
                targets = self._arm()
                due = now
            if self._denied and now - self._denied_asked >= RETRY_S and self._readable_again():
                targets = self._arm()
                due = now
            if now - self._identity_at >= IDENTITY_S:
                self._identity_at = now
                if self._replaced():
                    self.on_notice("the watched folders changed; re-arming the watchers")
                    targets = self._arm()
                    due = time.monotonic()  # what was written meanwhile had no watch: one sync covers it
            ready = hints and (now - last_at >= quiet or now - first_at >= MAX_WAIT_S)
            if ready or now >= due:
                ok = self._apply(index, hints)
                due = self._next_due(ok, bool(hints))
                hints = set()
                if rearm or self._targets_changed():
                    self.on_notice("the watched folders changed; re-arming the watchers")
                    targets = self._arm()
                    rearm = False
                    due = time.monotonic()  # events may have been missed while re-arming

    def _apply(self, index: MemoryIndex, hints: set[str], first: bool = False) -> bool:
        """One incremental sync; report what it applied and record the versions seen. False: retry soon."""
        settings = self.settings
        workspace = str(settings.workspace)
        self._busy = True
        try:
            if self._stopping():
                raise WatchStopped()
            before = indexed_files(settings)
            mark = history_mark(settings)
            started = time.monotonic()
            try:
                with self._index_session(index), keeping_reads():
                    summary = index.sync()
            except (MemoryToolError, OSError) as exc:  # LockTimeout (index busy), DiskFull, the workspace unreadable...
                ahead = self._take_read_ahead()
                self._sync_failed(exc)
                # The index is derived and catches up once it can; the bytes seen now may be gone by then.
                # A retry with no event since (every second while it fails) has nothing new to record:
                # no walk of every note for none of them.
                warning = None
                if first or hints or ahead:
                    files = self._markdown_files()
                    done, warning = record_read(settings, self._memory_reads(ahead, {f.path for f in files}))
                    if not first:  # the scan says which named paths are memory files (not an editor's temp file)
                        hinted = {display_path(p, workspace) for p in hints}
                        files = [f for f in files if f.path in hinted]
                    files = [f for f in files if f.path not in done]
                    warning = record_versions(settings, [f.path for f in files], files) or warning
                if warning:
                    self.on_notice(warning)
                return False
            ahead = self._take_read_ahead()
            ms = int(round((time.monotonic() - started) * 1000))
            after = indexed_files(settings)
            changes = applied_changes(before, after, ms, summary)
            # Exactly the bytes the sync indexed, then those read at events during it (saves the sync
            # itself never saw), in the order they were read: not what the files hold by now.
            left = {f.path for f in summary.left_out}
            reads = [(r, mark) for r in summary.read] + self._memory_reads(ahead, after.keys() | left)
            done, recorded = record_read(settings, reads)
            scanned: list = []
            if first:
                scanned = self._markdown_files()
                seen = [f.path for f in scanned]
            else:
                shown = (display_path(p, workspace) for p in hints)
                seen = [c.path for c in changes if c.version is not None] + [p for p in shown if p in after]
            # A note the index leaves out (a name that is not UTF-8, too large) is no less a memory file.
            seen += [f.path for f in summary.left_out]
            rest = [p for p in seen if p not in done]
            warning = record_versions(settings, rest, [f for f in (*scanned, *summary.left_out) if f.path not in done])
            warning = warning or recorded
            links = _refresh_links(settings, None if first else [p for p in seen if p not in left])
        finally:
            self._busy = False
        self.batches += 1
        if self._failing is not None:
            self._failing = None
            self.on_notice("the index is up to date again")
        for note in summary.notes:
            if note not in self._said:  # a standing condition ("not indexed: ...") is said once
                self._tell(self.on_notice, note)
        self._said = set(summary.notes)
        for told in (warning, links):
            if told:
                self._tell(self.on_notice, told)
        self.changes += len(changes)  # applied, each, whether or not a stop leaves its line unsaid
        for change in changes:
            self._tell(self.on_change, change)
        return True

    # -- reading at the event ------------------------------------------------------------------

    def _take_read_ahead(self) -> list[tuple[FileRead, int]]:
        with self._ahead_lock:
            ahead, self._ahead, self._ahead_bytes = self._ahead, [], 0
        return ahead

    def _keep_read_ahead(self) -> None:
        """Record what was read ahead and not yet recorded (a stop that abandoned the sync)."""
        ahead = self._take_read_ahead()
        if not ahead:
            return
        try:
            done, warning = record_read(self.settings, self._memory_reads(ahead, indexed_files(self.settings).keys()))
        except (MemoryToolError, OSError) as exc:
            warning = exc.message if isinstance(exc, MemoryToolError) else (exc.strerror or str(exc))
        if warning:
            self.on_notice(warning)

    def _read_ahead(self, message: Message) -> None:
        """Read each note an event names as it comes, in the feed's thread, while a sync runs: it may
        take minutes, the loop reads no event meanwhile, and a person's saves are kept, each, not only
        the one the next sync finds. Which of them are memory files is decided by the next sync
        (:meth:`_memory_reads`). Idle, the loop's own sync reads the note (once it has settled). A
        read of the same file (its inode) read less than ``SETTLE_S`` before replaces that one: the
        writes of one save in place (truncate, then a write at a time) are one version, not one
        each; an atomic save is a new file each time, each kept."""
        targets = self._targets
        if targets is None or message.error is not None or not self._busy:
            return
        workspace = str(self.settings.workspace)
        roots = (workspace, *map(str, self.settings.extra_paths))
        mark = None
        for p in sorted(message.paths):
            if not p.endswith(".md") or not targets.relevant(p):
                continue
            if mark is None:  # (once a message: a query of the state database each)
                mark = history_mark(self.settings)
            read_ns = time.monotonic_ns()
            try:
                fd, st = open_regular_in_roots(roots, p)
            except OSError:
                continue  # gone again, a folder, not a regular file: nothing to keep
            if st.st_size > KEPT_READS_BYTES - self._ahead_bytes:
                os.close(fd)
                continue  # past the budget: the next sync records what the file holds then
            try:
                data = read_and_close(fd)
            except OSError:
                continue
            with self._ahead_lock:
                shown = display_path(p, workspace)  # named as the sync and the history name it
                last = next((i for i in range(len(self._ahead) - 1, -1, -1) if self._ahead[i][0].path == shown), None)
                if (last is not None and self._ahead[last][0].inode == st.st_ino
                        and read_ns - self._ahead[last][0].read_ns < SETTLE_S * 1e9):
                    self._ahead_bytes -= len(self._ahead.pop(last)[0].data)  # the same save, further on
                self._ahead.append((FileRead(shown, os.path.normpath(os.path.join(workspace, shown)), hash_bytes(data), data,
                                             st.st_ino, read_ns), mark))
                self._ahead_bytes += len(data)

    def _memory_reads(self, ahead: list[tuple[FileRead, int]], known) -> list[tuple[FileRead, int]]:
        """Of the versions read ahead, those of memory files: the index's (``known``), or Markdown
        memory files the scan finds at that name."""
        if not ahead:
            return []
        rest = sorted({r.path for r, _mark in ahead if r.path not in known})
        found: set[str] = set()
        if rest:
            try:
                files = scan_paths(self.settings, rest)
            except OSError:
                files = None
            found = {f.path for f in files or () if f.kind == "markdown"}
        return [(r, mark) for r, mark in ahead if r.path in known or r.path in found]

    def _sync_failed(self, exc: MemoryToolError | OSError) -> None:
        """Say why a sync failed, once while the same kind of failure lasts (it is retried every
        ``RETRY_S``: a full disk said it once a second); stop when the workspace itself is gone."""
        workspace = str(self.settings.workspace)
        if _gone(workspace):
            # Nothing is left to watch at that path (a renamed workspace is another one: its own data dir).
            self._signal = WORKSPACE_GONE
            self.on_notice(f"the workspace {workspace} is gone (removed, renamed or no longer a folder): "
                           "nothing left to watch; stopping (start it again once the workspace is back)")
            raise WatchStopped()
        kind = type(exc).__name__
        if kind == self._failing:
            return
        self._failing = kind
        if isinstance(exc, LockTimeout):
            self.on_notice(f"index busy, will retry: {exc.message}")
        else:
            why = exc.message if isinstance(exc, MemoryToolError) else describe_os_error(exc)
            self.on_notice(f"index not updated, will retry: {why}")

    def _markdown_files(self) -> list[MemoryFile]:
        """The workspace's Markdown memory files as they are now; none when it cannot be listed."""
        try:
            return [f for f in scan_workspace(self.settings, multimodal=False).files if f.kind == "markdown"]
        except OSError:  # unreadable or gone meanwhile: the next sync meets it too, and says so
            return []

    def _warm(self, index: MemoryIndex) -> None:
        """Load the tokenizer and the model now, so the first edit does not wait for them."""
        self._busy = True
        try:
            with self._index_session(index):
                _ = index.models.counter  # loaded on first access
                index.models.embedder.encode(["warm-up"])
        finally:
            self._busy = False

    # -- watchers ----------------------------------------------------------------------------

    def _next_due(self, ok: bool, had_events: bool) -> float:
        """When to sync next without events: soon after a failure, and under polling once the second
        of the events it had or of its watchers' arming is past (see POLL_SECOND_S)."""
        now = time.monotonic()
        if not ok:
            return now + RETRY_S
        if self.polling and (had_events or self._armed_since_sync):
            self._armed_since_sync = False
            return now + POLL_SECOND_S
        return now + self.backstop_s

    def _arm(self) -> Targets:
        """(Re)start the watchers on the current targets and wait until they are in place; the targets."""
        self._rearm_at = None
        self._armed_since_sync = True
        while True:
            targets, error = self._start_feeds()
            if error is None:
                return targets
            if not self._on_feed_error(error):
                return targets

    def _start_feeds(self) -> tuple[Targets, BaseException | None]:
        """The targets now and the error of a watcher that failed to start (None: all in place)."""
        self._disarm()
        targets = self._targets = watch_targets(self.settings)
        # Made readable later, such a folder would stay unwatched (a chmod is no event the watchers
        # pass on): each edit in it waited for the backstop sync.
        self._denied = unreadable_folders(targets) if self.ignore_denied else ()
        for group, recursive in ((targets.recursive, True), (targets.flat, False)):
            if group:
                feed = Feed([t.path for t in group], recursive=recursive, polling=self.polling, out=self._queue,
                            ignore_denied=self.ignore_denied)
                self._feeds.append(feed.start())
        deadline = time.monotonic() + ARM_WAIT_S
        waiting = set(self._feeds)
        while waiting and time.monotonic() < deadline and not self._stopping():
            try:
                message = self._queue.get(timeout=0.1)
            except queue.Empty:
                continue
            if message.feed not in self._feeds:
                continue
            waiting.discard(message.feed)
            if message.error is not None:
                return targets, message.error
            # Events that arrived while arming are covered by the sync that follows.
        return targets, None

    def _readable_again(self) -> bool:
        """Whether a folder the watchers skipped as unreadable can be read now (then they re-arm)."""
        self._denied_asked = time.monotonic()
        readable = [d for d in self._denied if os.access(d, os.R_OK | os.X_OK)]
        if readable:
            shown = ", ".join(display_path(d, str(self.settings.workspace)) for d in readable)
            self.on_notice(f"{shown} can be read now; re-arming the watchers")
        return bool(readable)

    def _disarm(self) -> None:
        feeds, self._feeds = self._feeds, []
        for feed in feeds:
            feed.stop_event.set()
        for feed in feeds:
            feed.stop()

    def _on_feed_error(self, exc: BaseException) -> bool:
        """Handle a watcher that failed; True when it should be re-armed at once (now polling)."""
        if is_watch_limit(exc) and not self.polling:
            self.polling = True
            what, setting = watch_limit_said(exc)
            self.on_notice(f"{what}; falling back to polling every {POLL_DELAY_MS} ms (raise {setting} to get events again)")
            return True
        if is_permission_denied(exc) and not self.ignore_denied:
            self.ignore_denied = True
            self.on_notice(f"unreadable folder ({exc}): not watched; the {self.backstop_s:g} s verify covers what it can read")
            return True
        now = time.monotonic()
        if is_undecodable_name(exc):
            # watchfiles gives up on the whole watch at each event for such a name: a new watch
            # works until the next one, and the sync that follows covers what the old one missed.
            if str(exc) not in self._told:
                self._told.add(str(exc))
                self.on_notice(f"the folder watcher cannot follow a file whose name is not UTF-8 ({exc}): "
                               "it restarts after each change to that file; rename it")
            if now - self._quick_rearm_at >= RETRY_S:
                self._quick_rearm_at = now
                return True
        else:
            self.on_notice(f"a folder watcher stopped ({exc}); re-arming in {RETRY_S:g} s")
        self._disarm()
        self._rearm_at = now + RETRY_S
        return False

    def _replaced(self) -> bool:
        """Whether a watched folder's path names another folder now (its inode): the workspace root or
        memory/ replaced by a new one at the same path. A folder gone is left to the sync (it says so)."""
        targets = self._targets
        if targets is None:
            return False
        for t in targets.flat + targets.recursive:
            try:
                st = os.lstat(t.path)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) != t.key:
                return True
        return False

    def _targets_changed(self) -> bool:
        return self._targets is None or watch_targets(self.settings).identity != self._targets.identity


def _gone(path: str) -> bool:
    """Whether no folder is at ``path`` any more (an unreadable one, or one above it, is still there)."""
    try:
        return not stat.S_ISDIR(os.stat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
