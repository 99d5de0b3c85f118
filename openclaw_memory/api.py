"""The public Python API: what agents and plugins import (re-exported by the package).

Every function takes resolved :class:`~openclaw_memory.settings.Settings` and
returns plain data classes; nothing here prints.
"""

from __future__ import annotations

import datetime as dt

from typing import TYPE_CHECKING

from .files.read import ReadResult, read_memory_file
from .files.scan import ScanResult, scan_memory_files
from .settings import Settings

if TYPE_CHECKING:
    from .prompt import PromptSection


def list_memory_files(settings: Settings) -> ScanResult:
    """The workspace's memory files in OpenClaw's order, with what was skipped and why."""
    return scan_memory_files(
        settings.workspace,
        extra_paths=settings.extra_paths,
        multimodal=settings.multimodal,
        agent=settings.agent,
    )


def read_memory(
    settings: Settings,
    path: str,
    *,
    from_line: int = 1,
    lines: int | None = None,
    max_chars: int | None = None,
) -> ReadResult:
    """A paged read of one memory file (``memory_get``)."""
    return read_memory_file(
        path,
        str(settings.workspace),
        extra_paths=settings.extra_paths,
        from_line=from_line,
        lines=settings.read.default_lines if lines is None else lines,
        max_chars=settings.read.max_chars if max_chars is None else max_chars,
    )


def build_prompt(settings: Settings, *, today: dt.date | None = None, consume: bool = True) -> "PromptSection":
    """The startup-prompt memory section; a pending watchdog checkpoint is included once, then consumed."""
    from .prompt import build_prompt_section
    from .watch.checkpoint import consume_checkpoint, pending_checkpoint

    checkpoint = pending_checkpoint(settings.data_dir)
    section = build_prompt_section(
        list_memory_files(settings),
        today=today,
        file_cap=settings.prompt.file_chars,
        total_cap=settings.prompt.total_chars,
        checkpoint=checkpoint,
    )
    if checkpoint is not None and consume:
        consume_checkpoint(settings.data_dir)
    return section
