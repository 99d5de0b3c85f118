"""The data dir is this user's alone: folders 0700, files 0600, whatever the umask.

What openclaw-memory keeps per workspace (``<state dir>/openclaw-memory/workspaces/<name>/``:
the state database and its ``-wal``/``-shm``, the index shards, the locks, the service's
socket) holds the memory text, so no other user may read it, write it or take its locks.

- :func:`private_umask`: an openclaw-memory process (the CLI, ``serve``, ``mcp``) runs with
  umask 077, so every file it creates is born owner-only, those of the libraries it calls
  included (Qdrant Edge writes its shards from Rust, some of them from the engine's own
  threads, at moments this process does not choose). What it makes in the workspace, which
  is the user's, gets the user's own umask back explicitly (:func:`as_user_made`); what the
  service makes there for a caller gets the caller's (:data:`CALLER_UMASK`).
- :func:`make_dirs`: missing folders made 0700 (the state dir too, when this makes it).
- :func:`check_data_dir`: before a command uses the data dir, a folder another user could
  have tampered with (a link below the state dir included) is refused
  (:class:`~openclaw_memory.errors.StateDirUnsafe`), and one of
  ours left open (0755, 0644 files: a program that imports the package keeps its own umask) is
  closed, its whole tree with it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from ..errors import OutOfFiles, StateDirError, StateDirUnsafe, is_out_of_files, printable

PRIVATE_UMASK = 0o077
_user_umask: int | None = None  # the umask this process started with, while private_umask() holds
# The umask of the caller the service answers, for that request's thread (serve.core, as the caller's
# zone): a note or folder the service makes for a caller is as the caller's own process makes it (a
# caller at umask 077 got the service's 0644 note and 0755 folder, readable by every user).
CALLER_UMASK: ContextVar[int | None] = ContextVar("caller_umask", default=None)
_checked: set[Path] = set()  # the state dirs check_data_dir looked at: make_dirs checks below them too
# The folders check_the_way found clean since settings were last resolved: the config files and the
# default workspace of one resolution sit in one state dir (four walks of every folder from / down).
_clean_ways: set[str] = set()


def forget_ways() -> None:
    """Settings are resolved again: every way is walked again (a plant may have come since)."""
    _clean_ways.clear()


@contextmanager
def private_umask() -> Iterator[None]:
    """Run the block with umask 077; the umask it replaces is the user's (:func:`user_umask`)."""
    global _user_umask
    if _user_umask is not None:  # already inside one (a command run from a command)
        yield
        return
    _user_umask = os.umask(PRIVATE_UMASK)
    try:
        yield
    finally:
        os.umask(_user_umask)
        _user_umask = None


def user_umask() -> int | None:
    """The user's umask: the caller's, in a service answering one (:data:`CALLER_UMASK`); the one this
    process started with while :func:`private_umask` holds; else None (the process's umask is the user's)."""
    caller = CALLER_UMASK.get()
    return caller if caller is not None else _user_umask


def umask_of_user() -> int:
    """:func:`user_umask`, or this process's own umask where that is the user's."""
    umask = user_umask()
    if umask is None:
        umask = os.umask(PRIVATE_UMASK)  # read by setting it; a file made meanwhile by a thread is only more private
        os.umask(umask)
    return umask


def as_user_made(fd: int, mode: int) -> None:
    """A folder or file this process just made in the user's tree (the workspace): give it the mode
    the user's umask gives ``mode``, as it would have without :func:`private_umask` (or, in the
    service, as the caller's process would have made it)."""
    umask = user_umask()
    if umask is not None:
        try:
            os.fchmod(fd, mode & ~umask)
        except OSError:
            pass  # not ours after all (swapped in meanwhile): it keeps the mode it has


def make_dirs(path: str | os.PathLike[str]) -> None:
    """``os.makedirs``, each folder it makes 0700 whatever the umask. Below a state dir that
    :func:`check_data_dir` checked, the folders the path goes through that it did not make are
    checked as that does (a link or another user's entry refused) before anything is made in them:
    what was missing when the command started could have been planted since, in a state dir others
    may add to (1777)."""
    path = os.fspath(path)
    guard = next((state_dir for state_dir in _checked if state_dir in Path(path).parents), None)
    missing: list[str] = []
    while not _present(path):
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    _check_made(guard, path)  # before anything is made in it
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)  # never through a link: mkdir does not follow a last component
        except FileExistsError:
            if not os.path.isdir(folder):
                raise
            _check_made(guard, folder)  # made meanwhile: by another process of ours, or by another user
            continue
        os.chmod(folder, 0o700)  # a umask that takes the owner's own bits too


