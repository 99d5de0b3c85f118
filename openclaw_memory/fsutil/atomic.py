"""Atomic replacement of a file: temp file, fsync, rename, fsync the folder.

Every function takes an optional ``dir_fd``: then the path is a name in that open
folder (see :mod:`.safeopen`), and the temp file, the rename and the fsync all go
through the descriptor, so a folder swapped meanwhile cannot redirect them.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from collections.abc import Iterable, Sequence

from .. import faults


def fsync_dir(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


NAME_MAX = 255  # bytes in one file name (Linux, macOS: every common file system)


def temp_stem(name: str) -> str:
    """``.NAME``, NAME cut so that ``.NAME.<8 hex>.tmp`` (or ``.swp``) fits in one file name: a file
    whose own name is already 255 bytes long can be written too, and its leftovers found again."""
    return hidden_stem(name, len(".01234567.tmp"))


# A cut name ends in ``~`` and this many hex digits of the whole name's hash: two long names alike
# in all the bytes kept still make two private names, each found again from its own name only.
CUT_TAG_HEX = 8


def hidden_stem(name: str, suffix: int) -> str:
    """``.NAME``, NAME cut so that a suffix of ``suffix`` bytes after it still fits in one file name
    (the same cut every time, so the name made is found again from NAME). A cut name ends in
    ``~<hash>``, of the whole name: cut alone, two 255-byte names alike in their first 230 bytes made
    one stem, and a killed removal's file, taken aside, was given back under the other's name."""
    raw = os.fsencode(name)
    room = NAME_MAX - 1 - suffix
    if len(raw) > room:
        import hashlib  # (here: its import, OpenSSL's, was 4 ms of every command's start)

        tag = f"~{hashlib.sha256(raw).hexdigest()[:CUT_TAG_HEX]}"
        name = os.fsdecode(raw[:room - len(tag)]) + tag  # a cut inside a UTF-8 sequence stays the same bytes (surrogateescape)
    return f".{name}"


_TAG = re.compile(r"[0-9a-f]{8}")
# A ``.tmp`` whose bytes the history lacks is a leftover once this old (another tool's by that name is too).
LEFTOVER_AGE_S = 600.0


def dead_leftovers(dir_fd: int, names: Iterable[str]) -> list[tuple[str, os.stat_result]]:
    """Of ``names`` in the folder open on ``dir_fd`` (a killed process's private files: a temp
    archive, a new state database), those dead and free to go, each with its ``lstat``: a regular file
    of this user's last written more than ``LEFTOVER_AGE_S`` ago. Age is what tells: no lock covers
    them, and a pid in a name may be another pid namespace's; the process writes its file without a
    pause, and one stalled (a stopped process, a slow network mount) keeps it that long."""
    now, dead = time.time(), []
    for name in names:
        try:
            st = os.lstat(name, dir_fd=dir_fd)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and now - st.st_mtime > LEFTOVER_AGE_S:
            dead.append((name, st))
    return dead


# A leftover of a memory file NAME, found from its name alone (doctor lists a folder, not a file).
_LEFTOVER = re.compile(r"\.(?P<of>.+\.md)\.[0-9a-f]{8}\.(?P<kind>tmp|swp)")


def leftover_kind(name: str, of: str) -> str | None:
    """"tmp" or "swp" when ``name`` is a temp or swap file written beside the file ``of``
    (``.OF.<8 hex>.tmp|swp``, :func:`temp_stem`); else None."""
    stem = temp_stem(of) + "."
    if not name.startswith(stem):
        return None
    tag, _, kind = name[len(stem):].partition(".")
    return kind if kind in ("tmp", "swp") and _TAG.fullmatch(tag) else None


def leftover_of(name: str) -> tuple[str, str] | None:
    """(the Markdown file it was written beside, "tmp" or "swp") of a leftover's ``name``; None when it
    is none (one of a 255-byte name, cut to fit, is found only from that name: :func:`leftover_kind`)."""
    match = _LEFTOVER.fullmatch(name)
    return (match["of"], match["kind"]) if match else None


def temp_name_beside(path: str) -> str:
    """``.NAME.<random>.tmp`` beside ``path`` (see :func:`temp_stem`)."""
    folder, name = os.path.split(path)
    return os.path.join(folder, f"{temp_stem(name)}.{os.urandom(4).hex()}.tmp")


def unlink_quietly(path: str, *, dir_fd: int | None = None) -> None:
    """Remove a temp file of ours; already gone is fine (the cleanup of a failed step must not fail)."""
    try:
        os.unlink(path, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


# The POSIX ACL of a file (Linux); with one, a file's group bits are the ACL's mask, not its group's.
ACL_ACCESS = "system.posix_acl_access"
ACL_DEFAULT = "system.posix_acl_default"  # a folder's: what a file created in it gets
_NO_XATTRS = frozenset({errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS})  # a file system that keeps none
# An attribute other than the ACL that this process may not read or set (a ``security.*`` or
# ``trusted.*`` one of another program's) is left: it grants no one access.
_NOT_OURS = frozenset({errno.EPERM, errno.EACCES, errno.E2BIG, errno.ERANGE, errno.EINVAL, errno.ENODATA})

Xattrs = Sequence[tuple[str, bytes]]


def read_acl(fd: int) -> bytes | None:
    """The POSIX ACL of the file open on ``fd`` (None: none, or none on this file system)."""
    try:
        return os.getxattr(fd, ACL_ACCESS)
    except OSError as exc:
        if exc.errno in _NO_XATTRS | {errno.ENODATA}:
            return None
        raise


def read_xattrs(fd: int) -> tuple[tuple[str, bytes], ...]:
    """Every extended attribute of the file open on ``fd``, its POSIX ACL (:data:`ACL_ACCESS`)
    included: what a file replacing it gets (:func:`write_temp_beside`). Empty where the file system
    keeps none. An ACL that cannot be read raises: the replacement must not be made without it."""
    try:
        names = os.listxattr(fd)
    except OSError as exc:
        if exc.errno in _NO_XATTRS:
            return ()
        raise
    found = []
    for name in names:
        try:
            found.append((name, os.getxattr(fd, name)))
        except OSError as exc:
            if exc.errno == errno.ENODATA:
                continue  # removed meanwhile
            if name == ACL_ACCESS or exc.errno not in _NOT_OURS | _NO_XATTRS:
                raise
    return tuple(found)


def has_default_acl(dir_fd: int) -> bool:
    """Whether the folder open on ``dir_fd`` has a default ACL, which a file created in it gets (in
    place of what the umask would leave): a new note there is created for the kernel to apply it."""
    try:
        return bool(os.getxattr(dir_fd, ACL_DEFAULT))
    except OSError:
        return False  # ENODATA: none; ENOTSUP: no ACLs here


def _acl_group_bits(acl: bytes) -> int | None:
    """The group bits (0-7) that grant the file's group no more than ``acl`` did: its ``group::``
    entry limited by its ``mask::``; None where it is not an ACL this reads (version 2, Linux)."""
    if len(acl) < 4 or int.from_bytes(acl[:4], "little") != 2 or (len(acl) - 4) % 8:
        return None
    group, mask = None, 7
    for at in range(4, len(acl), 8):
        tag, perm = int.from_bytes(acl[at:at + 2], "little"), int.from_bytes(acl[at + 2:at + 4], "little")
        if tag == 0x04:  # ACL_GROUP_OBJ
            group = perm & 7
        elif tag == 0x10:  # ACL_MASK
            mask = perm & 7
    return None if group is None else group & mask


def acl_narrowed_mode(mode: int, xattrs: Xattrs | None) -> int:
    """``mode`` as a file without ``xattrs``' POSIX ACL may have it and give no one more than the
    ACL did: its group bits the ACL's ``group::`` entry within its mask (with an ACL they are the
    mask, which is what a named user or group may have at most), none where the ACL is not one this
    reads. ``mode`` itself where there is no ACL. What the history logs of a note it may bring back:
    it keeps modes, not ACLs, and the bits alone gave the file's group what the ACL gave a named user."""
    acl = next((value for name, value in xattrs or () if name == ACL_ACCESS), None)
    if acl is None:
        return mode
    group = _acl_group_bits(acl)
    return mode & ~0o070 | (group or 0) << 3


