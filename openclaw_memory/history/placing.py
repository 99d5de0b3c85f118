"""Putting a memory file in place, through its folder's descriptor: the folder made as needed (and
unmade when the write fails), the current file opened, a temp file written beside the target from
blocks, a new file created only where nothing is, the swap name, the target's version just before
the swap. Shared by the guarded write (:mod:`.guard`), mv and rm (:mod:`.moves`) and import."""

from __future__ import annotations

import grp
import os
import pwd
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard

import xxhash

from ..errors import PathRefused, WriteBlocked
from ..files.jstext import js_trim
from ..files.paths import LEGACY_ROOT, REPAIR_DIR, ExtraPath, absolute_path, display_path
from ..files.read import ResolvedPath, resolve_memory_path
from ..fsutil.atomic import Xattrs, folder_owner, has_default_acl, read_xattrs, write_temp_beside
from ..fsutil.move import link_noreplace
from ..fsutil.private import umask_of_user
from ..fsutil.safeopen import Folder, NotRegularFile, as_scanned
from .store import FileVersion, HistoryStore, snapshot_fd
from .versions import FileMode

if TYPE_CHECKING:
    from ..settings import Settings


def resolve_writable(path: str, workspace: str, extra_paths=(), *, known: Callable[[str], bool] | None = None) -> ResolvedPath:
    """``path`` as :func:`~..files.read.resolve_memory_path` resolves it (its name as given, white space
    around it kept, when that is a note of an extra path that is there or, ``known``, that the history
    has logged: :func:`logged_in`), or a configured extra path
    naming one ``.md`` file that is gone (moved into the workspace, removed), in its existing folder:
    a place a note may be put back (``mv`` back, ``restore --last``, a rollback's bring-back, an
    import, a write) and whose history may be listed. ``read`` refuses it as OpenClaw does (nothing
    there is memory until a file is): only what writes, and what lists the history, ask here."""
    try:
        return resolve_memory_path(path, workspace, extra_paths, known=known)
    except PathRefused:
        raw = js_trim(path or "")  # (an extra path never starts or ends with white space: settings trim it)
        absolute = absolute_path(raw, workspace) if raw else ""
        if not absolute.endswith(".md") or not extra_paths:
            raise
        named = as_scanned(absolute)  # as the scanner named it while it was there
        for given in extra_paths if not _never_memory(named, as_scanned(workspace)) else ():
            if isinstance(given, ExtraPath) and given.pattern is not None:
                continue
            if absolute in (str(given), as_scanned(str(given))) and _gone_beside_a_folder(named):
                return ResolvedPath(named, display_path(named, workspace), os.path.dirname(named),
                                    (os.path.basename(named),), False)
        raise


def logged_in(settings: Settings) -> Callable[[str], bool]:
    """Whether the history of ``settings``' workspace has logged the note named (its absolute path;
    any entry, a removal too): what keeps a name given with white space around it (`` top.md``) as
    given for the commands that name a note that may be gone (write, rm, mv, restore, history), once
    the note is not there. The product names only notes that are or were, so a name it printed is
    one of those; a name it never logged is trimmed (a stray newline before ``MEMORY.md``)."""
    return lambda abs_path: bool(HistoryStore.for_settings(settings).entries(abs_path))


def _never_memory(named: str, workspace: str) -> bool:
    """Whether ``named`` is a name no configuration makes memory: the legacy root ``memory.md``, the
    workspace itself, anything in a repair archive (an extra path inside the workspace, such as
    ``notes/todo.md``, is a place like any other)."""
    if os.path.commonpath([named, workspace]) != workspace:
        return False
    parts = os.path.relpath(named, workspace).split(os.sep)
    return parts in ([LEGACY_ROOT], ["."]) or REPAIR_DIR in parts


def _gone_beside_a_folder(absolute: str) -> bool:
    """Nothing at ``absolute`` (not even a link), and its folder is a folder (not a link to one)."""
    try:
        os.lstat(absolute)
        return False
    except FileNotFoundError:
        pass
    except OSError:
        return False
    try:
        return stat.S_ISDIR(os.lstat(os.path.dirname(absolute)).st_mode)
    except OSError:
        return False