def _check_made(guard: Path | None, folder: str) -> None:
    """The folders from below the state dir ``guard`` down to ``folder`` (one of those the path goes
    through), checked as :func:`check_data_dir` checks them; nothing to check above the state dir.
    A folder this process then makes in one that passed is its own, and cannot be swapped."""
    if guard is not None and guard in Path(folder).parents:
        _check_below(guard, Path(folder), tighten=False)


def check_data_dir(state_dir: Path, data_dir: Path) -> None:
    """Refuse a state dir or data dir another user could have read or changed; close one of ours
    left open (the folders from the state dir down to the data dir 0700, and then every file of
    the data dir 0600). Missing folders are left to :func:`make_dirs`, when something is written.

    The state dir may be OpenClaw's (it holds openclaw.json): its mode is not ours to change. It
    is refused when it belongs to another user (not root), or when others may write in it without
    the sticky bit (``/tmp`` is fine): either could swap ``openclaw-memory/`` for a folder of
    theirs. Below it every folder is ours, looked at itself: refused when it is a link (in a 1777
    state dir another user may plant ``openclaw-memory`` as one, and change it at will, being its
    owner), another user's, or others may write in it (one of them could have swapped what it
    holds), else tightened.
    """
    euid = os.geteuid()
    st = _stat(state_dir)
    if st is None:
        return
    if st.st_uid not in (euid, 0):
        raise _not_yours("state dir", state_dir, st.st_uid, f"`chown {euid} {state_dir}`")
    if _writable_by_others(st, state_dir) and not st.st_mode & stat.S_ISVTX:
        raise _open_to_others("state dir", state_dir, st.st_mode, f"`chmod go-w {state_dir}`")
    _checked.add(Path(state_dir))
    _check_below(Path(state_dir), Path(data_dir), tighten=True)


def others_may_plant(folder: str | os.PathLike[str], role: str = "config file") -> bool:
    """Whether another user may have put what ``folder`` holds there unasked: others may write in it
    (sticky or not: in a 1777 state dir anyone may add an ``openclaw-memory.toml``, a ``.env``, an
    ``openclaw.json`` or a ``workspace/`` while none is there). A folder another user owns and keeps
    to themselves holds what its owner put there, which the user chose by naming it (a team's
    openclaw.json named by OPENCLAW_CONFIG_PATH), unless a folder on the way to it was itself put
    in one others may write in (:func:`check_the_way`: StateDirUnsafe). Followed: a link of the
    user's own to the folder is the folder."""
    check_the_way(role, folder)
    try:
        st = os.stat(folder)
    except (OSError, ValueError):
        return False  # missing (nothing in it to read), or not ours to look into (the open says so)
    return _writable_by_others(st, folder)


def check_the_way(role: str, folder: str | os.PathLike[str]) -> None:
    """Refuse ``folder`` when an entry on the way to it sits in a folder others may write in and is
    not this user's (or root's), or is a symbolic link there: another user put it there (a ``conf/``
    of theirs in a 1777 state dir, whose file an ``$include`` of the user's openclaw.json named, chose
    the workspace the user's writes went to). Each component is looked at itself (``lstat``); a link
    in a folder closed to others is followed, and the way to its target checked the same."""
    euid = os.geteuid()
    start = os.path.abspath(os.fspath(folder))
    if start in _clean_ways:
        return
    parts = start.split(os.sep)[1:]
    here, hops = os.sep, 0
    while parts:
        name = parts.pop(0)
        if not name:
            continue
        entry = os.path.join(here, name)
        try:
            parent, st = os.stat(here), os.lstat(entry)
        except (OSError, ValueError):
            return  # missing or closed: what is not there holds nothing (the open says the rest)
        if _writable_by_others(parent, here) and (stat.S_ISLNK(st.st_mode) or st.st_uid not in (euid, 0)):
            what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else f"uid {st.st_uid}'s"
            raise StateDirUnsafe(role, os.fspath(folder), f"the way to it goes through {entry}, {what}, in {here}, a "
                                 "folder other users may add files to: whoever made it chose what is read",
                                 f"remove it (`rm -r {entry}`) or give --state-dir (or OPENCLAW_STATE_DIR) a folder "
                                 "of your own")
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > 40:
                return  # a loop: the open says ELOOP
            parts = os.path.realpath(entry).split(os.sep)[1:] + parts
            here = os.sep
            continue
        here = entry
    _clean_ways.add(start)


