"""The guarded write and the restore: compare-and-swap on the version the agent last read.

Under the history lock: hash the file as it is, record that version in the history
(so what is about to be replaced can always be restored), check the guard rules,
write the new bytes to a temp file beside the target and fsync it, store the new
version and the idempotency key, hash the target once more and, only if it still
holds the version checked, exchange the temp file with it (:mod:`.swap`); then log the
new version and fsync the folder. A new file is created with ``link``, which fails if
anything appeared at that name meanwhile.

The file's folder is opened once, one component at a time from the allowed root's
descriptor, and every open, temp file, rename and unlink goes through it: a folder
swapped for a symlink meanwhile cannot send the write outside (PathChanged).
Everything that can run out of space happens before the swap, or is undone with it, so
a full disk stops the write with the file unchanged and no temp file left.

Nothing but a hash separates the last check from the exchange, and the exchange keeps
what it displaced: an outside editor that saves exactly then has its save recorded in
the history and put back, and the write is tried again on it (a daily-note append) or
blocked. Where the file system cannot exchange, a rename follows the check at once;
a save landing in that window (no commit in it) is overwritten.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

from .. import faults
from ..errors import SURROGATE, MemoryToolError, NulInText, PathRefused, UsageError, WriteBlocked
from ..files.jstext import text_faults_of
from ..files.paths import DREAMS, LEGACY_DREAMS, is_daily_note
from ..files.read import ResolvedPath, refuse_new_not_utf8
from ..files.root import resolve_dream_diary
from ..fsutil.atomic import ACL_ACCESS, unlink_quietly
from ..fsutil.hashing import hash_bytes
from ..fsutil.move import check_may_lose_name
from ..fsutil.safeopen import Folder
from ..types import WriteAction
from ..wire import key
from .appends import appended
from .failures import HistoryFailed, in_history, translated
from .leftovers import sweep_leftovers
from .objects import pread_blocks
from .placing import (
    KeptMode,
    Raced,
    create_new,
    current_version,
    held_open,
    kept_stat,
    logged_in,
    make_folder,
    open_current,
    recorded_mode,
    refuse_read_only,
    refuse_taking_over,
    remove_made_folders,
    resolve_writable,
    snapshot_bits,
    swap_name,
    temp_from_blocks,
)
from .stale import check_write, seen_after_append
from .states import WRITE, ReadRecords, Window
from .store import FileVersion, HistoryStore, check_prefix
from .swap import Split, Swap
from .unstored import not_stored_why
from .versions import AGENT_WRITE, RESTORE, FileMode, short

APPEND: WriteAction = "append"
if TYPE_CHECKING:
    from ..index.results import SyncSummary
    from ..settings import Settings

REPLACE: WriteAction = "replace"
RESTORED: WriteAction = "restore"
# A daily-note append that loses a race to another append is simply tried again.
_APPEND_TRIES = 5


@dataclass(frozen=True)
class IndexUpdate:
    """What happened to the search index after a write.

    ``updated``: the index now holds the write. Otherwise ``reason`` says why not; ``failed`` is
    True only when an update was tried and failed (the file is written either way, and
    ``openclaw-memory index`` catches up).
    """

    updated: bool
    reason: str | None = None
    failed: bool = False
    sync: SyncSummary | None = None


@dataclass(frozen=True)
class Replay:
    """A write whose idempotency key was seen again: nothing was written; this is the first one's result."""

    key: str
    first_time: float


@dataclass(frozen=True)
class WriteResult:
    path: str
    abs_path: str
    action: WriteAction
    version: str
    previous: str | None = key("previousVersion")  # the version replaced; None when the file was created
    size: int = key()
    created: bool = key()
    changed: bool = True  # False when the file already held these bytes (a restore to its version, the same content)
    index: IndexUpdate | None = None  # set by the API after the write
    # The write happened; something after it did not (see _commit), or what it made is past what OpenClaw
    # loads of a startup file (memory.writes.startup_cap_warnings).
    warnings: tuple[str, ...] = key(omit=lambda w: not w.warnings, default=())
    # Set when this is an earlier write's result, replayed.
    replay: Replay | None = key(omit=lambda w: w.replay is None, default=None)
    # The file replaced, where it had other names (its warning says so): a rollback that archives
    # every one of those names holds its warning back.
    split: Split | None = key(hidden=True, default=None)

    JSON_DERIVED: ClassVar = ("replayed",)

    @property
    def replayed(self) -> bool | None:
        return True if self.replay is not None else None


