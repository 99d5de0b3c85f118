"""The closed sets of words the API speaks, as ``Literal`` types for type checkers."""

from __future__ import annotations

from typing import Literal, get_args

SearchMode = Literal["hybrid", "vector", "text"]
Severity = Literal["error", "warning", "info"]
RepairStatus = Literal["done", "declined", "failed", "rolled-back", "completed"]
FileStateName = Literal["read_fresh", "read_stale", "discovered_unread", "written_unread"]
WriteAction = Literal["append", "replace", "restore"]

SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)
SEVERITIES: tuple[str, ...] = get_args(Severity)
REPAIR_STATUSES: tuple[str, ...] = get_args(RepairStatus)
