"""Put a written file in place of a memory file without ever unlinking someone else's save.

The guarded write checks the file's version, then replaces it. A rename would unlink whatever is
at the name at that instant, so an editor's save that landed between the check and the rename
would vanish. Instead the new file is *exchanged* with the target (:func:`~..fsutil.exchange.exchange`):
what the exchange took off the target is left at our temp name, still a file, and is checked. When
it is not the version the write checked, someone saved in between: the exchange is undone by
exchanging again, and again as long as what comes back is not what we had put there (a save made
during the undo goes back too, so the file ends holding the newest save). Every version taken off
the target stays open here for the caller to record in the history before anything is removed.

A file another program holds open for writing (an appender keeping its descriptor) must not be
displaced at all: what it writes after the exchange would land in the displaced file, and once
that is unlinked, nowhere. So before the check, a read lease (:class:`~..fsutil.move.Lease`) is
taken on the target, which the kernel grants only while nobody has it open for writing; while it
is held, another process's open of it for writing waits for us and breaks the lease, which is
checked after the exchange (the exchange is undone) and before the displaced file is unlinked
(it is kept for the sweep).

A person's ``chmod``, ``chown`` or ``setfacl`` of the file while the write runs counts as a save.
The new file's mode, owner and ACL are copied from the file as the caller first opened it
(``copied``): exchanged in after a ``chmod 600``, it gave the new text, and the note from then on,
the old ``0644``. So the target must still have what was copied: checked on it just before the
exchange (then nothing is exchanged, and the new text is never at the name with a mode taken away)
and, for a change in the instant between, on what the exchange took off (then it is undone). The
caller then tries again, with the mode as it is now, or is blocked, as after a save.
"""

from __future__ import annotations

import fcntl
import os
from typing import NamedTuple

from .. import faults
from ..fsutil.atomic import ACL_ACCESS, read_acl
from ..fsutil.exchange import exchange
from ..fsutil.move import Lease
from ..fsutil.safeopen import Folder, NotRegularFile
from .store import FileVersion, snapshot_fd
from .versions import FileMode

# A writer that keeps replacing the file faster than two exchanges gets its latest save put back
# at most this many times; every version taken off is recorded all the same.
_PUT_BACK_TRIES = 100


class Taken(NamedTuple):
    """A file taken off the target by an exchange, open (its bytes stay readable even once unlinked)."""

    fd: int
    version: FileVersion


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


class Split(NamedTuple):
    """A file a swap replaced that had other names (hard links): they keep its old bytes. Its device
    and inode, for a caller that removes some of those names itself (a rollback archiving them)."""

    dev: int
    ino: int
    links: int

    def note(self, shown: str, by: str) -> str:
        """What a write, restore or merge (``by``) of ``shown`` says of it: the one wording of all three."""
        return f"{shown} had {self.links} hard links: the other name(s) keep the text it had (a {by} replaces the file)"


def _split(st: os.stat_result) -> Split | None:
    return Split(st.st_dev, st.st_ino, st.st_nlink) if st.st_nlink > 1 else None


