"""openclaw-memory: find, read, index and search an AI agent's Markdown memory.

The stable public surface, like OpenClaw's plugin SDK facade::

    from openclaw_memory import resolve_settings, list_memory_files, read_memory
    settings = resolve_settings()
    for f in list_memory_files(settings).files:
        print(f.path)
"""

import importlib

__version__ = "0.1.0"

# Public name -> module that defines it. Loaded on first use so that importing the
# package (and every CLI command) pays only for what it touches.
_EXPORTS = {
    "build_prompt": ".api",
    "file_states": ".api",
    "file_history": ".api",
    "read_memory_diff": ".api",
    "restore": ".api",
    "write_memory": ".api",
    "list_memory_files": ".api",
    "read_memory": ".api",
    "MemoryIndex": ".index.api",
    "SearchResult": ".index.search",
    "SyncSummary": ".index.sync",
    "run_doctor": ".doctor.runner",
    "DoctorReport": ".doctor.runner",
    "take_snapshot": ".watchdog.snapshot",
    "verify_workspace": ".watchdog.verify",
    "heartbeat": ".watchdog.heartbeat",
    "MemoryToolError": ".errors",
    "PathRefused": ".errors",
    "UsageError": ".errors",
    "WorkspaceError": ".errors",
    "WriteBlocked": ".errors",
    "MemoryFile": ".files.scan",
    "ScanResult": ".files.scan",
    "ReadResult": ".files.read",
    "DiffRead": ".history.diff",
    "WriteResult": ".history.guard",
    "VersionHistory": ".history.listing",
    "FileState": ".history.report",
    "StateReport": ".history.report",
    "RootMemoryFiles": ".files.root",
    "detect_root_memory_files": ".files.root",
    "resolve_canonical_root_file": ".files.root",
    "is_memory_path": ".files.paths",
    "PromptSection": ".prompt.loader",
    "Overrides": ".settings",
    "Settings": ".settings",
    "resolve_settings": ".settings",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'openclaw_memory' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
