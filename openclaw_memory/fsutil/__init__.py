"""File-system primitives every other part writes and reads through.

Safe opens (a user's path resolved one folder at a time from the allowed root's
descriptor, no symlink followed, never a FIFO or device), streaming xxh3 hashes,
atomic writes and an EXDEV-safe move on folder descriptors, and an advisory file lock.

Import the submodules directly (``from openclaw_memory.fsutil.atomic import ...``):
this package stays empty so a command pays only for the primitives it uses.
"""
