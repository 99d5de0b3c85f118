"""Damaged state files are set aside, never deleted: ``<data dir>/damaged/<stamp>/<same path>``.

What openclaw-memory keeps in the state dir (the state database, the doctor journal) may be
the only trace of something; a repair that cannot read such a file moves it out of the way
under ``damaged/``, keeping its path relative to the data dir, so a person can still look at
it. A damaged row of a sound database (a snapshot whose checksum fails) is written there as a
file before the row is deleted.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
from pathlib import Path

from .private import make_dirs

DAMAGED_DIR = "damaged"
# Where every data dir lives: ``<state dir>/openclaw-memory/workspaces/<name>/`` (settings.Settings.data_dir).
_DATA_DIRS = ("openclaw-memory", "workspaces")


def data_dir_above(path: str | os.PathLike[str]) -> Path | None:
    """The data dir ``path`` lies in (the folder right under ``openclaw-memory/workspaces/``), or
    None when it lies in none."""
    for folder in Path(path).parents:
        if (folder.parent.parent.name, folder.parent.name) == _DATA_DIRS:
            return folder
    return None


def not_a_folder(path: str | os.PathLike[str]) -> bool:
    """Something other than a real folder is at ``path``: a file, a FIFO, a symbolic link (even to a
    folder). Where a folder of the data dir belongs, it is what doctor names and sets aside."""
    try:
        return not stat.S_ISDIR(os.lstat(path).st_mode)
    except (OSError, ValueError):  # nothing there, or nothing that can be looked at (as os.path.lexists)
        return False


def _new_place(data_dir: Path, rel: str) -> Path:
    """``damaged/<stamp>/<rel>``, its folder made."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H-%M-%S.%fZ")
    top = Path(data_dir) / DAMAGED_DIR
    target = top / stamp / rel
    try:
        odd = not stat.S_ISDIR(os.lstat(top).st_mode)
    except FileNotFoundError:
        odd = False
    if odd:
        # Something else has the folder's name (a file, a link: a bad restore, a person's mistake),
        # where every set-aside failed with "Not a directory": it is the first thing kept in it.
        aside = Path(data_dir) / f".{DAMAGED_DIR}-{stamp}"
        os.rename(top, aside)
        make_dirs(top / stamp)
        os.rename(aside, top / stamp / DAMAGED_DIR)
    make_dirs(target.parent)
    return target


def place_for(data_dir: Path, rel: str) -> Path:
    """Where a file of the data dir at ``rel`` is kept: ``damaged/<stamp>/<rel>``, its folder made
    (nothing put there yet: the caller links, copies or moves into it)."""
    return _new_place(data_dir, rel)


def set_aside(data_dir: Path, path: str | os.PathLike[str]) -> Path | None:
    """Move ``path`` (inside ``data_dir``) under ``damaged/<stamp>/``; None when it was already gone."""
    rel = os.path.relpath(os.fspath(path), data_dir)
    if rel.startswith(".."):
        raise ValueError(f"{path} is not inside {data_dir}")
    target = _new_place(data_dir, rel)
    try:
        os.rename(path, target)
    except FileNotFoundError:
        return None
    return target


def set_aside_bytes(data_dir: Path, rel: str, data: bytes) -> Path:
    """Keep ``data`` (a damaged row of the state database) as ``damaged/<stamp>/<rel>``, fsynced
    before the caller deletes the row."""
    from .atomic import atomic_write_bytes

    target = _new_place(data_dir, rel)
    atomic_write_bytes(target, data, 0o600)
    return target


def set_aside_copy(data_dir: Path, path: str | os.PathLike[str], folder: Path | None = None) -> Path:
    """A copy of ``path`` (inside ``data_dir``) under ``damaged/<stamp>/`` (``folder``, when given:
    one stamp for files that belong together), fsynced; the file itself stays where it is."""
    import shutil

    rel = os.path.relpath(os.fspath(path), data_dir)
    target = folder / os.path.basename(rel) if folder is not None else _new_place(data_dir, rel)
    with open(path, "rb") as src, open(target, "xb") as dst:
        shutil.copyfileobj(src, dst)
        dst.flush()
        os.fsync(dst.fileno())
    return target