def check_planted(role: str, path: str | os.PathLike[str], st: os.stat_result) -> None:
    """Refuse ``path``, a config file or the default workspace in a folder :func:`others_may_plant`,
    unless it is this user's (or root's) and others may not write in it. ``st`` describes the object
    itself, never a name looked up again: the descriptor opened (``fstat``, opened with
    ``O_NOFOLLOW``), or the ``lstat`` of the entry. A symbolic link there is refused whoever made it:
    its maker chose what it names."""
    path = os.fspath(path)
    euid = os.geteuid()
    folder = os.path.dirname(path) or "."
    elsewhere = "remove it (`rm {}`) or give --state-dir (or OPENCLAW_STATE_DIR) a folder of your own"
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "somewhere"
        raise StateDirUnsafe(role, path, f"it is a symbolic link (to {target}, made by uid {st.st_uid}) in {folder}, where "
                             "other users may add files: whoever made it chose what is read", elsewhere.format(path))
    if st.st_uid not in (euid, 0):
        raise StateDirUnsafe(role, path, f"it belongs to uid {st.st_uid}, not to you (uid {euid}), and {folder} is a "
                             "folder other users may add files to: its owner chose what it holds",
                             f"if you made it, `chown {euid} {path}`; else {elsewhere.format(path if stat.S_ISREG(st.st_mode) else '-r ' + path)}")
    if _writable_by_others(st, path):  # (a link was refused above)
        raise StateDirUnsafe(role, path, f"other users may write in it (mode {stat.S_IMODE(st.st_mode):04o}), and {folder} "
                             "is a folder other users may add files to", f"check what it holds, then `chmod go-w {path}`")


def _check_below(state_dir: Path, data_dir: Path, tighten: bool) -> None:
    """Each folder from below ``state_dir`` down to ``data_dir`` that exists, looked at itself
    (``lstat``: a link is refused, never followed): another user's, a link, or writable by others is
    refused; with ``tighten``, one of ours left open is closed, and its whole tree with it."""
    euid = os.geteuid()
    folder, whole, loose = state_dir, False, []
    parts = data_dir.relative_to(state_dir).parts
    for depth, part in enumerate(parts, 1):
        folder = folder / part
        st = _lstat(folder)
        if st is None:
            break
        role = "data dir" if depth == len(parts) else "folder"
        if stat.S_ISLNK(st.st_mode):
            raise _a_link(role, folder, st.st_uid)
        if st.st_uid != euid:
            raise _not_yours(role, folder, st.st_uid, f"`chown -R {euid} {folder}`")
        if _writable_by_others(st, folder):
            raise _open_to_others(role, folder, st.st_mode, f"`chmod -R go-rwx {folder}`")
        if stat.S_IMODE(st.st_mode) != 0o700:
            loose.append(folder)
    else:
        whole = True  # down to the data dir itself
    if not tighten:
        return
    for each in loose:  # once all passed: a refusal changes nothing
        try:
            os.chmod(each, 0o700)
        except OSError:
            return  # read-only media: nothing will be written there, and what reads still reads
    if whole and loose:
        close_tree(folder)


def close_tree(top: Path) -> None:
    """Every folder under ``top`` 0700, every other entry of ours 0600 (what a process with another
    umask left as that umask made it). Called once ``top`` itself is 0700: nothing in it can be swapped meanwhile."""
    euid = os.geteuid()
    # os.fwalk holds a descriptor per level, and passes over a folder it cannot open: out of
    # descriptors, say so (a folder of ours left open to others, unsaid, and the rest of it unwalked).
    try:
        for _folder, dirs, files, fd in os.fwalk(top, follow_symlinks=False, onerror=lambda exc: _out_of_files(exc, top)):
            for name in dirs + files:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
                    if st.st_uid == euid and not stat.S_ISLNK(st.st_mode) and stat.S_IMODE(st.st_mode) != want:
                        os.chmod(name, want, dir_fd=fd)
                except OSError:
                    continue  # gone meanwhile, or not ours to change (root's file in a user's data dir)
    except OSError as exc:  # (Python 3.11's fwalk raises what its listing of a folder meets)
        _out_of_files(exc, top)
        raise


def _out_of_files(exc: OSError, top: Path) -> None:
    """close_tree's walk of ``top``: a folder it cannot open is passed over, but out of descriptors."""
    if is_out_of_files(exc):
        raise OutOfFiles(f"cannot close every folder in {printable(os.fspath(top))} to others") from None


_KINDS = {stat.S_IFREG: "a file", stat.S_IFDIR: "a folder", stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a FIFO (named pipe)",
          stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}