def open_current(resolved: ResolvedPath) -> tuple[Folder | None, int | None, FileVersion | None]:
    """The file's folder (None when a folder on the way does not exist yet), the file and its version.

    Everything after this goes through the folder's descriptor: a folder swapped
    later cannot redirect the temp file, the check or the rename.
    """
    try:
        folder = resolved.folder()
    except FileNotFoundError:
        return None, None, None
    try:
        fd, _ = folder.open_regular(resolved.name)
    except FileNotFoundError:
        return folder, None, None
    except NotRegularFile as exc:
        folder.close()
        raise PathRefused(f"refused: {resolved.display}: {exc.strerror}") from None
    except PermissionError:
        folder.close()
        raise PathRefused(f"cannot read {resolved.display}: permission denied") from None
    except BaseException:
        folder.close()
        raise
    try:
        return folder, fd, snapshot_fd(fd)
    except BaseException:
        os.close(fd)
        folder.close()
        raise


def make_folder(resolved: ResolvedPath, note: FileMode | None = None) -> tuple[Folder, int]:
    """The file's folder, created as needed, and how many of its folders existed already. Each folder
    made is no more open than ``note``, the mode the file will have (:func:`folder_mode_for`)."""
    dirs = resolved.parts[:-1]
    existed = len(dirs)
    while existed and not _is_folder(resolved.root, dirs[:existed]):
        existed -= 1
    try:
        return resolved.folder(create=True, mode=folder_mode_for(note)), existed
    except BaseException:
        remove_made_folders(resolved, existed)
        raise


def folder_mode_for(note: FileMode | None) -> int:
    """The mode a folder made for a note is made with (less the umask, at its ``mkdir``): ``0755``, but
    no ``r-x`` for the group where the note gives its group nothing, nor for others where it gives them
    nothing. A removed ``0600`` note brought back (``restore --last``, a rollback, ``mv`` into a new
    folder) into a folder removed with it got a ``0755`` folder: every user listed its name
    (``memory/priv/divorce-lawyer.md``). ``None`` (a new note, whose mode the umask gives): ``0755``."""
    if note is None:
        return 0o755
    mode = 0o755
    if not note.mode & 0o070:
        mode &= ~0o070
    if not note.mode & 0o007:
        mode &= ~0o007
    return mode


def _is_folder(root: str, parts: tuple[str, ...]) -> bool:
    try:
        Folder.under(root, parts).close()
    except OSError:
        return False
    return True


def remove_made_folders(resolved: ResolvedPath, existed: int) -> None:
    """Undo what :func:`make_folder` made for a write that failed (a disk out of inodes): empty
    folders only, deepest first, each removed by name from its parent's descriptor."""
    dirs = resolved.parts[:-1]
    for depth in range(len(dirs), existed, -1):
        try:
            with Folder.under(resolved.root, dirs[: depth - 1]) as parent:
                os.rmdir(dirs[depth - 1], dir_fd=parent.fd)
        except FileNotFoundError:
            continue  # the creation stopped above this depth
        except OSError:
            return  # not empty (someone wrote there meanwhile): leave it and its parents


class KeptMode(FileMode):
    """The mode and owner of a file being replaced, with its extended attributes (its POSIX ACL
    among them), read from the same descriptor: all of them carry over to the file replacing it."""

    xattrs: Xattrs | None = None  # None: not read (the temp file keeps what it was created with)

    def _replace(self, **changes: Any) -> KeptMode:
        """The same with ``changes``, its attributes kept (an import narrowing the bits: the ACL,
        set before them, is narrowed by them)."""
        made = KeptMode._make(FileMode(*self)._replace(**changes))
        made.xattrs = self.xattrs
        return made


def kept_stat(fd: int | None) -> KeptMode | None:
    """The mode, owner and extended attributes of the file being replaced: they carry over to the
    new one (:func:`temp_from_blocks`). With an ACL, the group bits of the mode are its mask: the
    bits alone gave the file's group what the ACL gave a named user, and the named user nothing."""
    if fd is None:
        return None
    kept = KeptMode._make(FileMode.of(os.fstat(fd)))
    kept.xattrs = read_xattrs(fd)
    return kept


class ReadOnlyNote(NamedTuple):
    """A note a change would replace or remove that this user may not write in place (:func:`is_read_only`)."""

    display: str
    kept: FileMode
    folder: tuple[str, FileMode] | None = None  # its folder's shown name and mode, when that is read-only too


