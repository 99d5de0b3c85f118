"""watchfiles in background threads, one per kind of watch (recursive folders, flat folders).

watchfiles applies one ``recursive`` flag to all its paths, and the workspace root must not be
watched recursively (it may hold anything), so there are two watchers. Each thread forwards raw
event paths to one queue; the watcher loop does the debouncing. A thread's first message (its
first event set, or an empty set at the first timeout) tells that its watches are in place.
"""

from __future__ import annotations

import errno
import queue
import threading
from dataclasses import dataclass

POLL_DELAY_MS = 250
# How long a thread waits for more events before handing a set over: an editor's save (a
# temporary file renamed over the note) comes within a millisecond or two, and each step here
# is waited by every edit before its sync (50 ms measured 74 ms from the rename to the loop).
_STEP_MS = 20
_TIMEOUT_MS = 500  # how often a thread wakes up to check its stop event

# How the OS says it has no watches left: notify's MaxFilesWatch (inotify ENOSPC), or
# no inotify instance left (EMFILE).
_LIMIT_WORDS = ("watch limit", "maxfileswatch", "no space left on device", "os error 28", "too many open files", "os error 24")


@dataclass(frozen=True)
class Message:
    feed: Feed
    paths: frozenset[str] = frozenset()
    error: BaseException | None = None
    # Of ``paths``, those written in place or removed (not only created or renamed into place):
    # such a file may still be being written, or be half of an editor's rename dance.
    unsettled: frozenset[str] = frozenset()
    # Of ``paths``, those added or removed (not only modified): a watched folder among them is a new
    # one (polling reports a folder modified when an entry in it is added or removed).
    came_or_went: frozenset[str] = frozenset()


def _came_or_went(changes) -> frozenset[str]:
    from watchfiles import Change

    return frozenset(path for change, path in changes if change != Change.modified)


def _unsettled(changes) -> frozenset[str]:
    """The paths of a watchfiles change set written in place or removed. An atomic save shows as
    its temporary added and removed and the note added (renamed into place): all settled."""
    from watchfiles import Change

    added = {path for change, path in changes if change == Change.added}
    return frozenset(path for change, path in changes
                     if change == Change.modified or (change == Change.deleted and path not in added))


def is_watch_limit(exc: BaseException) -> bool:
    """Whether ``exc`` says the inotify limits (watches or instances) are reached."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EMFILE):
        return True
    text = str(exc).lower()
    return any(word in text for word in _LIMIT_WORDS)


def watch_limit_said(exc: BaseException) -> tuple[str, str]:
    """(what ran out, in words, with the folder where the library names one; the setting that raises it)
    of a :func:`is_watch_limit` error: its text is the library's ("Error { kind: MaxFilesWatch, paths:
    [...] }", "Error creating recommended watcher: Too many open files (os error 24)"), and its advice
    was the watches' limit where the instances' had run out."""
    import re

    text = str(exc)
    lowered = text.lower()
    if (isinstance(exc, OSError) and exc.errno == errno.EMFILE) or "too many open files" in lowered or "os error 24" in lowered:
        return "no inotify instance is left for this user", "fs.inotify.max_user_instances"
    where = re.search(r'paths: \["((?:[^"\\]|\\.)*)"', text)
    at = f" (at {where.group(1)})" if where else ""
    return f"the inotify watch limit was reached{at}", "fs.inotify.max_user_watches"


def is_undecodable_name(exc: BaseException) -> bool:
    """Whether ``exc`` is watchfiles failing on a path that is not UTF-8."""
    return "unable to decode path" in str(exc).lower()


def is_permission_denied(exc: BaseException) -> bool:
    """Whether ``exc`` says a folder to watch is unreadable."""
    if isinstance(exc, PermissionError):
        return True
    return "permission denied" in str(exc).lower() or "os error 13" in str(exc).lower()


class Feed:
    """One watchfiles watcher over ``paths`` in a daemon thread, posting to ``out``."""

    def __init__(self, paths: list[str], *, recursive: bool, polling: bool, out: queue.Queue[Message], ignore_denied: bool = False):
        self.paths = list(paths)
        self.recursive = recursive
        self.polling = polling
        # watchfiles' ignore_permission_denied also swallows "watch limit reached": only set it
        # once an unreadable folder was met (see is_permission_denied).
        self.ignore_denied = ignore_denied
        self.out = out
        self.stop_event = threading.Event()
        self.armed = False
        self._thread = threading.Thread(target=self._run, name=f"watch-{'tree' if recursive else 'flat'}", daemon=True)

    def start(self) -> Feed:
        self._thread.start()
        return self

    def stop(self, wait: float = 2.0) -> None:
        self.stop_event.set()
        self._thread.join(wait)

    def _run(self) -> None:
        import watchfiles

        told = False
        try:
            for changes in watchfiles.watch(
                *self.paths,
                watch_filter=None,  # every event is a hint; Targets.relevant decides
                debounce=_TIMEOUT_MS,
                step=_STEP_MS,
                stop_event=self.stop_event,
                rust_timeout=_TIMEOUT_MS,
                yield_on_timeout=True,
                raise_interrupt=False,
                force_polling=self.polling,
                poll_delay_ms=POLL_DELAY_MS,
                recursive=self.recursive,
                ignore_permission_denied=self.ignore_denied,
            ):
                if changes or not told:
                    told = True
                    self.out.put(Message(self, frozenset(path for _change, path in changes), unsettled=_unsettled(changes),
                                         came_or_went=_came_or_went(changes)))
        except Exception as exc:  # the watch could not be set up or died: the loop decides what next
            self.out.put(Message(self, error=exc))