def write_memory_file(settings: Settings, path: str, *, content: str | bytes | None = None, append: str | bytes | None = None,
                      expect: str | None = None, before_swap: Callable[[WriteResult], None] | None = None,
                      replace_unread: bool = False, resolved: ResolvedPath | None = None) -> WriteResult:
    """Replace (``content``) or append to (``append``) a memory file, guarded for ``settings.agent``.

    ``expect``: the version the agent's session last read (or one :func:`read_here` vouches for).
    ``replace_unread``: replace the content though the session read only a window of the file.
    ``resolved``: ``path`` as the caller resolved it already (one resolution: a folder swapped after
    it is caught where the write uses it, PathChanged).

    ``before_swap`` is given the result the write will have, just before the last check of the
    file and the swap (an error it raises stops the write, changing nothing).
    Raises WriteBlocked (exit 3) when the agent's view of the file is out of date,
    PathRefused for anything that is not a memory path (or whose folder was swapped
    while in use), DiskFull when there is no space to write: then nothing was changed.
    """
    content, added = checked_text(content, append)
    if resolved is None:
        resolved = resolve_writable(path, str(settings.workspace), settings.extra_paths, known=logged_in(settings))
    refuse_dream_twin(resolved, str(settings.workspace))
    expected = check_prefix(expect, "expect") if expect is not None else None
    daily_append = added is not None and is_daily_note(resolved.display)
    tries = _APPEND_TRIES if daily_append and expected is None else 1
    store = HistoryStore.for_settings(settings)
    records = ReadRecords.for_settings(store, settings)
    with store.write_lock():
        for _ in range(tries):
            try:
                return translated(store, resolved, "written", lambda: _write_once(
                    store, records, resolved, content, added, expected, daily_append, before_swap, replace_unread,
                    settings.read.max_chars))
            except Raced:
                continue
    raise WriteBlocked.because(f"{resolved.display} changed while it was being written; nothing was written.",
                               path=resolved.display)


def checked_text(content: str | bytes | None, append: str | bytes | None) -> tuple[bytes | None, bytes | None]:
    """The new content and the text to append of a write, as bytes, refused (UsageError) unless exactly
    one is given, an append holds more than line breaks and neither holds a NUL. First of all, before
    anything is made of them (the idempotency key): a write refused is refused whatever came before
    it (after a ``content: ""`` write, a call with neither replayed that write's result)."""
    if (content is None) == (append is None):
        raise UsageError("give exactly one of: text to append, or the new content")
    text = append if append is not None else content
    if isinstance(text, str):  # bytes (--stdin, --replace-file) are written as given
        refuse_not_utf8(text, "append" if append is not None else "replace")
    data = content.encode("utf-8") if isinstance(content, str) else content
    added = append.encode("utf-8") if isinstance(append, str) else append
    if added is not None and not added.strip(b"\r\n"):  # "\r\n" is as empty as "\n" (it wrote a blank line)
        raise UsageError("nothing to append: the text is empty")
    if (nul := (added if added is not None else data or b"").find(b"\0")) >= 0:
        # Written, the file was skipped by the index as binary: all it held gone from search.
        raise NulInText("append" if added is not None else "replace", nul)
    return data, added


def refuse_not_utf8(text: str, mode: str) -> None:
    """UsageError for a text given as a string that UTF-8 cannot hold: a command-line argument that
    was not UTF-8 (its bytes come as surrogate escapes, ``\\udce9``) or a lone surrogate an MCP client
    sent. Written, the bytes went into the note as they were (doctor: not-utf8). ``mode`` is
    ``append`` or ``replace``, as :class:`~..errors.NulInText` names it."""
    if (bad := SURROGATE.search(text)) is None:
        return
    offset = len(text[: bad.start()].encode("utf-8"))
    char = ord(bad.group())
    what = "the text to append" if mode == "append" else "the new content"
    held = f"a byte that is not UTF-8 (0x{char - 0xDC00:02X})" if 0xDC80 <= char <= 0xDCFF else \
        f"a lone surrogate (U+{char:04X}), which UTF-8 cannot hold,"
    raise UsageError(
        f"refused: {what} holds {held} at byte {offset}; a memory file is UTF-8 text (doctor reports one that is not): "
        "nothing was written. Give the text in UTF-8 and write again"
    )


