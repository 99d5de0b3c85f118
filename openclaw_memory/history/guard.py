"""The guarded write and the restore: compare-and-swap on the version the agent last read.

Under the history lock: hash the file as it is, record that version in the history
(so what is about to be replaced can always be restored), check the guard rules,
write the new bytes to a temp file beside the target and fsync it, store the new
version, hash the target once more, and only if it still holds the version checked
``os.replace`` the temp file over it and fsync the folder. A new file is created
with ``link``, which fails if anything appeared at that name meanwhile.

What remains is the window between the last hash and the replace (microseconds):
an outside editor that saves exactly then is overwritten; its version is in the
history only if ``watch`` or a verify (``state``, ``history``) saw it first.
"""

from __future__ import annotations

import errno
import os
import zlib
from dataclasses import dataclass
from collections.abc import Iterable, Iterator

import xxhash

from ..errors import MemoryToolError, PathRefused, UsageError, WriteBlocked
from ..files.paths import is_daily_note
from ..files.read import ResolvedPath, resolve_memory_path
from ..fsutil.atomic import fsync_dir, write_temp_beside
from ..fsutil.safeopen import NotRegularFile, open_regular_nofollow
from .states import WRITE, ReadRecords, Seen
from .store import HistoryStore, FileVersion, check_prefix, snapshot_fd
from .versions import AGENT_WRITE, RESTORE, Entry, short

APPEND = "append"
REPLACE = "replace"
RESTORED = "restore"
# A daily-note append that loses a race to another append is simply tried again.
_APPEND_TRIES = 5


@dataclass(frozen=True)
class WriteResult:
    path: str
    abs_path: str
    action: str  # append | replace | restore
    version: str
    previous: str | None  # the version replaced; None when the file was created
    size: int
    created: bool
    changed: bool = True  # False when a restore found the file already at that version
    index: dict | None = None  # what the index update after the write did (set by the API)

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "action": self.action,
            "version": self.version,
            "previousVersion": self.previous,
            "size": self.size,
            "created": self.created,
            "changed": self.changed,
            "index": self.index,
        }


class _Raced(Exception):
    """The target changed between the check and the replace."""


def write_memory_file(settings, path: str, *, content: bytes | None = None, append: str | bytes | None = None,
                      expect: str | None = None) -> WriteResult:
    """Replace (``content``) or append to (``append``) a memory file, guarded for ``settings.agent``.

    Raises WriteBlocked (exit 3) when the agent's view of the file is out of date,
    PathRefused for anything that is not a memory path.
    """
    if (content is None) == (append is None):
        raise UsageError("give exactly one of: text to append, or the new content")
    resolved = resolve_memory_path(path, str(settings.workspace), settings.extra_paths)
    expected = check_prefix(expect) if expect is not None else None
    # surrogateescape gives back the exact bytes of a command-line argument that was not UTF-8.
    added = append.encode("utf-8", "surrogateescape") if isinstance(append, str) else append
    if added is not None and not added.strip(b"\n"):
        raise UsageError("nothing to append: the text is empty")
    daily_append = added is not None and is_daily_note(resolved.display)
    tries = _APPEND_TRIES if daily_append and expected is None else 1
    store = HistoryStore.for_settings(settings)
    records = ReadRecords.for_settings(store, settings)
    with store.lock():
        for _ in range(tries):
            try:
                return _write_once(store, records, resolved, content, added, expected, daily_append)
            except _Raced:
                continue
    raise WriteBlocked(
        f"blocked: {resolved.display} changed while it was being written; nothing was written. "
        + _read_again(resolved.display)
    )