class Swap:
    """One exchange of the temp file ``tmp`` with the target ``name`` in ``folder``, and its undo.
    ``copied``: the target's mode and owner (with its extended attributes, where read: its ACL) as
    the caller saw them when it gave the temp file its own from them; the target must still have them."""

    def __init__(self, folder: Folder, tmp: str, name: str, copied: FileMode):
        self.folder, self.tmp, self.name, self.copied = folder, tmp, name, copied
        self.ours, _ = folder.open_regular(tmp)  # held open: its inode number cannot be reused meanwhile
        self.placed = _identity(os.fstat(self.ours))  # what our last exchange put at the target
        self.taken: list[Taken] = []  # every regular file an exchange took off the target, in order
        self.leased: int | None = None  # the target as it was before the exchange, open under self.lease
        self.lease: Lease | None = None
        # The file the swap replaced, where it had other names (hard links): they keep the old bytes
        # (the write says so), counted on that very file, not on a name looked up again.
        self.split: Split | None = None

    def lease_target(self) -> bool:
        """Take a read lease on the target: False when another program kept it open for writing
        (waited for as :class:`~..fsutil.move.Lease` does); True otherwise, with or without a lease
        (none where this system or file system has none, or the target is gone or not a file)."""
        try:
            self.leased, _ = self.folder.open_regular(self.name)
        except (FileNotFoundError, NotRegularFile):
            return True  # the version check that follows sees it
        self.lease = Lease(self.leased, fcntl.F_RDLCK)
        return self.lease.take()

    def opened_for_writing(self) -> bool:
        """Whether another program has been opening the leased file for writing since the lease."""
        return self.lease is not None and self.lease.broken()

    def exchange(self, checked: str) -> bool | None:
        """Exchange the temp file with the target. True: the target held ``checked`` and now holds
        the new file (``tmp`` holds the old one). False: another version was there; it has been put
        back and is in :attr:`taken`; or its mode, owner or ACL are no longer those the temp file
        copied. None: this file system cannot exchange (nothing changed)."""
        # Checked before the exchange too: after it, the new text is at the name with the mode the
        # person just took away until the exchange is undone (a reader opening it then keeps it).
        if self.leased is not None and not self._as_copied(self.leased):
            return False
        if not exchange(self.folder.fd, self.tmp, self.name):
            return None
        faults.reach("write:exchanged")  # a kill here leaves what the exchange displaced at the .swp name
        try:
            first = self._take()
            if first is not None and first.version.version == checked and self._as_copied(first.fd):
                self.split = _split(os.fstat(first.fd))  # (the temp name took the target's: the same count)
                return True
        except BaseException:  # what came off cannot be read (permissions, I/O): it goes back unread
            self.put_back()
            raise
        self.put_back()
        return False

    def rename(self) -> None:
        """Rename the temp file over the target, where the file system cannot exchange: the file
        replaced is the one leased, the check of its version just done."""
        if self.leased is not None:
            self.split = _split(os.fstat(self.leased))
        os.replace(self.tmp, self.name, src_dir_fd=self.folder.fd, dst_dir_fd=self.folder.fd)

    def put_back(self) -> None:
        """Undo the exchange: the target gets back what was taken off it, or a save made since."""
        for _ in range(_PUT_BACK_TRIES):
            going = self._at_tmp()
            exchange(self.folder.fd, self.tmp, self.name)
            if self._at_tmp() == self.placed:
                return  # nobody replaced the target since our last exchange
            self._take()  # someone did: keep that version too and put it back in its turn
            self.placed = going

    def remove_leftover(self, recorded: set[str]) -> bool:
        """Remove what is left at the temp name when it is the new file or a version in ``recorded``
        (one in the history); anything else stays for a later write to record (True: removed)."""
        try:
            at_tmp = self._at_tmp()
        except FileNotFoundError:
            return True  # renamed into place (a file system without exchange)
        known = {_identity(os.fstat(t.fd)) for t in self.taken if t.version.version in recorded}
        if at_tmp != _identity(os.fstat(self.ours)) and at_tmp not in known:
            return False
        if at_tmp != _identity(os.fstat(self.ours)) and self.opened_for_writing():
            return False  # a writer is opening it: what it writes would go to an unlinked file
        self.folder.unlink(self.tmp, missing_ok=True)
        return True

    def close(self) -> None:
        if self.lease is not None:
            self.lease.release()  # a writer's open waiting on it goes on, to a file kept
            self.lease = None
        for fd in [self.ours, *(t.fd for t in self.taken), *([self.leased] if self.leased is not None else [])]:
            os.close(fd)
        self.taken, self.leased = [], None

    def _as_copied(self, fd: int) -> bool:
        """Whether the file open on ``fd`` has the mode, owner and ACL the temp file copied."""
        st = os.fstat(fd)
        if FileMode.of(st).bits != self.copied.bits:
            return False
        if self.copied.xattrs is None:  # (not read: the temp kept what it was created with)
            return True
        return read_acl(fd) == next((value for name, value in self.copied.xattrs if name == ACL_ACCESS), None)

    def _at_tmp(self) -> tuple[int, int]:
        return _identity(self.folder.lstat(self.tmp))

    def _take(self) -> Taken | None:
        """Open and hash what an exchange just left at the temp name (None: not a regular file)."""
        try:
            fd, _ = self.folder.open_regular(self.tmp)
        except NotRegularFile:
            return None
        try:
            taken = Taken(fd, snapshot_fd(fd))
        except BaseException:
            os.close(fd)
            raise
        self.taken.append(taken)
        return taken
