"""The :class:`~openclaw_memory.memory.Memory` methods the service answers: for each, the types of
its arguments and of its result, which both ends of the socket read the JSON into.

A closed table: a request naming anything else is refused, and nothing in a request is looked up
as code. The result types load on first use (a ``read`` through the service must not import the
index).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def _read_result() -> type:
    from ..files.read import ReadResult

    return ReadResult


def _diff_read() -> type:
    from ..history.diff import DiffRead

    return DiffRead


def _write_result() -> type:
    from ..history.guard import WriteResult

    return WriteResult


def _state_report() -> type:
    from ..history.report import StateReport

    return StateReport


def _sync_summary() -> type:
    from ..index.sync import SyncSummary

    return SyncSummary


def _search_result() -> type:
    from ..index.results import SearchResult

    return SearchResult


def _index_status() -> type:
    from ..index.status import IndexStatus

    return IndexStatus


def _collections() -> Any:
    from ..index.api import CollectionInfo

    return list[CollectionInfo]


def _service_status() -> type:
    from .base import ServiceStatus

    return ServiceStatus


def _nothing() -> Any:
    return None


@dataclass(frozen=True)
class Operation:
    # Argument name -> its type. A value the product checks itself (a search mode, a day) is a
    # string here, so the service's answer to a bad one is the product's own message.
    params: dict[str, Any]
    result: Callable[[], Any]  # -> the result's type


_WINDOW = {"from_line": int | float | None, "lines": int | float | None, "max_chars": int | float | None}

OPERATIONS: dict[str, Operation] = {
    "read": Operation({"path": str, **_WINDOW, "clamp": bool}, _read_result),
    "read_diff": Operation({"path": str, "from_line": int | None, "lines": int | None, "max_chars": int | None}, _diff_read),
    "write": Operation({"path": str, "content": bytes | None, "append": bytes | None, "expect": str | None,
                        "update_index": bool, "idempotency_key": str | None, "tool": str}, _write_result),
    "restore": Operation({"path": str, "version": str, "update_index": bool}, _write_result),
    "state": Operation({}, _state_report),
    "index": Operation({"full": bool}, _sync_summary),
    "search": Operation({"query": str, "limit": int, "min_score": float | None, "mode": str, "sync": bool,
                         "collections": tuple[str, ...], "paths": tuple[str, ...], "since": str | None,
                         "until": str | None}, _search_result),
    "status": Operation({}, _index_status),
    "collections": Operation({}, _collections),
    "service": Operation({}, _service_status),
    "end_session": Operation({}, _nothing),
}
