"""The memory-file model: which files are memory, and how they are read."""

from .paths import CANONICAL_ROOT, LEGACY_ROOT, display_path, file_kind, is_daily_note, is_memory_path
from .read import ReadResult, read_memory_file, resolve_memory_path
from .root import RootEntry, RootMemoryFiles, detect_root_memory_files, resolve_canonical_root_file
from .scan import MemoryFile, ScanResult, Skipped, scan_memory_files

__all__ = [
    "CANONICAL_ROOT",
    "LEGACY_ROOT",
    "MemoryFile",
    "ReadResult",
    "RootEntry",
    "RootMemoryFiles",
    "ScanResult",
    "Skipped",
    "detect_root_memory_files",
    "display_path",
    "file_kind",
    "is_daily_note",
    "is_memory_path",
    "read_memory_file",
    "resolve_canonical_root_file",
    "resolve_memory_path",
    "scan_memory_files",
]
