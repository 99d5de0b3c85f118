"""How close to a snapshot a file's timestamps must be for its stat to be untrustworthy.

File systems stamp times from a coarse clock: two writes within one tick can
leave identical stat data. An entry whose mtime or ctime lies within the guard of
the moment it was observed is "racy" and is rehashed at every verify. The guard
is 10 ms on local file systems and 2 s on network, FUSE or unknown ones (their
timestamps come from another machine's clock or have coarse granularity).

The mount's type does not say its clock: ext4 made with 128-byte inodes (``mke2fs -I 128``), ext2
and ext3 keep whole seconds. So each file's own stat counts too (:func:`file_guard_ns`): an mtime
with no sub-second part is a whole-second clock's, and its guard is at least a second.
"""

from __future__ import annotations

import os

LOCAL_GUARD_NS = 10_000_000
REMOTE_GUARD_NS = 2_000_000_000
WHOLE_SECOND_NS = 1_000_000_000
WIDEST_GUARD_NS = REMOTE_GUARD_NS  # no file's guard is wider: what a check that reads no mount table assumes
LOCAL_TYPES = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs"})
MOUNTS = "/proc/self/mounts"


def file_guard_ns(mtime_ns: int, guard_ns: int) -> int:
    """The guard of one file whose file system's is ``guard_ns``: a second at least where its mtime
    has no sub-second part (a whole-second clock's; a nanosecond clock lands on one once in 10**9
    stamps, which costs one more hash)."""
    return max(guard_ns, WHOLE_SECOND_NS) if mtime_ns % WHOLE_SECOND_NS == 0 else guard_ns


def _unescape(field: str) -> str:
    # /proc/self/mounts writes space, tab, newline and backslash as \ooo octal escapes.
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 4 <= len(field) and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def read_mounts(path: str = MOUNTS) -> list[tuple[str, str]]:
    """``(mount point, file system type)`` pairs; empty when the table cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    mounts = []
    for line in lines:
        fields = line.split()
        if len(fields) >= 3:
            mounts.append((_unescape(fields[1]), fields[2]))
    return mounts


def _is_under(path: str, root: str) -> bool:
    return path == root or root == "/" or path.startswith(root.rstrip("/") + "/")


def guard_ns(*roots: str | os.PathLike[str], mounts: list[tuple[str, str]] | None = None) -> int:
    """The racy guard for trees (a workspace and its extra paths): the widest of the file systems
    they span, the mount table read once.

    That is the file system holding each root plus any mounted inside it; a missing mount table
    counts as unknown (2 s), the safe side.
    """
    table = read_mounts() if mounts is None else mounts
    return max((_guard_of(os.fspath(root), table) for root in roots), default=LOCAL_GUARD_NS)


def _guard_of(ws: str, table: list[tuple[str, str]]) -> int:
    holder: tuple[str, str] | None = None
    inside: list[str] = []
    for point, fstype in table:
        if _is_under(ws, point):
            if holder is None or len(point) >= len(holder[0]):
                holder = (point, fstype)
        elif _is_under(point, ws):
            inside.append(fstype)
    if holder is None:
        return REMOTE_GUARD_NS
    types = [holder[1], *inside]
    return LOCAL_GUARD_NS if all(t in LOCAL_TYPES for t in types) else REMOTE_GUARD_NS