def restore_file_version(settings: Settings, path: str, version: str, *, stored: bool = False,
                         read_only_ok: Callable[[FileMode], bool] | None = None,
                         resolved: ResolvedPath | None = None) -> WriteResult:
    """Put back the bytes of an earlier version (a unique prefix of at least 8 hex characters).

    The version the file holds now is recorded first, so the restore can be undone. ``stored``:
    ``version`` is a whole version the object store holds though the path's history may not list it
    (what a watchdog snapshot kept: a rollback to it). A read-only note is refused
    (ReadOnlyRefused) unless ``read_only_ok`` lets its mode go (a rollback's undo). ``resolved``:
    ``path`` as the caller resolved it (once: a second look could see another folder).
    """
    if resolved is None:
        resolved = resolve_writable(path, str(settings.workspace), settings.extra_paths, known=logged_in(settings))
    check_prefix(version)
    store = HistoryStore.for_settings(settings)
    records = ReadRecords.for_settings(store, settings)
    with store.write_lock():
        try:
            return translated(store, resolved, "restored", lambda: _restore_once(store, records, resolved, version, stored, read_only_ok))
        except Raced:
            raise WriteBlocked.because(f"{resolved.display} changed while it was being restored; nothing was written.",
                                       path=resolved.display, step="history") from None


def refuse_look_alike(resolved: ResolvedPath, folder: Folder | None, done: str) -> None:
    """PathRefused (exit 2) when creating ``resolved`` would make a name that looks like one its folder
    holds: the same under Unicode normalization (NFC), other code points (``café.md`` typed as one
    é, the file's name holding e and a combining accent, as macOS names files). Reading the typed
    name finds nothing, as OpenClaw's ``memory_get`` finds nothing, and a write made a second note
    beside the first that no listing tells apart. The same for the first folder a write would make
    for it (``memory/projéct/`` beside ``memory/projéct/``). ``folder``: the file's folder, open,
    or None when it does not exist yet. Only for a creation: the folder is listed once, and a name
    there that is exactly the one given is the file itself. ``done``: "written", "restored"."""
    if folder is not None:
        _refuse_alike_in(folder.fd, resolved, len(resolved.parts) - 1, done)
        return
    dirs = resolved.parts[:-1]
    for depth in range(len(dirs) - 1, -1, -1):  # the deepest folder there is: the next one would be made
        try:
            above = Folder.under(resolved.root, dirs[:depth])
        except (OSError, ValueError):
            continue
        with above:
            _refuse_alike_in(above.fd, resolved, depth, done)
        return


def refuse_look_alike_at(resolved: ResolvedPath, done: str) -> None:
    """:func:`refuse_look_alike` for a file about to be made at ``resolved`` by a step that has not
    opened its folder (a move's destination, an import's place): nothing when a file is there by
    that very name (it is replaced, not made), or when the way there is no folder (the step's own
    refusal names that)."""
    try:
        folder = resolved.folder()
    except FileNotFoundError:
        refuse_look_alike(resolved, None, done)  # the folders it would make, beside look-alikes
        return
    except (OSError, PathRefused):
        return
    with folder:
        try:
            folder.lstat(resolved.name)
        except FileNotFoundError:
            refuse_look_alike(resolved, folder, done)


def _refuse_alike_in(fd: int, resolved: ResolvedPath, depth: int, done: str) -> None:
    """:func:`refuse_look_alike` for the component ``resolved.parts[depth]``, to be made in the folder open on ``fd``."""
    import unicodedata

    made = resolved.parts[depth]
    wanted = unicodedata.normalize("NFC", made)
    try:
        names = os.listdir(fd)
    except OSError:
        return  # (a folder this user may write but not list: the creation goes on as before)
    alike = sorted(name for name in names if name != made and unicodedata.normalize("NFC", name) == wanted)
    if not alike:
        return
    shown_parts = resolved.display.split("/")
    at = len(shown_parts) - len(resolved.parts) + depth  # the component in the shown path
    head = "/".join(shown_parts[:at]) + "/" if at > 0 else ""
    there, mine = head + alike[0], head + made
    what = "file" if depth == len(resolved.parts) - 1 else "folder"
    form = (" (decomposed: NFD, as macOS names files)" if unicodedata.is_normalized("NFD", alike[0]) and alike[0] != wanted
            else " (composed: NFC)")
    to = "to" if what == "file" else "under"
    # The two print alike: each is also given with its code points past ASCII escaped, to tell them apart.
    raise PathRefused(
        f"refused: {there} ({_escaped(there)}) exists, named as {mine} ({_escaped(mine)}) is but with its letters "
        f"written in other Unicode code points{form}: {resolved.display} would make a second {what} of the same look "
        f"beside it; nothing was {done}. {_ALIKE_WAY.get(done, _ALIKE_WAY['written']).format(what=what, to=to)}"
    )


