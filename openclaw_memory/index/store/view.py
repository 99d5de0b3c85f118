"""The index as this process's searches read it, shared by calls side by side; see :class:`ReadView`."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class ReadView:
    """The index as this process's searches read it (the open shards, and the manifests and keyword
    statistics written with them): readers share it, a writer has it alone.

    Reentrant per thread, and a thread that reads may also write (a sync reads while it embeds,
    then writes to commit); two threads that both read must not both wait to write (each would
    wait for the other's read; the agent's sync lock lets one sync at a time in, and anything else
    that writes holds no read). A writer waits for the readers in flight; new readers still come
    in for its first ``grace_s`` (a reader arriving then would wait for the searches before it
    as well as for the commit), then wait behind it, so a commit is not held off for long by a
    stream of searches.
    """

    grace_s = 0.25

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers: dict[int, int] = {}  # thread id -> depth
        self._writer: int | None = None
        self._writes = 0  # the writer's depth
        self._waiting = 0  # writers waiting
        self._pressing = 0  # writers waiting past their grace: new readers wait behind them
        self.readers_waiting = 0  # readers waiting for a writer
        self._upgrading: int | None = None  # a reader waiting to write

    def acquire_read(self, blocking: bool = True) -> bool:
        me = threading.get_ident()
        with self._cond:
            held = self._readers.get(me, 0)
            if held or self._writer == me:
                self._readers[me] = held + 1
                return True
            if self._writer is not None or self._pressing:
                if not blocking:
                    return False
                self.readers_waiting += 1
                try:
                    while self._writer is not None or self._pressing:
                        self._cond.wait()
                finally:
                    self.readers_waiting -= 1
            self._readers[me] = 1
            return True

    def release_read(self) -> None:
        me = threading.get_ident()
        with self._cond:
            left = self._readers[me] - 1
            if left:
                self._readers[me] = left
            else:
                del self._readers[me]
                self._cond.notify_all()

    def acquire_write(self, blocking: bool = True) -> bool:
        me = threading.get_ident()
        with self._cond:
            if self._writer == me:
                self._writes += 1
                return True
            if self._writer is None and not self._others(me):
                self._writer, self._writes = me, 1
                return True
            if not blocking:
                return False
            reader = me in self._readers
            if reader:
                if self._upgrading is not None:
                    raise RuntimeError("two threads that read the index both wait to write it")
                self._upgrading = me
            self._waiting += 1
            pressing = False
            deadline = time.monotonic() + self.grace_s
            try:
                while self._writer is not None or self._others(me):
                    left = deadline - time.monotonic()
                    if not pressing and left <= 0:
                        pressing = True
                        self._pressing += 1
                    self._cond.wait(None if pressing else left)
            finally:
                self._waiting -= 1
                if pressing:
                    self._pressing -= 1
                    self._cond.notify_all()
                if reader:
                    self._upgrading = None
            self._writer, self._writes = me, 1
            return True

    def release_write(self) -> None:
        with self._cond:
            self._writes -= 1
            if not self._writes:
                self._writer = None
                self._cond.notify_all()

    def _others(self, me: int) -> bool:
        return any(t != me for t in self._readers)

    def writing_here(self) -> bool:
        """Whether this thread holds the view to write (a commit in progress)."""
        return self._writer == threading.get_ident()

    def held_here(self) -> bool:
        """Whether this thread holds the view at all."""
        me = threading.get_ident()
        return self._writer == me or me in self._readers

    def depth_here(self) -> int:
        """How many reads of the view this thread holds (nested)."""
        return self._readers.get(threading.get_ident(), 0)

    @contextmanager
    def reading(self) -> Iterator[None]:
        self.acquire_read()
        try:
            yield
        finally:
            self.release_read()

    @contextmanager
    def writing(self) -> Iterator[None]:
        self.acquire_write()
        try:
            yield
        finally:
            self.release_write()

    @contextmanager
    def released(self) -> Iterator[None]:
        """This thread's reads let go for the block (a wait for a lock that a writer of this view
        may hold), then taken again."""
        me = threading.get_ident()
        with self._cond:
            held = 0 if self._writer == me else self._readers.pop(me, 0)
            if held:
                self._cond.notify_all()
        try:
            yield
        finally:
            if held:
                self.acquire_read()
                with self._cond:
                    self._readers[me] = held
