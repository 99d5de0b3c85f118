"""The state dir and the workspace's data dir: can this user make them, and write in them?

Every command that keeps state (``index``, ``write``, ``history``, ``read``'s record) fails with exit
2 where the state dir cannot be created or written (another user's, ``chmod 555``, a read-only
``$HOME`` with no ``--state-dir``), while plain doctor said "No problems found.". Asked with
``access(2)`` (``W_OK | X_OK``) of the nearest folder that exists on the way to the data dir:
nothing is made to find out (as root, access says yes but on a read-only file system).
"""

from __future__ import annotations

import os
from pathlib import Path

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


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


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
    if _read_only_fs(at):
        what += " (a read-only file system)"
    return [Finding(
        ID,
        "error",
        f"{what}. Every command that keeps state there (index, write, history, restore, a read's record) fails "
        f"with exit 2. Make it writable by this user (its owner: `chmod u+rwx {at}`, or `chown` it to uid {uid}), "
        "or give another state dir this user owns (--state-dir DIR or OPENCLAW_STATE_DIR).",
        False,
        (str(at),),
    )]


CHECKS = [check_state_dir]
