"""Copies that keep a file's holes: an engine preallocates sparse files, and copying its zeros
would take the disk the copy was checked to fit in."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def copy_sparse_tree(src: Path, dst: Path) -> None:
    """``src`` copied to ``dst`` file by file (:func:`copy_sparse`); a copy cut short is removed, ``dst`` whole."""
    try:
        for folder, _dirs, files in os.walk(src):
            out = dst / os.path.relpath(folder, src)
            out.mkdir(0o700, exist_ok=True)  # walked top down: its parent is made first
            for f in files:
                copy_sparse(os.path.join(folder, f), os.fspath(out / f))
    except BaseException:
        shutil.rmtree(dst, ignore_errors=True)
        raise


def copy_sparse(src: str, dst: str) -> None:
    """Copy the data regions of ``src`` only (SEEK_DATA/SEEK_HOLE), leaving its holes as holes."""
    import errno

    fin = os.open(src, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        fout = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            size = os.fstat(fin).st_size
            offset = 0
            while offset < size:
                try:
                    start = os.lseek(fin, offset, os.SEEK_DATA)
                    end = os.lseek(fin, start, os.SEEK_HOLE)
                except OSError as exc:
                    if exc.errno == errno.ENXIO:
                        break  # only a hole is left
                    start, end = offset, size  # no hole support here: copy the rest
                while start < end:
                    block = os.pread(fin, min(end - start, 1 << 20), start)
                    if not block:
                        break
                    start += os.pwrite(fout, block, start)
                offset = end
            os.ftruncate(fout, size)
            os.fsync(fout)
        finally:
            os.close(fout)
    finally:
        os.close(fin)