def _escaped(name: str) -> str:
    return name.encode("ascii", "backslashreplace").decode("ascii")


# What to do instead, by the step refused (its ``done``).
_ALIKE_WAY = {
    "written": "Write {to} the existing {what} by its exact name, as this message gives it",
    "moved": "Move {to} the existing {what} by its exact name, as this message gives it, or rename it first",
    "restored": "Move or remove the existing {what} first (its bytes stay in the history), then restore again",
    "imported": "Rename the {what} here to the archive's spelling first (openclaw-memory mv), then import again: "
                "the archive's note then replaces it with --force, the one here kept in the history",
}


def refuse_dream_twin(resolved: ResolvedPath, workspace: str) -> None:
    """The dream diary is ``DREAMS.md``, or ``dreams.md`` while ``DREAMS.md`` is absent: the scan
    skips the twin and every other letter case (``Dreams.md``, which OpenClaw reads as the diary),
    so a write there made a file nothing lists, indexes or searches."""
    if resolved.root != workspace or resolved.display.lower() != LEGACY_DREAMS or resolved.display == DREAMS:
        return
    if resolved.display != LEGACY_DREAMS:
        raise PathRefused(
            f"refused: {resolved.display} is not the dream diary's name (the scan lists {DREAMS}, or {LEGACY_DREAMS} "
            f"without it, and skips every other letter case); write to {DREAMS}, the dream diary"
        )
    try:
        with resolved.folder() as folder:
            names = set(os.listdir(folder.fd))
    except (OSError, PathRefused):
        return  # the write's own open reports what is wrong with the folder
    diary, _ = resolve_dream_diary(workspace, names)  # the scan's choice: a DREAMS.md that is a link is none
    if diary is not None and diary.name == DREAMS:
        raise PathRefused(
            f"refused: {DREAMS} exists, so {LEGACY_DREAMS} is not memory (the scan skips it as a legacy twin); "
            f"write to {DREAMS}, the dream diary"
        )


def _restore_once(store, records, resolved: ResolvedPath, version: str, stored: bool = False,
                  read_only_ok: Callable[[FileMode], bool] | None = None) -> WriteResult:
    folder, fd, current = open_current(resolved)
    existed: int | None = None  # as in _write_once
    try:
        if current is not None:
            with in_history():
                store.observe(resolved.abs_path, resolved.display, current, fd=fd)
        wanted = version if stored else store.resolve_prefix(resolved.abs_path, resolved.display, version)
        if folder is not None:  # (a rollback killed mid-exchange left its swap file: its finish restores here)
            sweep_leftovers(store, resolved, folder)
        if current is not None and current.version == wanted:
            with in_history():
                records.put(resolved.abs_path, current, WRITE)
            same = WriteResult(resolved.display, resolved.abs_path, RESTORED, wanted, wanted, current.size, False, changed=False)
            return with_nul_warning(same, first_nul(fd) if fd is not None else None)
        blocks = store.objects.blocks(wanted)
        if blocks is None:
            raise MemoryToolError(f"version {short(wanted)} of {resolved.display} is no longer stored: "
                                  f"{not_stored_why(store, resolved.abs_path, wanted)}")
        if current is not None:
            # The restore said that version "can be brought back", and it was gone.
            refuse_unkept(store, resolved, current, "restored")
        elif not stored:  # (a rollback puts back names as they were at its moment: a refusal would stop it half done)
            refuse_look_alike(resolved, folder, "restored")
        # Brought back where none is (a removed note): with the mode and owner the history saw last.
        kept: FileMode | None
        there: FileMode | None = None  # the file at the name, as it is
        if fd is None:
            kept = recorded_mode(store, resolved, wanted)
        else:
            there = kept_stat(fd)
            kept = restored_over(store, resolved, wanted, there) if there is not None else None
        if fd is not None:  # (a removed note comes back with its recorded mode: nothing is replaced)
            refuse_sticky(folder, fd, resolved)
            # The file there as it is: the mode computed for its replacement (narrowed to the version's
            # own) called another user's 0666 note "read-only (mode 644)".
            refuse_read_only(there, resolved.display, "restored", folder, read_only_ok)
            # The version comes back as a new file of this user's, mode narrowed to the version's:
            # another user's writable note became this user's 0644, its owner locked out of it. A
            # rollback's step too (read_only_ok): it leaves that note, named (rollback.apply).
            refuse_taking_over(there, folder, resolved.display, "a restore", "restored", kept.mode if kept else None)
            os.close(fd)
            fd = None
        if folder is None:  # (a removed private note's folder removed too: made as private as the note)
            folder, existed = make_folder(resolved, kept)
        damaged = MemoryToolError(f"the stored copy of version {short(wanted)} is damaged; {resolved.display} was not changed")
        try:
            tmp, new, _ = temp_from_blocks(folder, resolved, blocks, kept)
        except zlib.error:
            raise damaged from None
        if new.version != wanted:
            unlink_quietly(tmp, dir_fd=folder.fd)
            raise damaged
        nul = nul_in_temp(folder, tmp)
        return with_nul_warning(_commit(store, records, resolved, folder, current, tmp, new, RESTORED, there), nul)
    except BaseException:
        if existed is not None:
            remove_made_folders(resolved, existed)
        raise
    finally:
        if fd is not None:
            os.close(fd)
        if folder is not None:
            folder.close()