def identity(path: str) -> tuple[int, int] | None:
    """The file ``path`` names (followed): its device and inode, or None where it cannot be looked at."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def kind_words(mode: int) -> str:
    """What a file of ``mode`` is, in words: "a folder", "a FIFO (named pipe)", "a socket"..."""
    return _KINDS.get(stat.S_IFMT(mode), "something else")


def what_is_at(path: str, st: os.stat_result) -> str:
    """What ``path`` (``st``: its lstat) is, in words for a finding: "a folder", "a symbolic link to X"."""
    kind = stat.S_IFMT(st.st_mode)
    what = _KINDS.get(kind, "something else")
    if kind == stat.S_IFLNK:
        try:
            what += f" to {os.readlink(path)}"
        except OSError:
            pass
    return what


def closed_to_me(st: os.stat_result) -> bool:
    """Whether this process may not both read and write the file ``st`` describes, by its mode and
    owner (a chmod 000, another user's file), not by asking the file system: a read-only mount
    refuses every write, and that is not the file's doing."""
    if os.geteuid() == 0:
        return False
    if st.st_uid == os.geteuid():
        return st.st_mode & 0o600 != 0o600
    bits = 0o060 if st.st_gid == os.getegid() or st.st_gid in os.getgroups() else 0o006
    return st.st_mode & bits != bits


def _stat(path: Path) -> os.stat_result | None:
    """The state dir, followed (settings resolved it to its real path: a user's ``~/.openclaw``
    may be a link of theirs)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:  # (it was "Not a directory (PATH)", exit 1, naming no file on the way)
        raise StateDirError(f"the state dir {path} cannot be made: {_file_on_the_way(path)} is a file, not a folder; "
                            "give --state-dir a folder") from None
    except PermissionError:  # (it was "Permission denied (PATH)", exit 1: HOME another user's)
        raise StateDirError(f"the state dir {path} cannot be looked at: a folder on its way is closed to this user "
                            f"(uid {os.geteuid()}); give --state-dir (or OPENCLAW_STATE_DIR) a folder of your own") from None
    return st if stat.S_ISDIR(st.st_mode) else None  # not a folder: the command that needs it says so


def _file_on_the_way(path: Path) -> Path:
    for above in reversed(path.parents):
        if os.path.isfile(above):
            return above
    return path


def _lstat(path: Path) -> os.stat_result | None:
    """A folder below the state dir, or a link there; None when missing or something else."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return st if stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode) else None


def _present(path: str) -> bool:
    """A folder, or a link (which :func:`_check_below` refuses): nothing to make."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    return stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode) and os.path.isdir(path)


def _writable_by_others(st: os.stat_result, where: str | os.PathLike[str] | None = None) -> bool:
    """Others may write in it: the world, or a group that is not the user's own private group, or,
    with an access ACL (``where``: its path), whoever its entries name: the
    group bits are then the ACL's mask, and ``setfacl -m u:OTHER:rwx`` left them ``rwx`` for the
    user's own group (another user's .env in a 0770+ACL state dir chose the Qdrant server)."""
    if st.st_mode & stat.S_IWOTH:
        return True
    if not st.st_mode & stat.S_IWGRP:
        return False
    return not _own_group(st.st_gid) or (where is not None and _has_acl(where))


def _has_acl(where: str | os.PathLike[str]) -> bool:
    try:
        os.getxattr(where, "system.posix_acl_access")
    except OSError:
        return False  # none (ENODATA), or no ACLs on this file system
    return True


def _own_group(gid: int) -> bool:
    """A user private group (umask 002 systems make folders 0775 with one): named as the user, no
    other member, and no other user's primary group."""
    import grp
    import pwd

    try:
        user = pwd.getpwuid(os.geteuid()).pw_name
        group = grp.getgrgid(gid)
    except KeyError:
        return False
    if group.gr_name != user or not set(group.gr_mem) <= {user}:
        return False
    # Its members are also the users whose primary group it is, who are not listed in gr_mem.
    return all(entry.pw_name == user for entry in pwd.getpwall() if entry.pw_gid == gid)


def _not_yours(role: str, path: Path, uid: int, fix: str) -> StateDirUnsafe:
    return StateDirUnsafe(role, str(path), f"it belongs to uid {uid}, not to you (uid {os.geteuid()}): its owner could read or "
                          "change what it holds", f"if it is yours, {fix}; else give --state-dir a folder of your own")


def _a_link(role: str, path: Path, uid: int) -> StateDirUnsafe:
    try:
        target = os.readlink(path)
    except OSError:
        target = "somewhere"  # removed meanwhile: it was a link all the same
    return StateDirUnsafe(role, str(path), f"it is a symbolic link (to {target}, made by uid {uid}): whoever can "
                          "change it chooses where the data goes, and can take it away from a running service",
                          f"remove the link (`rm {path}`; what it points to is left as it is), or give --state-dir a "
                          "real folder of your own")


def _open_to_others(role: str, path: Path, mode: int, fix: str) -> StateDirUnsafe:
    return StateDirUnsafe(role, str(path), f"other users may write in it (mode {stat.S_IMODE(mode):04o}), so one of them "
                          "could have swapped what it holds", f"check what it holds, then {fix}")
