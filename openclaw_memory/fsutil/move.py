"""Move a file without ever losing it, even across file systems, even while others write it.

``rename`` is atomic on one file system. Across file systems (EXDEV) the file is
opened once, by descriptor, and copied from that descriptor into a temp file at the
destination, which is fsynced, linked into place (never over a file there) and read
back. The source is then removed only as the object that was copied, holding the
bytes that were copied, checked at the moment it goes (:func:`remove_if_holds`):

1. its name is renamed, within its own folder, to a private name
   (``.NAME.aside-<hex>``): from then on no program that opens the name reaches it;
2. the object at the private name must be the inode behind our descriptor (an
   editor's atomic save renamed a new file over the name: that new file is kept);
3. where the system has leases (Linux), a write lease is taken on the descriptor: the
   kernel grants it only while no other process holds the file open (for reading or
   writing), and while it is held another process's ``open`` of it waits and we see
   that it does. A file that stays open elsewhere (an appender holding its
   descriptor) is kept, since whatever it writes after an unlink would be lost;
4. its bytes, read again through the descriptor, must hash like the copy;
5. only then the private name is unlinked. Otherwise the object gets its name back
   (or, when a new file took the name meanwhile, stays at the private name, where
   ``doctor`` reports it: ``move-leftovers``) and :class:`SourceKept` says so; the copy stays too.

At every instant the bytes exist complete at the source (its name or the private
name), the destination, or both. Left out of reach: a process whose ``open`` of the
name began before step 1 and reaches the kernel's lease check only after step 5 (a
few instructions inside one system call); without leases (not Linux, a file system
that refuses them, a file owned by another user without CAP_LEASE), a writer that
holds the file open across steps 1-5 and writes after them.

Both ends are a name in a folder held open by descriptor (see :mod:`.safeopen`):
every link, rename, unlink and fsync is an ``*at`` call on those descriptors, so a
folder swapped for a symlink while the move runs cannot send the file outside.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import stat
import struct
import sys
import time

from .. import faults
from .atomic import hidden_stem, read_xattrs, write_temp_beside
from .exchange import rename_noreplace
from .hashing import hash_open_file
from .safeopen import NotRegularFile, open_regular_nofollow

# No hard links on this file system (FAT, some FUSE/SMB mounts): check, then rename.
NO_LINK = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK})
ASIDE_TAG = ".aside-"
# How long a source held open by another process is waited for before it is kept.
OPEN_WAIT_S = 2.0


class DestinationRefused(OSError):
    """The destination's folder may not lose the name of a copy's temporary (append-only, immutable,
    not writable): found where the rename across file systems was refused; nothing was moved."""


class SourceKept(OSError):
    """The source was not removed: it changed, was replaced or stayed open elsewhere while it was moved.

    ``reason`` is ``"changed"``, ``"replaced"`` or ``"open"``; ``kept_at`` is the name it
    has in its folder now: its own name again, or its private name (``.NAME.aside-<hex>``)
    when a new file took its name meanwhile. The copy at the destination stays.
    """

    WORDS = {
        "changed": "changed while it was moved (someone wrote to it)",
        "replaced": "was replaced while it was moved (a new file was saved under its name)",
        "open": "is held open by another process, which could still write to it",
    }

    def __init__(self, reason: str, name: str, kept_at: str):
        super().__init__(errno.EBUSY, f"{self.WORDS[reason]}; kept at {kept_at}", name)
        self.reason = reason
        self.kept_at = kept_at


def aside_name(name: str) -> str:
    """A private name beside ``name`` for the instant between taking it away and unlinking it
    (``name`` cut to fit, with a hash of the whole name: beside a 255-byte name the rename failed,
    "File name too long"; see :func:`.atomic.hidden_stem`)."""
    return f"{aside_prefix(name)}{os.urandom(8).hex()}"


def asides_of(names: list[str], name: str) -> list[str]:
    """The private names of ``name`` among ``names`` (a folder listing): an interrupted move's source."""
    prefix = aside_prefix(name)
    return sorted(n for n in names if n.startswith(prefix) and len(n) == len(prefix) + 16)