def restored_over(store: HistoryStore, resolved: ResolvedPath, wanted: str, over: KeptMode) -> KeptMode:
    """The mode and owner version ``wanted`` comes back with over the file at the name (``over``: its
    stat): that file's, but giving its group and others no access the version's own file did not.
    Over another file at the name (one moved there: `mv --force q p`, then a rollback to before it;
    one made there after the note's removal or move away): p's private text came back at q's 0644, a
    removed 0600 note's at the new note's 0644. Never wider than the file there: "another file" is
    also the note's own brought back (restore --last) or moved, which its owner may have made private
    since. (Over the note's own file, its mode as the user set it; an ACL there kept whole: its mask
    is the group bits.) A rollback to a watchdog snapshot narrows them to the bits the snapshot saw
    too (:func:`~.placing.snapshot_bits`): a note the history never logged, deleted by hand, its
    name then taken by a new 0644 file, came back at that file's 0644 from a snapshot of it at 0600."""
    if store.log.held_here_since(resolved.abs_path, wanted):
        # The note's own file: its mode as its user set it (made 0644 after a snapshot to share it,
        # it stays so). A note deleted by hand and a new file made at its name read so too: out of reach.
        return over
    snapped = snapshot_bits(resolved)
    own = store.log.mode_of(resolved.abs_path, resolved.display, wanted)
    bits = own.mode if own is not None else snapped
    if bits is None or any(name == ACL_ACCESS for name, _ in over.xattrs or ()):
        return over
    if snapped is not None:
        bits &= snapped
    return over._replace(mode=over.mode & ~0o077 | over.mode & bits & 0o077)


def refuse_sticky(folder: Folder | None, fd: int | None, resolved: ResolvedPath) -> None:
    """StickyRefused where the file open on ``fd`` is another user's in a sticky folder (mode 1777),
    which only its owner may replace (:func:`~..fsutil.move.sticky_keeper`): asked before anything is
    written, as mv and rm ask it. The replacing rename failed at the end, "cannot write in the
    workspace (...): Operation not permitted" of a folder anyone may write in."""
    if folder is not None and fd is not None:
        check_may_lose_name(folder.fd, resolved.name, os.fstat(fd))


def first_nul(fd: int) -> int | None:
    """Byte offset of the first NUL in an open file (None: none, or it could not be read)."""
    try:
        return text_faults_of(fd)[1]
    except OSError:
        return None


def nul_in_temp(folder: Folder, tmp: str) -> int | None:
    """Byte offset of the first NUL in the temp file about to be swapped in: the restored bytes."""
    try:
        fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0), dir_fd=folder.fd)
    except OSError:
        return None
    try:
        return first_nul(fd)
    finally:
        os.close(fd)


