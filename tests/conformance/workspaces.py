"""Building workspaces for the differential tests, and running this product's side of a request."""

from __future__ import annotations

import os
from pathlib import Path

from openclaw_memory.errors import MemoryToolError
from openclaw_memory.files.paths import DREAMS, LEGACY_DREAMS
from openclaw_memory.files.read import read_memory_file
from openclaw_memory.files.scan import scan_memory_files
from openclaw_memory.settings import normalize_extra_paths
from openclaw_memory.wire import to_json

# Deliberate difference: this product lists the dream diary; OpenClaw 2026.9.6 only reads it.
DREAM_NAMES = (DREAMS, LEGACY_DREAMS)
DREAMS_REASON = "our users ask for the dream diary; OpenClaw 2026.9.6 only reads it"
SKIPPED_REASON = "a user must learn why a note is missing; OpenClaw drops what it passes over silently"


def build(root: Path, tree: dict[str, object]) -> Path:
    """``tree`` maps relative paths to bytes/str (a file), None (a folder) or ("symlink", target)."""
    for rel, content in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            path.mkdir(parents=True, exist_ok=True)
        elif isinstance(content, tuple) and content[0] == "symlink":
            os.symlink(content[1], path)
        elif isinstance(content, tuple) and content[0] == "fifo":
            os.mkfifo(path)
        else:
            path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return root


def our_extras(ws: Path, extra: list) -> list:
    items = [e if isinstance(e, str) else (e["path"], e.get("pattern", "")) for e in extra]
    return normalize_extra_paths(items, ws)


def our_scan(ws: Path, extra: list, multimodal: bool = False):
    return scan_memory_files(ws, extra_paths=our_extras(ws, extra), multimodal=multimodal)


def their_list(ws: Path, answer: dict) -> list[str] | str:
    if "error" in answer:
        return "ERROR"
    return [os.path.relpath(p, ws) for p in answer["files"]]


def openclaw_keys(read: dict) -> dict:
    """A read's JSON less the ``version``, ``warnings`` and ``lineChars`` it adds (deliberate
    differences: docs/openclaw.md)."""
    return {k: v for k, v in read.items() if k not in ("version", "warnings", "lineChars")}


def our_read(ws: Path, path: str, extra: list, from_line=None, lines=None, max_chars=None) -> dict | str:
    from openclaw_memory.files.read import clamp_window_args

    f, n, m = clamp_window_args(from_line, lines, max_chars, default_lines=120, default_max_chars=12_000)
    try:
        return openclaw_keys(to_json(read_memory_file(path, str(ws), extra_paths=our_extras(ws, extra),
                                                      from_line=f, lines=n, max_chars=m)))
    except MemoryToolError:
        return "ERROR"


def their_read(answer: dict) -> dict | str:
    return "ERROR" if "error" in answer else answer


def read_request(ws: Path, path: str, extra: list, from_line=None, lines=None, max_chars=None) -> dict:
    req = {"op": "read", "ws": str(ws), "path": path, "extra": extra}
    for key, value in (("from", from_line), ("lines", lines), ("maxChars", max_chars)):
        if value is not None:
            req[key] = value
    return req