class ReadOnlyRefused(PathRefused):
    """A change refused whole (exit 2) for the read-only notes it would replace or remove (``found``).
    Its own class so that a rollback step can tell it from the other refusals: that note is left, named."""

    def __init__(self, found: list[ReadOnlyNote], done: str):
        super().__init__(read_only_refusal(found, done))
        self.found = found


def is_read_only(kept: FileMode | None) -> TypeGuard[FileMode]:
    """Whether this process may not write the file in place, by its mode and owner as a stat of the
    opened file gave them: the owner's bits for its owner, the group's for a member of its group,
    the others' for anyone else, as the kernel asks (``chmod u-w``; another user's ``0644`` note).
    Replacing or removing it is a rename or an unlink, which only its folder's mode governs, so the
    product looks at the mode itself, where an editor and the shell's ``rm`` ask first and OpenClaw's
    own write gets EACCES. Root, whom the kernel lets write anything, is held to the owner's bit of
    the notes root owns (``chmod u-w`` by root); another user's note is root's to write."""
    if kept is None:
        return False
    euid = os.geteuid()
    if euid == 0:
        return kept.uid == 0 and not kept.mode & 0o200
    if kept.uid == euid:
        bit = 0o200
    elif kept.gid == os.getegid() or kept.gid in os.getgroups():
        bit = 0o020
    else:
        bit = 0o002
    return not kept.mode & bit


def read_only_note(display: str, kept: FileMode | None, folder: Folder | None = None) -> ReadOnlyNote | None:
    """The note, when it is read-only (:func:`is_read_only`), with its folder (open, ``folder``) when
    the kernel would refuse this user that too (never root): a ``chmod u+w`` of the note alone would
    only meet the folder's refusal."""
    if not is_read_only(kept):
        return None
    around = FileMode.of(os.fstat(folder.fd)) if folder is not None and os.geteuid() != 0 else None
    shown = os.path.dirname(display) or "the workspace"
    return ReadOnlyNote(display, kept, (shown, around) if is_read_only(around) else None)


def read_only_details(note: ReadOnlyNote) -> str:
    """``(mode 444)``, ``(owned by uid 0, mode 644)``, and the folder when it is read-only too."""
    owner = "" if note.kept.uid == os.geteuid() else f"owned by uid {note.kept.uid}, "
    folder = f", in a read-only folder ({note.folder[0]}, mode {note.folder[1].mode & 0o777:o})" if note.folder else ""
    return f"({owner}mode {note.kept.mode & 0o777:o}){folder}"


def read_only_refusal(found: list[ReadOnlyNote], done: str) -> str:
    """The one line every change that would replace or remove read-only notes refuses with, naming
    each with its mode (and its owner, another user's; and its folder, read-only too); ``done``:
    "written", "moved", "rolled back"..."""
    one = len(found) == 1
    if any(n.kept.uid != os.geteuid() for n in found):  # this user cannot change another's mode
        hint = f"only {'its owner' if one else 'their owners'} can let writes through: `chmod`, or `chown` to this user"
    else:
        folders = (" and its folder" if one else " and their folders") if any(n.folder for n in found) else ""
        hint = f"`chmod u+w` {'it' if one else 'them'}{folders} to let writes through"
    if one:
        return f"refused: {found[0].display} is read-only {read_only_details(found[0])}; nothing was {done} ({hint})"
    named = [f"{n.display} {read_only_details(n)}" for n in found]
    return f"refused: {', '.join(named[:-1])} and {named[-1]} are read-only; nothing was {done} ({hint})"


def refuse_each_read_only(found: Iterable[ReadOnlyNote | None], done: str) -> None:
    """ReadOnlyRefused naming every read-only note of ``found`` (Nones: the writable ones), if any:
    a change of many files (a rollback, an import) is refused whole before any is changed."""
    listed = [n for n in found if n is not None]
    if listed:
        raise ReadOnlyRefused(listed, done)


def refuse_read_only(kept: FileMode | None, display: str, done: str, folder: Folder | None = None,
                     allowed: Callable[[FileMode], bool] | None = None) -> None:
    """ReadOnlyRefused (exit 2) when the note (``kept``: the opened file's stat) is read-only, unless
    ``allowed`` lets that mode go (a rollback's move or undo, :mod:`~..rollback.plan`)."""
    if kept is not None and allowed is not None and allowed(kept):
        return
    refuse_each_read_only([read_only_note(display, kept, folder)], done)