def restore_file_version(settings, path: str, version: str) -> WriteResult:
    """Put back the bytes of an earlier version (a unique prefix of at least 8 hex characters).

    The version the file holds now is recorded first, so the restore can be undone.
    """
    resolved = resolve_memory_path(path, str(settings.workspace), settings.extra_paths)
    check_prefix(version)
    store = HistoryStore.for_settings(settings)
    records = ReadRecords.for_settings(store, settings)
    with store.lock():
        fd, current = _open_current(resolved)
        try:
            if current is not None:
                store.observe(resolved.abs_path, resolved.display, current, fd=fd)
            wanted = store.resolve_prefix(resolved.abs_path, resolved.display, version)
            if current is not None and current.version == wanted:
                records.put(resolved.abs_path, current, WRITE)
                return WriteResult(resolved.display, resolved.abs_path, RESTORED, wanted, wanted, current.size, False, changed=False)
            blocks = store.objects.blocks(wanted)
            if blocks is None:
                raise MemoryToolError(
                    f"version {short(wanted)} of {resolved.display} is no longer stored "
                    "(evicted from the version store to stay within [history] max_bytes)"
                )
            mode = os.fstat(fd).st_mode & 0o7777 if fd is not None else 0o644
        finally:
            if fd is not None:
                os.close(fd)
        damaged = MemoryToolError(f"the stored copy of version {short(wanted)} is damaged; {resolved.display} was not changed")
        try:
            tmp, new, _ = _temp_from_blocks(resolved.abs_path, blocks, mode)
        except zlib.error:
            raise damaged from None
        if new.version != wanted:
            os.unlink(tmp)
            raise damaged
        try:
            return _commit(store, records, resolved, current, tmp, new, RESTORED)
        except _Raced:
            raise WriteBlocked(
                f"blocked: {resolved.display} changed while it was being restored; nothing was written. "
                "Check `openclaw-memory history` and try again."
            ) from None


def _write_once(store, records, resolved: ResolvedPath, content, added, expected, daily_append) -> WriteResult:
    latest_before = store.log.latest(resolved.abs_path)
    fd, current = _open_current(resolved)
    try:
        if current is not None:
            # The version about to be replaced goes into the history first.
            store.observe(resolved.abs_path, resolved.display, current, fd=fd)
        seen = records.get(resolved.abs_path)
        _check(store, resolved, current, seen, expected, daily_append, latest_before, records.agent, fd)
        mode = os.fstat(fd).st_mode & 0o7777 if fd is not None else 0o644
        if added is None:
            tmp, new, _ = _temp_from_blocks(resolved.abs_path, [content], mode)
        else:
            copied = _pread_blocks(fd) if fd is not None else iter(())
            tail = _separator(fd, current) + added + (b"" if added.endswith(b"\n") else b"\n")
            tmp, new, prefix = _temp_from_blocks(resolved.abs_path, copied, mode, tail)
            if current is not None and prefix != current.version:
                os.unlink(tmp)
                raise _Raced()
    finally:
        if fd is not None:
            os.close(fd)
    return _commit(store, records, resolved, current, tmp, new, APPEND if added is not None else REPLACE)


def _check(store, resolved, current: FileVersion | None, seen: Seen | None, expected: str | None, daily_append: bool,
           latest_before: Entry | None, agent: str, fd: int | None) -> None:
    shown = resolved.display
    if expected is not None:
        if current is None:
            raise WriteBlocked(f"blocked: {shown} does not exist, so it is not at version {expected}. {_read_again(shown)}")
        if not current.version.startswith(expected):
            raise WriteBlocked(
                f"blocked: {shown} is at version {short(current.version)}, not {expected}: it changed. {_read_again(shown)}"
            )
        # The prefix matches what is there now; make sure it names nothing else in the history.
        store.resolve_prefix(resolved.abs_path, shown, expected, also=(current.version,))
        return
    if current is None:
        if seen is not None:
            raise WriteBlocked(
                f"blocked: {shown} was deleted since agent '{agent}' read it. {_read_again(shown)}"
            )
        return
    if daily_append:
        base = seen if seen is not None else latest_before
        if base is None:
            raise WriteBlocked(f"blocked: agent '{agent}' has not read {shown}; read it first (openclaw-memory read {shown}), then append.")
        if not _has_prefix(fd, current, base.version, base.size):
            raise WriteBlocked(
                f"blocked: {shown} shrank or was rewritten since agent '{agent}' last saw it "
                f"(version {short(base.version)} is no longer the start of the file). {_read_again(shown)}"
            )
        return
    if seen is None:
        raise WriteBlocked(
            f"blocked: {shown} exists and agent '{agent}' has not read it; read it first "
            f"(openclaw-memory read {shown}), then write, or pass --expect VERSION."
        )
    if seen.version != current.version:
        raise WriteBlocked(
            f"blocked: {shown} changed since agent '{agent}' last read it "
            f"(read {short(seen.version)}, now {short(current.version)}). {_read_again(shown)}"
        )