def _give_xattrs(fd: int, xattrs: Xattrs, mode: int | None) -> int | None:
    """Give the temp file open on ``fd`` exactly ``xattrs``: set each, and drop the ACL it got from
    its folder's default ACL where the file it replaces had none. Returns the mode to chmod it to
    (``mode``, narrowed where the ACL could not be set at all: a file system without ACLs then gives
    the group no more than the ACL's ``group::`` entry did, the mask no longer read as the group's).
    An ACL refused otherwise raises: no replacement wider than the file it replaces."""
    names = {name for name, _ in xattrs}
    if ACL_ACCESS not in names:
        try:
            os.removexattr(fd, ACL_ACCESS)
        except OSError as exc:
            if exc.errno not in _NO_XATTRS | {errno.ENODATA}:
                raise
    for name, value in xattrs:
        try:
            os.setxattr(fd, name, value)
        except OSError as exc:
            if name != ACL_ACCESS:
                if exc.errno in _NOT_OURS | _NO_XATTRS:
                    continue
                raise
            group = _acl_group_bits(value) if exc.errno in _NO_XATTRS else None
            if group is None or mode is None:
                raise OSError(exc.errno, f"{exc.strerror} (copying the file's POSIX ACL to its replacement, "
                              "which is not put in place without it)") from None
            mode = mode & ~0o070 | group << 3
    return mode


def folder_owner(dir_fd: int) -> tuple[int, int] | None:
    """The owner (uid, gid) that a file or folder this process makes in the folder open on ``dir_fd``
    gets: the folder's own, when this process is root (a CLI or an MCP server run as root in a user's
    workspace), as an existing file keeps its owner when root replaces it; None otherwise (what a
    user makes is the user's). Root's new note was root's, and the user's own agent was then refused
    writing it ("read-only (owned by uid 0)"): the user's daily note of the day among them."""
    if os.geteuid() != 0:
        return None
    st = os.fstat(dir_fd)
    return st.st_uid, st.st_gid


