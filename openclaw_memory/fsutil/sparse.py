"""Copies that keep a file's holes: an engine preallocates sparse files, and copying its zeros
would take the disk the copy was checked to fit in."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator
from pathlib import Path


def data_extents(fd: int, start: int, end: int) -> Iterator[tuple[int, int]]:
    """The data regions of ``fd`` between ``start`` and ``end``, in order (SEEK_DATA/SEEK_HOLE): what
    lies between them are holes, zeros never stored. Where the file system cannot say (no hole
    support: EINVAL, EOPNOTSUPP), the rest is one region, read as it is; where nothing but a hole
    is left (or the file was cut short meanwhile: ENXIO), none."""
    pos = start
    while pos < end:
        try:
            data = os.lseek(fd, pos, os.SEEK_DATA)
            hole = os.lseek(fd, data, os.SEEK_HOLE)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                yield pos, end
            return
        if data >= end:
            return
        yield data, min(hole, end)
        pos = hole


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
    """Copy the data regions of ``src`` only (:func:`data_extents`), leaving its holes as holes."""
    fin = os.open(src, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        fout = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            size = os.fstat(fin).st_size
            for start, end in data_extents(fin, 0, size):
                while start < end:
                    block = os.pread(fin, min(end - start, 1 << 20), start)
                    if not block:
                        break
                    start += os.pwrite(fout, block, start)
            os.ftruncate(fout, size)
            os.fsync(fout)
        finally:
            os.close(fout)
    finally:
        os.close(fin)