def _read_again(shown: str) -> str:
    return f"Read it again (openclaw-memory read {shown}, or read --diff {shown}) and redo the change on the new version."


def _has_prefix(fd: int, current: FileVersion, version: str, size: int) -> bool:
    if size > current.size:
        return False
    digest = xxhash.xxh3_128()
    offset = 0
    while offset < size:
        block = os.pread(fd, min(1 << 20, size - offset), offset)
        if not block:
            return False
        digest.update(block)
        offset += len(block)
    return digest.hexdigest() == version


def _separator(fd: int | None, current: FileVersion | None) -> bytes:
    """A newline first when the file does not end with one, so the text starts its own line."""
    if fd is None or current is None or current.size == 0:
        return b""
    return b"" if os.pread(fd, 1, current.size - 1) == b"\n" else b"\n"


def _open_current(resolved: ResolvedPath) -> tuple[int | None, FileVersion | None]:
    try:
        fd, _ = open_regular_nofollow(resolved.abs_path)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except NotRegularFile as exc:
        raise PathRefused(f"refused: {resolved.display}: {exc.strerror}") from None
    except PermissionError:
        raise PathRefused(f"cannot read {resolved.display}: permission denied") from None
    try:
        return fd, snapshot_fd(fd)
    except BaseException:
        os.close(fd)
        raise


def _pread_blocks(fd: int) -> Iterator[bytes]:
    offset = 0
    while block := os.pread(fd, 1 << 20, offset):
        offset += len(block)
        yield block


def _temp_from_blocks(target: str, blocks: Iterable[bytes], mode: int, tail: bytes = b"") -> tuple[str, FileVersion, str]:
    """Write ``blocks`` then ``tail`` to a fsynced temp file beside ``target``.

    Returns the temp name, the new content's snapshot, and the hash of the ``blocks``
    part alone (for an append: the bytes copied from the current file).
    """
    os.makedirs(os.path.dirname(target), exist_ok=True)
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

    tmp = write_temp_beside(target, hashed(), mode)
    return tmp, FileVersion(whole.hexdigest(), size), head.hexdigest()


def _current_version(abs_path: str) -> str | None:
    """The target's version just before the swap (a non-regular file counts as a change)."""
    try:
        fd, _ = open_regular_nofollow(abs_path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return "not-a-regular-file"
    try:
        return snapshot_fd(fd).version
    finally:
        os.close(fd)


def _create(tmp: str, target: str) -> None:
    """Move the temp file to ``target`` only if nothing is there: ``link`` fails on an existing name."""
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise _Raced() from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        # No hard links on this file system (some FUSE/SMB mounts): the checked replace it is.
        os.replace(tmp, target)
        return
    os.unlink(tmp)


def _commit(store: HistoryStore, records: ReadRecords, resolved: ResolvedPath, current: FileVersion | None,
            tmp: str, new: FileVersion, action: str) -> WriteResult:
    """Store the new version, re-check the target, swap the temp file in, record it."""
    target = resolved.abs_path
    try:
        if store.objects.fits(new.size) and not store.objects.touch(new.version):  # a restore's are stored already
            fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            try:
                store.objects.put_fd(fd, new.version)
            finally:
                os.close(fd)
        if _current_version(target) != (current.version if current else None):
            raise _Raced()
        if current is None:
            _create(tmp, target)
        else:
            os.replace(tmp, target)
        fsync_dir(os.path.dirname(target))
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    origin = RESTORE if action == RESTORED else AGENT_WRITE
    store.record(target, resolved.display, new.version, new.size, origin, records.agent)
    records.put(target, new, WRITE)
    return WriteResult(
        resolved.display, target, action, new.version,
        current.version if current else None, new.size, created=current is None,
    )