def aside_prefix(name: str) -> str:
    """``.NAME.aside-``, every private name of ``name`` but its 16 random hex digits (NAME cut to fit,
    ending in ``~<hash of the whole name>``: one prefix is one note's only)."""
    return f"{hidden_stem(name, len(ASIDE_TAG) + 16)}{ASIDE_TAG}"


def give_back(dir_fd: int, name: str) -> None:
    """A move killed between taking ``name`` aside and unlinking it: the file gets its name back where
    the name is free, so both copies are there as before that step; a taken name leaves it aside
    (doctor's file checks see it)."""
    for aside in asides_of(os.listdir(dir_fd), name):
        try:
            link_noreplace(dir_fd, aside, dir_fd, name)
        except FileExistsError:
            continue
        os.fsync(dir_fd)


def link_noreplace(src_dir: int, src: str, dst_dir: int, dst: str, *, on_linked=None, verified: bool = False,
                   checked_rename: bool = True) -> None:
    """Rename that never replaces a ``dst`` created meanwhile.

    A hard link fails with EEXIST when ``dst`` exists, where a rename would silently
    replace it; between the link and the unlink both names hold the same inode, so
    a crash there loses nothing. File systems without hard links rename with
    ``RENAME_NOREPLACE`` (which refuses a ``dst`` that exists, atomically), and where even that
    is missing, rename after an existence check; without ``checked_rename`` the link's error
    (its errno in NO_LINK) is raised there instead, nothing renamed, for a caller with a way of
    its own. ``on_linked`` runs between link and unlink.
    With ``verified`` (``src`` is a name others use), ``src`` is unlinked only while it
    still names the linked inode: a file renamed over it meanwhile is kept (SourceKept).
    """
    try:
        os.link(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in NO_LINK:
            raise
        if rename_noreplace(src_dir, src, dst_dir, dst):  # raises FileExistsError where dst exists
            return
        if not checked_rename:
            raise
        # No RENAME_NOREPLACE either: a file saved at dst between this check and the rename is replaced.
        try:
            os.stat(dst, dir_fd=dst_dir, follow_symlinks=False)
        except FileNotFoundError:
            os.rename(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir)
            return
        raise FileExistsError(errno.EEXIST, "destination exists", dst) from None
    if on_linked is not None:
        on_linked()
    if not verified:
        os.unlink(src, dir_fd=src_dir)
        return
    unlink_other_name(src_dir, src, dst_dir, dst)


def unlink_other_name(src_dir: int, src: str, dst_dir: int, dst: str) -> None:
    """Unlink ``src`` while it names the file at ``dst`` (two names of one file: nothing is lost,
    whatever it holds). A file renamed over ``src`` meanwhile is kept, and so is ``src`` when ``dst``
    names another file by then (a save renamed over it), or none: SourceKept ``"replaced"``.

    Both are looked at once ``src`` is at its private name, out of reach of any program that opens it:
    ``dst`` looked at first, a save over it before the rename left ``src`` the file's last name, and
    the unlink took its bytes with it."""
    aside = aside_name(src)
    try:
        check_may_lose_name(src_dir, src, os.stat(src, dir_fd=src_dir, follow_symlinks=False))  # (it says why)
        os.rename(src, aside, src_dir_fd=src_dir, dst_dir_fd=src_dir)
    except FileNotFoundError:
        return  # someone else removed the name meanwhile: the file is at dst
    try:
        held = os.stat(aside, dir_fd=src_dir, follow_symlinks=False)
        try:
            same = _same_inode(held, os.stat(dst, dir_fd=dst_dir, follow_symlinks=False))
        except FileNotFoundError:
            same = False  # dst is gone: the private name is the file's last one
        if same:
            os.unlink(aside, dir_fd=src_dir)
            return
    except BaseException:
        _put_back(src_dir, aside, src)
        raise
    raise SourceKept("replaced", src, _put_back(src_dir, aside, src))


def same_file(src_dir: int, src: str, dst_dir: int, dst: str) -> bool:
    """Whether ``src`` and ``dst`` are two names of one file (a rename's link made, its unlink not)."""
    try:
        a = os.stat(src, dir_fd=src_dir, follow_symlinks=False)
        b = os.stat(dst, dir_fd=dst_dir, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return _same_inode(a, b)


def safe_move(src_dir: int, src: str, dst_dir: int, dst: str, *, expect: os.stat_result | None = None) -> str:
    """Move ``src`` (a name in ``src_dir``) to ``dst`` in ``dst_dir`` (which must not exist).

    Returns ``"rename"`` or ``"copy"``. Each irreversible step is a fault step of the tests
    (``move:rename``, where ``fail`` is a rename across file systems, ``move:linked``,
    ``move:copy-written``, ...). Raises :class:`SourceKept` when the source could not be removed as
    the object that was moved (the source and the copy are both kept). ``expect``: the file the
    caller checked (its ``fstat``); a link or rename goes by name, so what arrived is checked to be
    that regular file, else it goes back and NotRegularFile (a symlink, a FIFO swapped in) or
    SourceKept ``"replaced"`` (another file saved under the name) says nothing was moved.
    """
    try:
        os.stat(dst, dir_fd=dst_dir, follow_symlinks=False)
    except FileNotFoundError:
        pass
    else:
        raise FileExistsError(errno.EEXIST, "destination exists", dst)
    check_may_lose_name(src_dir, src, expect if expect is not None else os.stat(src, dir_fd=src_dir, follow_symlinks=False))
    try:
        if faults.reach("move:rename"):
            raise OSError(errno.EXDEV, "injected cross-device error (test hook)", src)
        try:
            linked: list[bool] = []

            def on_linked() -> None:
                faults.reach("move:linked")
                linked.append(True)
                _check_arrived(dst_dir, dst, src, expect)  # two names of it: the one given goes again

            link_noreplace(src_dir, src, dst_dir, dst, on_linked=on_linked, verified=True)
            if not linked:  # no hard links: the rename itself moved what the name held, which goes back when not ours
                _check_arrived(dst_dir, dst, src, expect, back=lambda: link_noreplace(dst_dir, dst, src_dir, src))
        except OSError as exc:
            if (not isinstance(exc, SourceKept) or exc.kept_at == src) and same_file(src_dir, src, dst_dir, dst):
                _take_back(lambda: unlink_other_name(dst_dir, dst, src_dir, src))
            raise
        os.fsync(dst_dir)
        os.fsync(src_dir)
        return "rename"
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    # A copy: its temporary's name must go from the destination's folder again (and the copy itself,
    # should the source not go). Asked here, where the rename was refused, not guessed from st_dev
    # before (a bind mount shares it): in an append-only folder the temporary stayed, a second
    # name of the note, and the move said "moved".
    try:
        check_names_may_change(dst_dir)
    except OSError as exc:
        raise DestinationRefused(exc.errno, exc.strerror) from None
    fd, st = open_regular_nofollow(src, dir_fd=src_dir)
    try:
        if expect is not None and not _same_inode(st, expect):
            raise SourceKept("replaced", src, src)
        # A disk full mid-copy leaves no half copy.
        # The copy keeps the source's mode and, where this process may, its owner (root moving a
        # user's note across file systems made it root's, which the user's agent then could not write),
        # and its ACL and other extended attributes (its group bits alone, an ACL's mask, let its group read).
        tmp = write_temp_beside(dst, iter(lambda: os.read(fd, 1 << 20), b""), st.st_mode & 0o7777, dir_fd=dst_dir,
                                owner=(st.st_uid, st.st_gid), xattrs=read_xattrs(fd))
        faults.reach("move:copy-written")
        try:
            link_noreplace(dst_dir, tmp, dst_dir, dst)
        except FileExistsError:
            os.unlink(tmp, dir_fd=dst_dir)
            raise
        os.fsync(dst_dir)
        copy_fd, copy_st = open_regular_nofollow(dst, dir_fd=dst_dir)
        try:
            copy_hash = hash_open_file(copy_fd)  # what landed, read back: the source must hash like this
        finally:
            os.close(copy_fd)
        faults.reach("move:unlink-source")
        try:
            _remove_object(src_dir, src, fd, copy_hash, copy_st.st_size)
        except OSError as exc:
            if not isinstance(exc, SourceKept):
                _take_back(lambda: remove_if_holds(dst_dir, dst, copy_hash))
            raise
    finally:
        os.close(fd)
    return "copy"


def _check_arrived(dst_dir: int, dst: str, src: str, expect: os.stat_result | None, back=None) -> None:
    """Raise unless the object now at ``dst`` is the regular file ``expect`` describes (moved by name,
    it may be whatever was swapped in at ``src`` after the caller's check: a symlink out of the
    workspace was moved and said "moved", its history claiming the note). ``back`` puts it back first."""
    if expect is None:
        return
    st = os.stat(dst, dir_fd=dst_dir, follow_symlinks=False)
    if stat.S_ISREG(st.st_mode) and _same_inode(st, expect):
        return
    if back is not None:
        with contextlib.suppress(OSError):
            back()
    if stat.S_ISREG(st.st_mode):
        raise SourceKept("replaced", src, src)
    raise NotRegularFile(errno.ELOOP, "is a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file", src)


# Linux's FS_IOC_GETFLAGS, _IOR('f', 1, long), and the flags of a file or folder whose names may not go.
_FS_IOC_GETFLAGS = (2 << 30) | (struct.calcsize("l") << 16) | (ord("f") << 8) | 1
_FS_APPEND_FL, _FS_IMMUTABLE_FL = 0x20, 0x10


def _pinned(fd: int) -> str | None:
    """``append-only`` or ``immutable`` where the file or folder open on ``fd`` is (``chattr +a``/
    ``+i``: its names may not go), else None (also where the file system keeps no such flags)."""
    try:
        flags = int.from_bytes(fcntl.ioctl(fd, _FS_IOC_GETFLAGS, bytes(8))[:4], sys.byteorder)
    except OSError:
        return None  # ENOTTY, EOPNOTSUPP: none of them here
    return "append-only" if flags & _FS_APPEND_FL else "immutable" if flags & _FS_IMMUTABLE_FL else None


def check_file_may_move(fd: int) -> None:
    """OSError (EPERM) when the file open on ``fd`` may not lose its name (an immutable or
    append-only note): asked before a move archives what it replaces (``mv --force`` had archived
    the destination's note when the link of an immutable source failed)."""
    if (pinned := _pinned(fd)) is not None:
        raise OSError(errno.EPERM, f"{os.strerror(errno.EPERM)} (the note is {pinned}: chattr)")


_CAP_FOWNER = 3  # the capability that lets a process rename or remove any file in a sticky folder


def _overrides_sticky() -> bool:
    """Whether this process may rename or remove other users' files in a sticky folder (CAP_FOWNER:
    root, usually; not a root without it, in some containers)."""
    try:
        with open("/proc/self/status", "rb") as fh:
            caps = next((line.split()[1] for line in fh if line.startswith(b"CapEff:")), None)
    except OSError:
        caps = None
    if caps is None:
        return os.geteuid() == 0
    return bool(int(caps, 16) >> _CAP_FOWNER & 1)


class StickyRefused(OSError):
    """The file may not lose its name: another user's in a sticky folder (:func:`sticky_keeper`).
    ``why`` says so in words (``belongs to another user (uid 0), ...``); ``filename``: its name."""

    def __init__(self, name: str, why: str):
        super().__init__(errno.EPERM, f"{os.strerror(errno.EPERM)} (it {why})", name)
        self.why = why


def sticky_keeper(dir_fd: int, st: os.stat_result) -> str | None:
    """Why the file ``st`` (its stat) may not lose its name in the folder open on ``dir_fd``, or None
    where it may as far as the sticky bit goes: in a sticky folder (mode 1777, as ``/tmp`` or a team's
    shared folder) only the file's owner, the folder's owner (or a process with CAP_FOWNER) may rename
    or remove it, whoever may write to it."""
    held = os.fstat(dir_fd)
    if not held.st_mode & stat.S_ISVTX or os.geteuid() in (st.st_uid, held.st_uid) or _overrides_sticky():
        return None
    return (f"belongs to another user (uid {st.st_uid}), in a sticky folder (mode {stat.S_IMODE(held.st_mode):o}) "
            "where only its owner may replace, rename or remove it")


def check_may_lose_name(dir_fd: int, name: str, st: os.stat_result) -> None:
    """StickyRefused when the file ``st``, ``name`` in the folder open on ``dir_fd``, may not lose
    that name (:func:`sticky_keeper`): asked before anything is linked or taken aside. The link of
    another user's note in a sticky folder went through, its old name could not go and neither could
    the new one: two names of one file, "nothing was moved", and every later move or removal tried
    to finish it and failed."""
    if (why := sticky_keeper(dir_fd, st)) is not None:
        raise StickyRefused(name, why)


def check_names_may_change(dir_fd: int, *, removing: bool = True) -> None:
    """OSError (EACCES, EROFS or EPERM) when this process may not add or remove names in the folder
    open on ``dir_fd``: asked before a move archives what it replaces or links anything, which its
    source's folder must allow at the end (a mode, a read-only mount, an append-only or immutable
    folder, ``chattr +a``/``+i``, that only the last step met: ``mv --force`` had archived the
    destination's file when it failed, "nothing was moved", and a move within an append-only folder
    left the note under both names, its intent waiting). An ACL the check does not see still fails
    that step, which is undone where it can be."""
    if not os.access(".", os.W_OK | os.X_OK, dir_fd=dir_fd, effective_ids=True):
        code = errno.EROFS if os.fstatvfs(dir_fd).f_flag & os.ST_RDONLY else errno.EACCES
        raise OSError(code, os.strerror(code))
    pinned = _pinned(dir_fd)
    if pinned == "immutable" or (pinned is not None and removing):  # (``removing``: a name must go there too)
        raise OSError(errno.EPERM, f"{os.strerror(errno.EPERM)} (the folder is {pinned}: chattr)")


def _take_back(undo) -> None:
    """The source could not lose its name (a folder this process may not write, an immutable file):
    the name given at the destination goes again, only as what was moved, so that the move did not
    happen. It was left, two names of one file (or the copy and the source), its intent waiting, and
    every later move or removal tried to finish it and failed the same way."""
    try:
        undo()
    except OSError:
        pass  # the intent stays: doctor names it, and finishes or undoes it once it can


def remove_if_holds(dir_fd: int, name: str, expect_hash: str) -> None:
    """Unlink ``name`` only as a file holding exactly the bytes hashed as ``expect_hash``, checked
    at the moment it goes (see the module's steps). SourceKept when it does not."""
    fd, _ = open_regular_nofollow(name, dir_fd=dir_fd)
    try:
        _remove_object(dir_fd, name, fd, expect_hash, None)
    finally:
        os.close(fd)


def _remove_object(dir_fd: int, name: str, fd: int, expect_hash: str, expect_size: int | None) -> None:
    """Steps 1-5 of the module's docstring for the object open on ``fd``, found at ``name``."""
    check_may_lose_name(dir_fd, name, os.fstat(fd))
    aside = aside_name(name)
    try:
        os.rename(name, aside, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except FileNotFoundError:
        return  # someone else deleted or renamed it meanwhile: there is nothing of ours to remove
    lease = Lease(fd, fcntl.F_WRLCK)
    try:
        faults.reach("move:source-aside")
        reason = _why_kept(dir_fd, aside, fd, expect_hash, expect_size, lease)
        if reason is None:
            os.unlink(aside, dir_fd=dir_fd)  # under the lease: no open of it can complete meanwhile
    except BaseException:
        _put_back(dir_fd, aside, name)
        raise
    finally:
        lease.release()
    if reason is not None:
        raise SourceKept(reason, name, _put_back(dir_fd, aside, name))
    os.fsync(dir_fd)


def _why_kept(dir_fd: int, aside: str, fd: int, expect_hash: str, expect_size: int | None, lease: Lease) -> str | None:
    """Why the object at ``aside`` must not be unlinked, or None when it is exactly what was copied."""
    if not _same_inode(os.stat(aside, dir_fd=dir_fd, follow_symlinks=False), os.fstat(fd)):
        return "replaced"
    if expect_size is not None and os.fstat(fd).st_size != expect_size:
        return "changed"  # an append: known at once, so the name is given back before a new file takes it
    if not lease.take():
        return "open"
    os.lseek(fd, 0, os.SEEK_SET)
    if hash_open_file(fd) != expect_hash:
        return "changed"
    if lease.broken():
        return "open"  # a writer's open is waiting on the lease: it would write to an unlinked file
    return None


def _same_inode(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _put_back(dir_fd: int, aside: str, name: str) -> str:
    """Give the private name's object its name back, never over a file made there meanwhile; where it is now."""
    try:
        link_noreplace(dir_fd, aside, dir_fd, name)
    except FileExistsError:
        return aside
    finally:
        os.fsync(dir_fd)
    return name


class Lease:
    """A lease (Linux ``F_SETLEASE``) on an open file. A write lease (``F_WRLCK``) is granted only
    while no other open file description of the file exists, a read lease (``F_RDLCK``, on a
    descriptor open for reading) only while none is open for writing; while one is held, another
    process's ``open`` that conflicts with it (any open for a write lease, an open for writing for
    a read lease) waits for us and shows in ``F_GETLEASE``. Where leases are missing or refused,
    :meth:`take` grants nothing and the caller goes on without this check."""

    def __init__(self, fd: int, kind: int):
        self.fd, self.kind = fd, kind
        self.held = False

    def take(self) -> bool:
        """False when the file stayed open elsewhere (for writing, for a read lease) for ``OPEN_WAIT_S``; True otherwise."""
        if not hasattr(fcntl, "F_SETLEASE"):
            return True
        try:
            # A lease break signals the holder, by default with SIGIO, which would end this
            # process; SIGURG is ignored unless handled, and we ask F_GETLEASE instead.
            fcntl.fcntl(self.fd, fcntl.F_SETSIG, signal.SIGURG)
        except OSError:
            return True
        deadline = time.monotonic() + OPEN_WAIT_S
        while True:
            try:
                fcntl.fcntl(self.fd, fcntl.F_SETLEASE, self.kind)
            except OSError as exc:
                if exc.errno != errno.EAGAIN:
                    return True  # no leases here (EINVAL), or not ours to take (EACCES)
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.01)  # an appender that opens, writes and closes is done within this
                continue
            self.held = True
            return True

    def broken(self) -> bool:
        """Whether another process is opening the file for writing (an open for reading only turns a
        write lease into a read lease, which does not matter)."""
        return self.held and fcntl.fcntl(self.fd, fcntl.F_GETLEASE) == fcntl.F_UNLCK

    def release(self) -> None:
        if self.held:
            self.held = False
            try:
                fcntl.fcntl(self.fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
            except OSError:
                # A lease being broken (a writer's open waiting on it) may refuse F_UNLCK (EAGAIN,
                # Linux 6.18): it goes with its descriptor, which the caller closes next. Raised, it
                # took the place of what the caller was saying (`blocked: ... held open for
                # writing`, exit 3) with "cannot write in the workspace: Resource temporarily unavailable".
                pass
