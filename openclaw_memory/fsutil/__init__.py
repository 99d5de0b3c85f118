"""File-system primitives every other part writes and reads through.

Safe opens (no symlinks followed, never a FIFO or device), streaming xxh3 hashes,
atomic writes, an EXDEV-safe move and an advisory file lock.

Import the submodules directly (``from openclaw_memory.fsutil.atomic import ...``):
this package stays empty so a command pays only for the primitives it uses.
"""