class TakenOver(NamedTuple):
    """Another user's note a change would replace by a file its owner could no longer write (:func:`taking_over`)."""

    display: str
    there: FileMode  # the note as it is (its owner, and its mode as it is, named in the refusal)


class TakeOverRefused(PathRefused):
    """A change refused whole (exit 2) for the notes of other users it would take over (``found``).
    Its own class so that a rollback step can tell it from the other refusals: that note is left, named."""

    def __init__(self, found: list[TakenOver], doing: str, done: str):
        one = found[0].display if len(found) == 1 else "they"
        super().__init__(f"refused: {taking_over_words(found, doing)}; nothing was {done}: {one} "
                         f"{'is' if len(found) == 1 else 'are'} unchanged")
        self.found = found


def taking_over_words(found: list[TakenOver], doing: str) -> str:
    """Why ``doing`` ("a write", "a restore", "a rollback", "an import") may not replace the notes ``found``."""
    if len(found) == 1:
        # (root may write any file: a note of root's would only stop being root's)
        lost = "which would be root's no more" if found[0].there.uid == 0 else "which they could no longer write"
        return (f"{found[0].display} belongs to another user (uid {found[0].there.uid}, mode {found[0].there.mode & 0o777:o}): "
                f"{doing} puts a file of this user's in its place, {lost}")
    named = [f"{n.display} (uid {n.there.uid}, mode {n.there.mode & 0o777:o})" for n in found]
    return (f"{', '.join(named[:-1])} and {named[-1]} belong to other users: {doing} puts files of this user's "
            "in their place, which their owners could no longer write")


def taking_over(display: str, there: FileMode | None, mode: int, folder_fd: int) -> TakenOver | None:
    """The note ``there`` (another user's, the opened file's stat) when this process, not root, would
    replace it in the folder open on ``folder_fd`` by a file of ``mode`` (what the caller gives the
    replacement: a write the note's own, a restore the version's narrowed) that its owner could no
    longer write; None when it could. The replacement is this user's (a chown to another user is
    refused), in the group :func:`replacement_group` says: its owner may write it still where the
    mode lets others write, or its group and the owner is in that group (a 0664 note in a setgid
    team folder, bob's now in the team's group as it was alice's: alice's append worked before the
    refusal and still does). Root keeps the note's owner."""
    euid = os.geteuid()
    if there is None or there.uid == euid or euid == 0 or mode & 0o002:
        return None
    if mode & 0o020 and _in_group(there.uid, replacement_group(there.gid, folder_fd)):
        return None
    return TakenOver(display, there)


def replacement_group(gid: int, folder_fd: int) -> int:
    """The group of the file this process, not root, puts in place of a note of group ``gid`` in the
    folder open on ``folder_fd``: ``gid`` where this process may give its own file that group (a
    member of it, :func:`temp_from_blocks`; write_temp_beside chowns only a group other than its
    own), else the one a new file gets: the folder's in a setgid folder, this process's otherwise."""
    if gid != os.getegid() and gid in os.getgroups():
        return gid
    folder = os.fstat(folder_fd)
    return folder.st_gid if folder.st_mode & stat.S_ISGID else os.getegid()


def _in_group(uid: int, gid: int) -> bool:
    """Whether the user ``uid`` is in the group ``gid``: its primary group, or listed as a member. A
    user or group unknown here is in none (the owner is then said to lose access: refused)."""
    try:
        user = pwd.getpwuid(uid)
        return user.pw_gid == gid or user.pw_name in grp.getgrgid(gid).gr_mem
    except KeyError:
        return False


def refuse_each_taking_over(found: Iterable[TakenOver | None], doing: str, done: str) -> None:
    """TakeOverRefused naming every note of ``found`` (Nones: those not taken over), if any: a change
    of many files (a rollback, an import) is refused whole before any is changed."""
    listed = [n for n in found if n is not None]
    if listed:
        raise TakeOverRefused(listed, doing, done)


