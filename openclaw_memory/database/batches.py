"""A long list of values asked for a few hundred at a time: a statement's parameters are bounded."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

_Value = TypeVar("_Value")
IN_BATCH = 500  # values per `IN (…)`: SQLite's default limit on a statement's parameters was 999 before 3.32


def in_batches(values: Sequence[_Value]) -> Iterator[tuple[Sequence[_Value], str]]:
    """``values`` a few hundred at a time, each part with the ``?,?,…`` its ``IN (…)`` takes."""
    for start in range(0, len(values), IN_BATCH):
        part = values[start:start + IN_BATCH]
        yield part, ",".join("?" * len(part))