def with_nul_warning(result: WriteResult, nul: int | None) -> WriteResult:
    """A restore puts back exactly the bytes stored, a NUL among them (a write refuses one: NulInText),
    but says so: the index skips a file holding a NUL as binary, so the whole note is out of search.
    ``nul``: the byte offset of the restored bytes' first NUL (None: none)."""
    if nul is None:
        return result
    return replace(result, warnings=(
        f"{result.path}: the restored version holds a NUL byte at offset {nul}, so the search index leaves the whole "
        "file out (as `openclaw-memory doctor` reports: memory-file-not-text) until the NUL is removed",
        *result.warnings,
    ))


def refuse_unkept(store: HistoryStore, resolved: ResolvedPath, current: FileVersion, outcome: str) -> None:
    """Refuse to replace what ``current`` holds when no history would keep it (one version may take an
    eighth of ``[history] max_bytes``): its bytes would be gone for good, as `rm`, `mv --force` and
    `rollback` refuse too. A write with --replace-unread replaced a 35 MB note so, right after the
    refusal before it had said "the history keeps every version"."""
    if not store.objects.fits(current.size):
        raise MemoryToolError(
            f"{resolved.display} cannot be kept in the history before it is replaced ({current.size} bytes; one file "
            f"may take at most [history] max_bytes / 8, {store.objects.max_bytes // 8} bytes): nothing was {outcome}; "
            "append to it, split it, or raise [history] max_bytes"
        )


def _write_once(store, records, resolved: ResolvedPath, content, added, expected, daily_append,
                before_swap: Callable[[WriteResult], None] | None = None, replace_unread: bool = False,
                budget: int | None = None) -> WriteResult:
    latest_before = store.log.latest(resolved.abs_path)
    folder, fd, current = open_current(resolved)
    existed: int | None = None  # how many of the file's folders there were, when this write made the rest
    try:
        if current is None:
            refuse_new_not_utf8(resolved, "nothing was written")
            refuse_look_alike(resolved, folder, "written")
        if current is not None:
            if added is None:  # (an append keeps every byte the file holds)
                refuse_unkept(store, resolved, current, "written")
            # The version about to be replaced goes into the history first.
            with in_history():
                store.observe(resolved.abs_path, resolved.display, current, fd=fd)
        check_write(store, resolved, current, records, expected, daily_append, latest_before, fd,
                    replacing=added is None and not replace_unread, budget=budget)
        kept = kept_stat(fd)
        refuse_sticky(folder, fd, resolved)
        refuse_read_only(kept, resolved.display, "written", folder)
        if added is None and current is not None and hash_bytes(content) == current.version:
            # The bytes it holds already: nothing is written (the file kept its inode, a hard link
            # and an editor's watch see no change) and no version logged; it was replaced by a copy
            # of itself and an agent-write of a version already there was logged (review).
            with in_history():
                records.put(resolved.abs_path, current, WRITE)
            return WriteResult(resolved.display, resolved.abs_path, REPLACE, current.version, current.version,
                               current.size, False, changed=False)
        refuse_taking_over(kept, folder, resolved.display, "a write", "written")  # (a new file of this user's, the note's mode)
        if folder is None:
            folder, existed = make_folder(resolved)
        sweep_leftovers(store, resolved, folder)
        if added is None:
            tmp, new, _ = temp_from_blocks(folder, resolved, [content], kept)
        else:
            copied = pread_blocks(fd) if fd is not None else iter(())
            tail = appended(fd, current, added)
            tmp, new, prefix = temp_from_blocks(folder, resolved, copied, kept, tail)
            if current is not None and prefix != current.version:
                unlink_quietly(tmp, dir_fd=folder.fd)
                raise Raced()
        return _commit(store, records, resolved, folder, current, tmp, new, APPEND if added is not None else REPLACE,
                       kept, before_swap, None if added is None else seen_after_append(records, resolved, current, fd))
    except BaseException:
        if existed is not None:
            remove_made_folders(resolved, existed)
        raise
    finally:
        if fd is not None:
            os.close(fd)
        if folder is not None:
            folder.close()