def refuse_taking_over(there: FileMode | None, folder: Folder | None, display: str, doing: str, done: str,
                       mode: int | None = None) -> None:
    """TakeOverRefused (exit 2) where replacing the note ``there`` (the opened file's stat, in
    ``folder``) by a file of ``mode`` (None: the note's own, as a write keeps it) takes it from its
    owner (:func:`taking_over`). ``doing``: "a write", "a restore"; ``done``: "written", "restored"."""
    if folder is not None and there is not None:
        refuse_each_taking_over([taking_over(display, there, there.mode if mode is None else mode, folder.fd)], doing, done)


def read_only_now(resolved: ResolvedPath) -> ReadOnlyNote | None:
    """The file at ``resolved`` now, looked up by name, when it is read-only; None when it is not, or
    nothing (or no folder) is there. For a plan of many files before any is changed (a rollback's):
    each change checks again the file it opened (:func:`refuse_read_only`)."""
    try:
        with resolved.folder() as folder:
            return read_only_note(resolved.display, FileMode.of(folder.lstat(resolved.name)), folder)
    except (OSError, PathRefused):
        return None


def recorded_mode(store: HistoryStore, resolved: ResolvedPath, version: str | None = None) -> FileMode | None:
    """What a file brought back where none is gets: the permission bits and owner its history last
    saw (a removed ``0600`` note came back ``0644``, readable by every user, and a user's note came
    back the caller's, root's, which the user's agent could no longer write). The set-id and sticky
    bits are left off: a file made anew, perhaps given to another user by root, never gets those.
    With ``version`` (the content brought back), no bit that content did not have when seen: the
    last mode under the name may be another file's (``mv --force q p``: a rollback to before it
    brought p's private 0600 text back at q's 0644). Within :func:`snapshot_mode`, no bit the
    watchdog snapshot a rollback goes back to saw either. None where neither saw one (versions
    logged before schema 7): the default, a new file's."""
    seen = store.log.last_mode(resolved.abs_path, resolved.display)
    own = store.log.mode_of(resolved.abs_path, resolved.display, version) if version is not None else None
    if own is not None:  # the owner and the owner's bits as last seen: only group and others narrowed
        seen = own if seen is None else seen._replace(mode=seen.mode & (~0o077 | own.mode))
    bits = snapshot_bits(resolved)
    if bits is not None:
        # The bits a watchdog snapshot saw the content brought back with (a rollback to it): a note
        # the history never logged, deleted by hand, came back root's 0644 from a snapshot of it at 0600.
        seen = (FileMode(bits, *_new_note_owner(resolved)) if seen is None
                else seen._replace(mode=seen.mode & (~0o077 | bits)))
    return seen._replace(mode=seen.mode & 0o777) if seen is not None else None


# The note a rollback to a watchdog snapshot is bringing back, and the st_mode the snapshot saw it
# with (:func:`snapshot_mode`), for :func:`recorded_mode`.
_SNAPSHOT_MODE: ContextVar[tuple[str, int] | None] = ContextVar("snapshot_mode", default=None)


@contextmanager
def snapshot_mode(abs_path: str, mode: int | None) -> Iterator[None]:
    """While it lasts, a note brought back at ``abs_path`` (:func:`recorded_mode`) gets no permission
    bit ``mode`` (what a watchdog snapshot saw it with) does not give; with no recorded owner, the
    owner a new note gets. ``None``: nothing recorded, the history's word alone."""
    token = _SNAPSHOT_MODE.set((abs_path, mode) if mode is not None else None)
    try:
        yield
    finally:
        _SNAPSHOT_MODE.reset(token)


def snapshot_bits(resolved: ResolvedPath) -> int | None:
    """The permission bits the watchdog snapshot a rollback is bringing ``resolved`` back from saw
    it with (:func:`snapshot_mode`); None outside one, or where the snapshot recorded none."""
    snapped = _SNAPSHOT_MODE.get()
    return snapped[1] & 0o777 if snapped is not None and snapped[0] == resolved.abs_path else None


