"""Bulk lists of a workspace's files built with Python's cyclic collector paused.

A scan's 30,000 ``MemoryFile`` objects, a manifest's entries, the rows doctor compares: none of
them forms a cycle, yet the collector walked every new object again at each generation's
threshold, several times the work itself at 30,000 notes (bench/scale.py, callgrind).
"""

from __future__ import annotations

import gc


class _Paused:
    """One pause: a plain object, not a generator's context manager, so entering it makes no
    more than itself (the collector counts new objects to decide when to run)."""

    __slots__ = ("_was",)

    def __enter__(self) -> None:
        self._was = gc.isenabled()
        gc.disable()

    def __exit__(self, *_exc: object) -> None:
        if self._was:  # nested pauses: the outermost turns it back on
            gc.enable()


def gc_paused() -> _Paused:
    """The collector off inside the ``with`` block, and left as the caller had it."""
    return _Paused()
