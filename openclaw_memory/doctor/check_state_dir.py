"""The state dir and the workspace's data dir: can this user make them, and write in them? Is there
room on their disks for one more write?

Every command that changes something (``index``, ``write``, ``restore``, ``mv``, ``rm``...) fails with
exit 2 where the state dir cannot be created or written (another user's, ``chmod 555``, a read-only
``$HOME`` with no ``--state-dir``, a read-only mount), while plain doctor said "No problems found.".
Where the data dir holds a database, reads, ``history`` and ``log`` still work, each warning that
nothing is recorded; where it cannot even be made, ``history`` and ``log`` fail too (a read still
works, unrecorded). On a read-only file system the finding says so: no ``chmod`` can help there. Asked with
``access(2)`` (``W_OK | X_OK``) of the nearest folder that exists on the way to the data dir:
nothing is made to find out (as root, access says yes but on a read-only file system).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import no_inode_left
from ..fsutil.lock import read_only_mount
from .model import CheckContext, Finding

ID = "state-dir-not-writable"


def _nearest_existing(path: Path) -> Path | None:
    """``path``, or the nearest folder above it that exists (None: not even ``/`` is looked at)."""
    for each in (path, *path.parents):
        try:
            os.stat(each)
        except FileNotFoundError:
            continue
        except OSError:  # a folder above cannot be searched: the access check of it says so
            return each
        return each
    return None


def check_state_dir(ctx: CheckContext) -> list[Finding]:
    settings = ctx.settings
    state_dir, data_dir = Path(settings.state_dir), Path(settings.data_dir)
    at = _nearest_existing(data_dir)
    if at is None or not os.path.isdir(at) or os.access(at, os.W_OK | os.X_OK):
        return []  # (something other than a folder on the way: the commands' own refusal names it)
    uid = os.geteuid()
    if at == data_dir:
        what = f"The workspace's data dir {data_dir} cannot be written by this user (uid {uid})"
    elif at == state_dir or state_dir in at.parents:
        what = (f"The state dir {state_dir} cannot be written by this user (uid {uid})" if at == state_dir else
                f"{at}, in the state dir {state_dir}, cannot be written by this user (uid {uid})")
    else:
        what = f"The state dir {state_dir} does not exist and cannot be created by this user (uid {uid}): {at} cannot be written"
    if at == data_dir:
        fails = ("Every command that changes something there (index, write, restore, mv, rm...) fails with exit 2; "
                 "reads, history and log still work, each warning that nothing is recorded (a read is not recorded "
                 "for the write guard)")
    else:
        fails = ("Every command that needs its data dir (index, write, restore, mv, rm, history, log...) fails with "
                 "exit 2; a read still works, warning that it is not recorded for the write guard")
    if read_only_mount(at):
        fix = (f"{at} is on a read-only file system: no chmod can change that. Remount it read-write, or give "
               "another state dir on a writable file system (--state-dir DIR or OPENCLAW_STATE_DIR).")
    else:
        fix = (f"Make it writable by this user (its owner: `chmod u+rwx {at}`, or `chown` it to uid {uid}), "
               "or give another state dir this user owns (--state-dir DIR or OPENCLAW_STATE_DIR).")
    return [Finding(ID, "error", f"{what}. {fails}. {fix}", False, (str(at),))]


# Below this, a write of the smallest note fails: its temp copy, the history's pages and the log's
# frames take a few pages each (a 1 MiB tmpfs filled up: every rm and write said "the disk is full"
# while doctor said "No problems found.").
FULL_BELOW = 256 * 1024


def _free_bytes(folder: Path) -> int | None:
    try:
        st = os.statvfs(folder)
    except OSError:
        return None
    # root may write into the blocks the file system keeps back; everyone else may not
    return (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize


def check_disk_space(ctx: CheckContext) -> list[Finding]:
    """The disk of the state dir, and of the workspace, with no room for one more write: one finding
    per disk, its advice for what is on it (another state dir does not help a workspace's disk)."""
    settings = ctx.settings
    places = [("the state dir", Path(settings.state_dir), _nearest_existing(Path(settings.data_dir))),
              ("the workspace", Path(settings.workspace), Path(settings.workspace))]
    full: dict[int, tuple[str, list[tuple[str, Path, Path]]]] = {}  # device -> (what is left, what is on it)
    for what, named, at in places:
        if at is None or not os.path.isdir(at):
            continue
        try:
            device = os.stat(at).st_dev
        except OSError:
            continue
        if device in full:
            full[device][1].append((what, named, at))
            continue
        free = _free_bytes(at)
        if free is None or (free >= FULL_BELOW and not no_inode_left(at)) or read_only_mount(at):
            continue
        left = (f"{free // 1024} KiB left" if free < FULL_BELOW
                else "no inode left (no new file can be made there, however much space is free)")
        full[device] = (left, [(what, named, at)])
    return [_disk_full(left, on) for left, on in full.values()]


def _disk_full(left: str, on: list[tuple[str, Path, Path]]) -> Finding:
    """The finding of one full disk, holding the state dir, the workspace, or both."""
    holds = {what for what, _, _ in on}
    fails = []
    if "the state dir" in holds:
        fails.append("every command that records something (write, rm, mv, restore, index, even a read's record for "
                     "the write guard) fails, saying the disk is full and that nothing was changed")
    if "the workspace" in holds:
        fails.append("no memory file can be written, moved or restored")
    if holds == {"the state dir"}:
        fix = ("Free some space there, or give another state dir on a disk with room (--state-dir DIR or "
               "OPENCLAW_STATE_DIR; it starts without this one's index and history).")
    elif holds == {"the workspace"}:  # the state dir is elsewhere: moving it frees nothing here
        fix = "Free some space there: only room on the workspace's own disk lets its memory files be written."
    else:
        fix = ("Free some space there: both are on this disk, and another state dir (--state-dir) would still "
               "leave the workspace's memory files no room to be written.")
    disk = " and of ".join(f"{what} ({named})" for what, named, _ in on)
    return Finding(DISK_FULL, "error", f"The disk of {disk} is full: {left}. Until there is room, "
                   f"{', and '.join(fails)}. {fix}", False, tuple(str(at) for _, _, at in on))


DISK_FULL = "disk-full"
CHECKS = [check_state_dir, check_disk_space]