def give_to_folder_owner(fd: int, dir_fd: int) -> None:
    """Give the folder or file just made, open on ``fd``, the owner of the folder it was made in (open
    on ``dir_fd``) where :func:`folder_owner` says so; only while it is still this process's own (a
    folder another user swapped in meanwhile is left as it is). A refusal (no CAP_CHOWN in a user
    namespace) leaves it this process's, as before."""
    owner = folder_owner(dir_fd)
    if owner is None:
        return
    try:
        st = os.fstat(fd)
        if st.st_uid == os.geteuid() and (st.st_uid, st.st_gid) != owner:
            os.fchown(fd, *owner)
    except OSError:
        pass


_ZEROS = bytes(1 << 20)  # a block this long and all zero is left a hole (a sparse note stays sparse)


def write_temp_beside(path: str, data: bytes | Iterable[bytes], mode: int | None = None, *,
                      dir_fd: int | None = None, owner: tuple[int, int] | None = None,
                      xattrs: Xattrs | None = None, create_mode: int = 0o600) -> str:
    """Write ``data`` (bytes, or blocks streamed in order) to a fresh (O_EXCL) temp file next to
    ``path``, fsynced; return its name. Nothing is left behind when writing fails (disk full...).

    ``owner`` (uid, gid) is given to the temp file when this process may (root writing a
    user's file keeps it the user's); otherwise it stays ours. ``xattrs`` (those of the file it
    replaces, :func:`read_xattrs`) are given to it before ``mode``: its POSIX ACL, never a
    moment wider than the file's. It is created with ``create_mode`` (where ``mode`` is None, the
    mode it keeps: 0o666 for what the folder's default ACL or the umask gives a new file). A block
    of 1 MiB of zeros is skipped, a hole, as the file it copies has them.
    """
    tmp = temp_name_beside(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), create_mode,
                 dir_fd=dir_fd)
    try:
        hole = False
        for block in (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data:
            if type(block) is bytes and len(block) == len(_ZEROS) and block[0] == 0 and block == _ZEROS:
                os.lseek(fd, len(block), os.SEEK_CUR)
                hole = True
                continue
            view = memoryview(block)
            hole = hole and not view
            while view:
                view = view[os.write(fd, view):]
        if hole:  # zeros at the end: the size reaches past them
            os.ftruncate(fd, os.lseek(fd, 0, os.SEEK_CUR))
        if owner is not None and owner != (os.geteuid(), os.getegid()):
            try:
                os.fchown(fd, *owner)
            except PermissionError:
                pass
        if xattrs is not None:
            mode = _give_xattrs(fd, xattrs, mode)
        if mode is not None:
            os.fchmod(fd, mode)  # after the chown, which clears set-id bits
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        unlink_quietly(tmp, dir_fd=dir_fd)
        raise
    os.close(fd)
    return tmp


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes | Iterable[bytes], mode: int | None = None, *,
                       dir_fd: int | None = None) -> None:
    """Replace ``path`` with ``data`` (bytes, or blocks in order) so a reader or a crash sees the old
    or the new bytes, never a mix.

    The file keeps its permission bits (``mode`` overrides) and, where this process may, its
    owner when it exists already; without ``mode``, its ACL and other extended attributes too.
    A new one in an open folder (``dir_fd``: a user's tree) made by root is its folder's owner's
    (:func:`folder_owner`).
    """
    path = os.fspath(path)
    xattrs: Xattrs | None = None
    try:
        st = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
        owner: tuple[int, int] | None = (st.st_uid, st.st_gid)
        if mode is None:
            mode = st.st_mode & 0o7777
            xattrs = _xattrs_at(path, dir_fd)
    except FileNotFoundError:  # a new file: in an open folder of a user's tree, that folder's owner's
        owner, mode = folder_owner(dir_fd) if dir_fd is not None else None, 0o644 if mode is None else mode
    tmp = write_temp_beside(path, data, mode, dir_fd=dir_fd, owner=owner, xattrs=xattrs)
    faults.reach(f"atomic:renaming:{os.path.basename(path)}")  # the temp file written, not yet renamed
    try:
        os.replace(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        unlink_quietly(tmp, dir_fd=dir_fd)
        raise
    if dir_fd is not None:
        os.fsync(dir_fd)
    else:
        fsync_dir(os.path.dirname(path) or ".")



def _xattrs_at(path: str, dir_fd: int | None) -> tuple[tuple[str, bytes], ...] | None:
    """The extended attributes of the regular file at ``path`` (:func:`read_xattrs`); None where it
    cannot be opened to read them (a file this process may write but not read keeps none)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
    except OSError:
        return None
    try:
        return read_xattrs(fd)
    finally:
        os.close(fd)
