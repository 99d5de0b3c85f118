"""``openclaw-memory write``: a guarded, atomic write of one memory file."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import UsageError, shell_word
from ...memory import open_memory
from ...signals import cancellable_until_committed, interrupt_held
from ..output import CLOSED_STREAMS, given_path, printable, reported, say, warn

if TYPE_CHECKING:
    from ...history.guard import WriteResult
    from ...settings import Settings

VERBS = {"append": "appended to", "replace": "wrote"}


MAX_CONTENT = 256 * 1024 * 1024  # what the service takes in one request; a memory file is far smaller


def _new_content(path: str, replace_file: str | None, stdin: bool) -> bytes | None:
    if stdin:
        if "stdin" in CLOSED_STREAMS:  # not an empty input: none at all (`<&-`), which would empty the file
            raise UsageError("--stdin: standard input is closed, so there is no content to write; nothing was written "
                             "(pipe the new content in, or give --replace-file FILE)")
        if _a_device_not_a_terminal():  # `</dev/null` emptied the file as if an empty text was piped in
            raise UsageError("--stdin: standard input is a device (the null device?), not content; nothing was written "
                             "(pipe the new content in, or give --replace-file with an empty file to empty it)")
        if sys.stdin.isatty():  # typed by hand, or a pipe forgotten: either way, say what it waits for
            say(f"reading the new content of {printable(path)} from the terminal: end it with Ctrl-D on a line "
                             "of its own (Ctrl-C: nothing is written)\n")
        return _bounded(sys.stdin.buffer, "--stdin")
    if replace_file is None:
        return None
    try:
        # Non-blocking, and only a regular file: a FIFO or a device (/dev/zero) must not hang or fill memory.
        fd = os.open(replace_file, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise UsageError(f"--replace-file {replace_file} is not a regular file (a FIFO, device or folder); "
                                 "use --stdin to pipe content")
            os.set_blocking(fd, True)
            return _bounded(fh, f"--replace-file {replace_file}")
    except OSError as exc:
        raise UsageError(f"cannot read --replace-file {replace_file}: {exc.strerror or exc}") from None


def _a_device_not_a_terminal() -> bool:
    """Whether standard input is a character or block device other than a terminal: no one gives a
    note's content so (a pipe, even an empty one, and a file are content given)."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError):  # a stream with no descriptor (a library's): content given
        return False
    return (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) and not sys.stdin.isatty()


def _bounded(fh, what: str) -> bytes:
    data = fh.read(MAX_CONTENT + 1)
    if len(data) > MAX_CONTENT:
        raise UsageError(f"{what}: the new content is larger than {MAX_CONTENT // (1024 * 1024)} MiB; nothing was written")
    return data


def _progress_past_one_file(stack):
    """Progress of the index update after the write, shown when it covers more than the file written
    (other files of the agent changed too: no watch or service kept the index up to date)."""
    from ..progress import said_then_shown

    return said_then_shown(stack, lambda p: None if p.files_total <= 1 else (
        f"the write is done; bringing the agent's index up to date ({p.files_total} changed files; "
        "Ctrl-C stops this, not the write)"))


def _stops_at(report: Callable[[Any], None]) -> Callable[[Any], None]:
    def step(p) -> None:
        if interrupt_held():
            from ...signals import Interrupted

            raise Interrupted()
        report(p)

    return step


def run_write(settings: Settings, path: str, append: str | None, replace_file: str | None, stdin: bool,
              expect: str | None, update_index: bool, json_out: bool, idempotency_key: str | None = None,
              replace_unread: bool = False) -> int:
    if sum((append is not None, replace_file is not None, stdin)) != 1:
        raise UsageError("give exactly one of --append TEXT, --replace-file FILE or --stdin")
    # Said as the other commands say them: both were "cannot read --replace-file -: No such file or
    # directory", as if a file had been looked for and was missing.
    if replace_file is not None and not replace_file.strip():  # (`--replace-file "$NEW"`, NEW unset)
        raise UsageError("the file name given with --replace-file is empty; give one (an empty value does not empty the "
                         "note: give an empty file for that)")
    if replace_file == "-":  # a shell's "standard input", as export and import refuse it
        raise UsageError("--replace-file reads a file, not standard input: pipe the content in with --stdin "
                         "(./- for a file named -)")
    if replace_file is not None:  # a quoted ~ expanded as -w, --state-dir and --extra expand theirs
        from ...settings._places import tilde

        replace_file = tilde(replace_file, os.environ)
    content = _new_content(path, replace_file, stdin)
    # A Ctrl-C cancels the write until its new version goes in place; after that it is held back until
    # the write is said (it was "interrupted", exit 130, of a write that was made), and stops the index
    # update after it. Through the service, the answer is waited for and said.
    with cancellable_until_committed():
        with contextlib.ExitStack() as stack:
            memory = stack.enter_context(contextlib.closing(open_memory(settings, notice=warn, shard_idle_s=0)))
            stack.enter_context(given_path(settings.workspace, path))
            result = memory.write(path, content=content, append=append, expect=expect, update_index=update_index,
                                  idempotency_key=idempotency_key, replace_unread=replace_unread,
                                  progress=_stops_at(_progress_past_one_file(stack)))
        return _said(settings, path, result, json_out, idempotency_key)


def _said(settings: Settings, path: str, result: WriteResult, json_out: bool, idempotency_key: str | None) -> int:
    if result.replay is not None:
        warn(_replay_hint(settings, path, result.action, idempotency_key))
    if result.index is not None and result.index.failed:
        warn(result.index.reason or "the index was not updated")
    if reported(result, json_out):
        return 0
    if result.replay is not None:  # nothing was written now: never "appended to"
        done = "appended to" if result.action == "append" else "written to"
        print(f"replayed: nothing {done} {printable(result.path)} now; an earlier write with the same idempotency key "
              f"made version {result.version[:12]} ({result.size} bytes), which the file still holds")
        return 0
    if not result.changed and not result.created:  # never "appended to" where nothing was (the file held it: its warning says why)
        done = "appended to" if result.action == "append" else "written to"
        print(f"unchanged: nothing {done} {printable(result.path)}; it already holds this "
              f"{'text' if result.action == 'append' else 'content'}: version {result.version[:12]} ({result.size} bytes)")
        return 0
    verb = "created" if result.created else VERBS[result.action]
    print(f"{verb} {printable(result.path)}: version {result.version[:12]} ({result.size} bytes)")
    return 0


def _replay_hint(settings: Settings, path: str, action: str, idempotency_key: str | None) -> str:
    """Why a write was taken as a retry, and how to make it again on purpose."""
    from ...settings import command_line

    if idempotency_key is not None:
        return ("already written by an earlier write with the same idempotency key: taken as a retry, nothing written "
                "again (another write takes its own --idempotency-key)")
    again = "append the same text" if action == "append" else "write the same content"
    return ("already written by an earlier write with the same idempotency key, and this session has not read or written "
            f"the file since: taken as a retry, nothing written again; to {again} again on purpose, read the file first "
            f"({command_line(settings)} read {shell_word(path)}) or give the write its own --idempotency-key")