def _commit(store: HistoryStore, records: ReadRecords, resolved: ResolvedPath, folder: Folder,
            current: FileVersion | None, tmp: str, new: FileVersion, action: WriteAction, copied: FileMode | None,
            before_swap: Callable[[WriteResult], None] | None = None, seen: Window = None) -> WriteResult:
    """Store the new version, re-check the target, swap the temp file in, then log the new version.

    Every commit that can come before the check does (the new version's bytes, ``before_swap``'s
    idempotency key), so a disk-full state dir stops the write with the file unchanged, and nothing
    but a hash separates the check from the swap. The swap keeps what it displaces (:mod:`.swap`):
    a save that landed after the check is recorded in the history and put back, and the write is
    raced (tried again on the new version, or blocked); so is a ``chmod`` made since ``copied`` (the
    file's mode and owner as the temp file got them), which the new file would undo. The agent-write
    entry is logged only once the new version is in place, so the history never lists a version the
    file never held.
    """
    target = resolved.abs_path
    result = WriteResult(
        resolved.display, target, action, new.version,
        current.version if current else None, new.size, created=current is None,
        changed=current is None or current.version != new.version,
    )
    swap: Swap | None = None
    swapped: bool | None = None
    recorded: set[str] = set()  # the versions displaced by the swap that the history holds now
    try:
        made = FileMode.of(folder.lstat(tmp))  # logged with the version: what a removal's restore gives back
        if store.objects.fits(new.size) and not store.objects.touch(new.version):  # a restore's are stored already
            fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0), dir_fd=folder.fd)
            try:
                with in_history():
                    store.objects.put_fd(fd, new.version)
            finally:
                os.close(fd)
        if before_swap is not None:
            before_swap(result)
        if current is None:
            create_new(folder, tmp, resolved.name)
        else:
            # From here on the temp file may hold a displaced version: named apart from a bare temp file.
            tmp = swap_name(folder, tmp)
            assert copied is not None  # (a file replaced: the temp file's mode and owner are its own)
            swap = Swap(folder, tmp, resolved.name, copied)
            if not swap.lease_target():
                raise held_open(resolved)
            if current_version(folder, resolved.name) != current.version:
                raise Raced()
            faults.reach("write:checked")
            swapped = swap.exchange(current.version)
            if swapped and swap.opened_for_writing():  # a writer opened it since the lease: it keeps its file
                swap.put_back()
                swapped = False
                raise held_open(resolved)
            if swapped is None:  # this file system cannot exchange: the check and a rename, nothing between
                swap.rename()
            elif not swapped:
                with in_history(), store.lock():  # every version displaced, before any is removed
                    for taken in swap.taken:
                        store.observe(target, resolved.display, taken.version, fd=taken.fd)
                recorded = {taken.version.version for taken in swap.taken}
                raise Raced()
    except BaseException:
        if swap is None:
            unlink_quietly(tmp, dir_fd=folder.fd)
        else:  # the new file, or a displaced version the history holds; anything else stays for the sweep
            swap.remove_leftover(recorded)
            swap.close()
        raise
    notes = []
    try:
        with in_history(), store.lock():
            store.record(target, resolved.display, new.version, new.size,
                         RESTORE if action == RESTORED else AGENT_WRITE, records.agent, records.session, made)
    except (HistoryFailed, MemoryToolError) as exc:
        if swap is not None and swapped:  # undone: the history and the file agree that nothing was written
            try:
                swap.put_back()
            finally:
                swap.remove_leftover({current.version} if current else set())
                swap.close()
            raise
        # A rename or a creation cannot be undone without a window of its own: the write stands, and
        # the history lists this version as an edit once it sees it.
        why = exc.error.strerror if isinstance(exc, HistoryFailed) else exc.message
        notes.append(f"{resolved.display} was {'restored' if action == RESTORED else 'written'}, but the history "
                     f"could not record this version ({why}): it is listed as an outside edit once seen")
    if swap is not None:
        swap.remove_leftover({current.version} if current else set())
        swap.close()
        if swap.split is not None:  # never written in place: the other names of a hard-linked note keep the old text
            notes.append(swap.split.note(resolved.display, "restore" if action == RESTORED else "write"))
    try:
        folder.fsync()
    except OSError as exc:
        notes.append(f"the folder of {resolved.display} could not be synced to disk ({exc.strerror or exc})")
    try:
        records.put(target, new, WRITE, seen)
    except (OSError, MemoryToolError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        notes.append(
            f"{resolved.display} was {'restored' if action == RESTORED else 'written'}, but agent "
            f"'{records.agent}''s record of it could not be saved ({why}): read it before the next write"
        )
    return replace(result, warnings=tuple(notes), split=swap.split if swap else None) if notes else result
