"""A lock file refused because a folder on the way is closed to this user (``index/`` at mode 000, as
its owner) names that folder and the ``chmod`` that gives it back (errors.closed_on_the_way), as the
other refusals do; it said only "(is the state dir writable?)". A read-only file system is named so.
Asked as uid 65534 in a forked child (root passes every mode check)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from test_private_state import NOBODY, as_nobody

from openclaw_memory.errors import StateDirError
from openclaw_memory.fsutil.lock import FileLock

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user (uid 65534)")


def _refused(path: str) -> str:
    try:
        FileLock(path, what="the index of agent main").acquire()
    except StateDirError as exc:
        return exc.message
    return "taken"


def test_a_lock_under_a_folder_closed_to_its_owner_names_the_folder_and_the_chmod(base: Path):
    index = base / "data" / "index"
    (index / "locks").mkdir(parents=True)
    for each in (base / "data", index, index / "locks"):
        os.chown(each, NOBODY, NOBODY)
    _refused(str(base / "warm" / "a.lock"))  # every module the refusal imports, imported here first
    os.chmod(index, 0)
    said = as_nobody(_refused, str(index / "locks" / "sync-main.lock"))
    assert isinstance(said, str) and said.startswith("cannot take the lock for the index of agent main"), said
    assert f"the folder {index} is closed to this user, its owner (mode 000): `chmod u+rwx {index}`" in said, said
    assert "is the state dir writable?" not in said, said


def test_a_lock_on_a_read_only_file_system_says_so(tmp_path: Path, monkeypatch):
    from openclaw_memory.fsutil import lock

    def read_only(path):
        raise OSError(errno.EROFS, "Read-only file system", path)

    monkeypatch.setattr(lock, "_open_private", read_only)
    with pytest.raises(StateDirError) as refused:
        lock.FileLock(str(tmp_path / "write.lock"), what="the write lock").acquire()
    assert "a read-only file system: remount it read-write, or give another state dir" in refused.value.message