def _new_note_owner(resolved: ResolvedPath) -> tuple[int, int]:
    """The owner a note made at ``resolved`` gets where nothing records one: this process's; made by
    root, the owner of its folder (:func:`~..fsutil.atomic.folder_owner`), the deepest one there is
    (each folder made for it is given its parent's owner)."""
    if os.geteuid() != 0:
        return os.geteuid(), os.getegid()
    dirs = resolved.parts[:-1]
    for depth in range(len(dirs), -1, -1):
        try:
            with Folder.under(resolved.root, dirs[:depth]) as folder:
                st = os.fstat(folder.fd)
                return st.st_uid, st.st_gid
        except (OSError, ValueError):
            continue
    return os.geteuid(), os.getegid()


def temp_from_blocks(folder: Folder, resolved: ResolvedPath, blocks: Iterable[bytes], kept: FileMode | None,
                      tail: bytes = b"") -> tuple[str, FileVersion, str]:
    """Write ``blocks`` then ``tail`` to a fsynced temp file beside the target, in ``folder``.

    Returns the temp name, the new content's snapshot, and the hash of the ``blocks``
    part alone (for an append: the bytes copied from the current file).
    """
    whole, head = xxhash.xxh3_128(), xxhash.xxh3_128()
    size = 0

    def hashed() -> Iterator[bytes]:
        nonlocal size
        for block in blocks:
            head.update(block)
            whole.update(block)
            size += len(block)
            yield block
        whole.update(tail)
        size += len(tail)
        yield tail

    if kept is not None:  # (a replaced file's, or one the history recorded for a file brought back)
        # Root gives it the note's owner; another user's own file, the note's group where it is in that
        # group (a chown to another user is refused, a chgrp to one's own group is not): the team
        # keeps the note in a team folder that is not setgid (it became the writer's own group's).
        owner = (kept.uid if os.geteuid() == 0 else os.geteuid(), kept.gid)
        tmp = write_temp_beside(resolved.name, hashed(), kept.mode, dir_fd=folder.fd, owner=owner, xattrs=kept.xattrs)
    elif has_default_acl(folder.fd):  # created as the shell's `>` would, the folder's default ACL applied
        tmp = write_temp_beside(resolved.name, hashed(), None, dir_fd=folder.fd, create_mode=0o666,
                                owner=folder_owner(folder.fd))
    else:  # (made by root, the folder's owner's: the user's note is the user's to write)
        tmp = write_temp_beside(resolved.name, hashed(), new_file_mode(), dir_fd=folder.fd, owner=folder_owner(folder.fd))
    return tmp, FileVersion(whole.hexdigest(), size), head.hexdigest()


def new_file_mode() -> int:
    """A new memory file's mode: what the user's umask leaves of 0666, as an editor's new file gets
    (in a folder with no default ACL: where there is one, the kernel gives a file what it says)."""
    return 0o666 & ~umask_of_user()  # (in the service: the caller's umask, not the service's)


def current_version(folder: Folder, name: str) -> str | None:
    """The target's version just before the swap (a non-regular file counts as a change)."""
    try:
        fd, _ = folder.open_regular(name)
    except FileNotFoundError:
        return None
    except OSError:
        return "not-a-regular-file"
    try:
        return snapshot_fd(fd).version
    finally:
        os.close(fd)


def create_new(folder: Folder, tmp: str, name: str) -> None:
    """Move the temp file to ``name`` only if nothing is there (link, or a checked rename without hard links)."""
    try:
        link_noreplace(folder.fd, tmp, folder.fd, name)
    except FileExistsError:
        raise Raced() from None


def held_open(resolved: ResolvedPath) -> WriteBlocked:
    return WriteBlocked.because(f"{resolved.display} is held open for writing by another program, which could still "
                                "write to it; nothing was written.", path=resolved.display, step="held_open")


def swap_name(folder: Folder, tmp: str) -> str:
    """``.NAME.<hex>.swp`` (as long as the ``.tmp`` name, so it fits too): the temp file, renamed once its bytes are stored and its key recorded.
    An exchange leaves the displaced file at this name, which the sweep records before removing: one
    left by a killed write is never replaced (another ``<hex>`` is drawn)."""
    stem = tmp[: -len(".01234567.tmp")]
    swap = tmp[: -len(".tmp")] + ".swp"
    while True:
        try:
            link_noreplace(folder.fd, tmp, folder.fd, swap)
            return swap
        except FileExistsError:
            swap = f"{stem}.{os.urandom(4).hex()}.swp"


class Raced(Exception):
    """The target changed between the check and the replace."""
