"""Typed exceptions whose messages are written for the user.

Every error the product raises on purpose derives from :class:`MemoryToolError`
and carries the exit status the CLI maps it to, so the mapping lives in one place.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource  # (imported when a descriptor is at hand: it is a shared object to open)
import shlex
from collections.abc import Iterator
from typing import TypeGuard


def cut(text: str, limit: int = 80) -> str:
    """``text`` as an error message quotes it: cut short (an agent's 10 MB path is not sent back whole)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


# In a repr, the escape of a byte that is not UTF-8 (``\udcff``, a surrogate escape), not of a backslash.
_BYTE_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\udc([89a-f][0-9a-f])")


SURROGATE = re.compile("[\ud800-\udfff]")  # a byte escaped (surrogateescape) or a lone surrogate
# What a terminal would act on: control characters but tab and line ends (ESC sequences, bells; the C1
# controls: U+009B is CSI), and the bidi overrides and isolates, which reorder what it shows
# (U+202E showed `memory/x\u202edm.txt.md` as `memory/xtxt.md`).
_CONTROLS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
_BIDI = "\u202a-\u202e\u2066-\u2069"
ESCAPED_IN = {
    "name": re.compile(f"[{_CONTROLS}\t\n\r{_BIDI}]"),  # a path is one line
    "message": re.compile(f"[{_CONTROLS}{_BIDI}]"),  # an error or a warning quoting names
    "text": re.compile(f"[{_CONTROLS}]"),  # a note's text: its right-to-left script is shown as written
}


def escaped(match: re.Match) -> str:
    """A character as ``\\xNN`` (ASCII) or ``\\uNNNN`` (a C1 control: ``\\x80`` shows a byte that is not UTF-8)."""
    return f"\\x{ord(match.group()):02x}" if match.group() < "\x80" else f"\\u{ord(match.group()):04x}"


def bytes_shown(text: str) -> str:
    """``text`` with the bytes of a name that is not UTF-8 (surrogate escapes) shown as ``\\xNN``, as
    every listing shows that name (a stream would print ``\\udce9``, or the raw byte; a UTF-8 reader
    of a tool's answer fails on it); a lone surrogate that stands for no byte (from JSON) as its code."""
    if not SURROGATE.search(text):
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def printable(path: str) -> str:
    """A path safe to print, one line: bytes that are not UTF-8 and control characters (a newline
    in a file name, which split a warning in two) become ``\\xNN``."""
    return ESCAPED_IN["name"].sub(escaped, bytes_shown(path))


def shell_word(path: str) -> str:
    """``path`` as one word a shell gives back whole: quoted as :mod:`shlex` quotes where it prints as
    it is, else bash's ``$'...'`` whose ``\\xNN`` are :func:`printable`'s (a name holding a newline or a
    byte that is not UTF-8: the quoted ``'memory/a\\x0ab.md'`` named another file, refused)."""
    if printable(path) == path:
        return shlex.quote(path)
    word = ESCAPED_IN["name"].sub(escaped, path.replace("\\", "\\\\").replace("'", "\\'"))
    return "$'" + SURROGATE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", word) + "'"


def one_line(message: str) -> str:
    """A message (an error, a warning, a finding) safe to print, on one line: its control characters
    and the bidi controls of the names it quotes as ``\\xNN``/``\\uNNNN``, a line end too (a name's
    newline split it in two)."""
    return ESCAPED_IN["message"].sub(escaped, bytes_shown(message)).replace("\n", "\\x0a").replace("\r", "\\x0d")


def shown(value: object, limit: int = 80) -> str:
    """A value as an error message quotes it: its repr, a byte that is not UTF-8 as ``\\xNN`` (as every
    listing shows a name), cut short (a 100,000-character key is not echoed)."""
    return cut(_BYTE_ESCAPE.sub(r"\1\\x\2", repr(value)), limit)


# A command a message bids the user run: the program's name opening a quote (`openclaw-memory index`,
# "openclaw-memory doctor --fix", (openclaw-memory read PATH), (`openclaw-memory serve --stop`)) where
# a sentence puts one (at the start, after a space, a colon or a parenthesis), its command word next. A name that already has its flags
# (`openclaw-memory -w WS index`) is not matched again; nor is a file or folder named like one
# (memory/(openclaw-memory notes).md: its opener follows a slash).
_NAMED_COMMAND = re.compile(r'(?:(?<=^[`"(])|(?<=[\s:;,][`"(])|(?<=[\s:;,]\([`"]))openclaw-memory(?= [a-z])')


def suggested(text: str, program: str) -> str:
    """``text`` with each command it names run as ``program``: ``openclaw-memory`` and the settings
    flags in force (``settings.command_line``), so that, run as printed, it acts on the same workspace,
    agent and session as the command that printed it. The one rule of every front-end's hints."""
    if program == PROGRAM:
        return text
    # What names ``program`` is worded already (an error passes two front-end layers; a finished
    # rollback's `To undo:` is worded where it is made) and kept as it is: a workspace named like a
    # hint is in it. The rest is worded still: a doctor report with that undo in it was kept whole, and
    # a removal's `restore --last` beside it named no workspace.
    return program.join(_NAMED_COMMAND.sub(lambda _: program, piece) for piece in text.split(program))


class MemoryToolError(Exception):
    """Base class: a failure the user can act on; never shown as a traceback."""

    exit_code = 1

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def fields(self) -> dict[str, str]:
        """The error's data beyond its message (sent by the service with it)."""
        return {}

    def worded_for_tools(self) -> str:
        """The message for an agent calling the MCP tools (the command line's, unless a subclass knows better)."""
        return self.message

    def suggesting(self, program: str) -> None:
        """Name ``program`` (``openclaw-memory`` and the settings flags the command was given, from
        ``settings.command_line``) in each command this error bids the user run: run, it acts on the
        same workspace, agent and session (a front-end words what a layer below raised)."""
        self.message = suggested(self.message, program)
        self.args = (self.message,)

    def after_finishing(self, finished: str) -> None:
        """Say what the same command finished before this error stopped it (an interrupted rollback,
        move, removal or import, which changed files): its "nothing was ..." is this command's alone."""
        self.message = f"{self.message}; before that: {finished}"
        self.args = (self.message,)


@contextlib.contextmanager
def finished_first(*finished: str | None) -> Iterator[None]:
    """Around what a command does after finishing an interrupted operation (``finished``: what each
    finish said, None where there was none): an error it raises says that too (:meth:`after_finishing`)."""
    try:
        yield
    except MemoryToolError as exc:
        said = "; ".join(f for f in finished if f)
        if said:
            exc.after_finishing(said)
        raise


class UsageError(MemoryToolError):
    """Bad flags, arguments or settings."""

    exit_code = 2


class BadValue(UsageError):
    """A value that is not what it must be. ``name`` is the operation's parameter; each front-end
    names it as its users spell it (:meth:`worded_as`): ``--min-score`` on the command line,
    ``minScore`` for a tool. ``hint`` says where a good value comes from, ``hint_tools`` the same
    in the tools' terms."""

    def __init__(self, name: str, problem: str, *, hint: str = "", hint_tools: str | None = None):
        self.name, self.problem, self.hint = name, problem, hint
        self.hint_tools = hint if hint_tools is None else hint_tools
        super().__init__(self.worded_as(name))  # a caller of the library gave a parameter: each front-end words its own (cli.main._worded)

    def worded_as(self, spelling: str, *, tools: bool = False) -> str:
        return f"{spelling} {self.problem}{self.hint_tools if tools else self.hint}"

    def worded_for_tools(self) -> str:
        return self.worded_as(f"`{self.name}`", tools=True)

    def suggesting(self, program: str) -> None:
        self.hint, self.hint_tools = suggested(self.hint, program), suggested(self.hint_tools, program)
        super().suggesting(program)

    def fields(self) -> dict[str, str]:
        return {"name": self.name, "problem": self.problem, "hint": self.hint, "hintTools": self.hint_tools}


class NulInText(UsageError):
    """The text of a write holds a NUL character (U+0000), which no memory file may: the index skips
    a file holding one as binary, so all of it (MEMORY.md, say) dropped out of search while the write
    said it succeeded. ``mode`` is ``append`` or ``replace``; ``offset`` is the byte offset of the
    first NUL in the text given (UTF-8). Nothing was written."""

    def __init__(self, mode: str, offset: int):
        self.mode, self.offset = mode, offset
        what = "the text to append" if mode == "append" else "the new content"
        super().__init__(
            f"refused: {what} holds a NUL character (U+0000) at byte {offset}; a memory file is text, and the index "
            "skips a file holding one as binary (the whole file would drop out of search): nothing was written. "
            "Remove it and write again"
        )

    def fields(self) -> dict[str, str]:
        return {"mode": self.mode, "offset": str(self.offset)}


class ConfigError(UsageError):
    """A configuration file cannot be parsed or holds a value of the wrong type."""


class WorkspaceError(UsageError):
    """The workspace is missing, not a folder, or unreadable."""


def workspace_gone(root: object, outcome: str = "") -> WorkspaceError:
    """The workspace's folder went away while a process (an MCP session, the service) used it."""
    return WorkspaceError(f"the workspace {root} is gone (moved or removed since this process started){outcome}: put "
                          "it back, or start again with its new path")


class PathRefused(UsageError):
    """A path is not a memory path, not Markdown, a symlink, or escapes the workspace."""


class ThroughALink(PathRefused):
    """A memory path that goes through a symlink, refused: ``abs_path`` and ``display`` name the
    memory file it would be without the link (whose recorded versions ``history`` still lists)."""

    def __init__(self, message: str, abs_path: str, display: str):
        self.abs_path, self.display = abs_path, display
        super().__init__(message)


class StateDirError(UsageError):
    """The state dir (or something this project keeps in it) cannot be created or written."""


class StateDirUnsafe(StateDirError):
    """The state dir, or a folder of the data dir, is one another user could have read or changed
    (theirs, or writable by others): ``role`` names which ("state dir", "data dir", "folder"),
    ``problem`` why, ``fix`` the command that mends it."""

    def __init__(self, role: str, path: str, problem: str, fix: str):
        self.role, self.path, self.problem, self.fix = role, path, problem, fix
        super().__init__(f"refusing the {role} {path}: {problem}; nothing was read or written there. {fix[:1].upper()}{fix[1:]}")


class ImportRefused(UsageError):
    """An archive ``import`` will not take: not a tar archive, damaged, or hostile (a member outside
    the archive's own names, a link or device, too big, a hash or a manifest that does not hold).
    ``member`` names the member at fault ("" when it is the archive as a whole); nothing was written."""

    def __init__(self, archive: str, problem: str, member: str = ""):
        self.archive, self.problem, self.member = archive, problem, member
        where = f" ({shown(member)})" if member else ""
        super().__init__(f"refused: {archive} is not an archive import can take{where}: {problem}; nothing was written")

    def fields(self) -> dict[str, str]:
        return {"archive": self.archive, "problem": self.problem, "member": self.member}


class ImportConflict(UsageError):
    """``import`` would replace memory files that exist here (``paths``) and hold other content."""

    def __init__(self, paths: tuple[str, ...]):
        self.paths = paths
        named = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
        super().__init__(f"refused: {len(paths)} memory file(s) exist here with other content ({named}); nothing was "
                         "written. --force replaces them, keeping what they hold in the history")

    def fields(self) -> dict[str, str]:
        return {"paths": "\n".join(self.paths)}


class LockTimeout(MemoryToolError):
    """Another process holds the lock this command needs."""

    exit_code = 2


class WriteBlocked(MemoryToolError):
    """A guarded write was refused because the file changed since the agent read it.

    ``problem`` says what is wrong, with ``{reader}`` where the reader is named; ``step`` what to do
    (:data:`BLOCKED_STEPS`), with ``{rest}`` where the read of the lines still unread is named
    (``rest``: ``N`` or ``N:CHARS``, its first line and, when that line is longer than the default
    budget, the budget that shows it whole), in each front-end's own spelling: ``read PATH --from N
    --max-chars CHARS`` for the command line, ``from=N, maxChars=CHARS`` for the tools. ``message``
    is worded for the command line; :meth:`worded_for_tools` for an agent calling the MCP tools. A
    blocked write crossing the service socket arrives as its ``message``.
    """

    exit_code = 3

    def __init__(self, message: str, *, problem: str | None = None, path: str = "", step: str = "read_again",
                 agent: str = "", session: str = "", rest: str = ""):
        self.problem, self.path, self.step, self.agent, self.session = problem, path, step, agent, session
        self.rest = rest
        self.program = PROGRAM  # how a command the step names is run (suggesting)
        self.finished = ""  # what the command finished before it was blocked (after_finishing)
        super().__init__(self._worded("cli") if problem is not None else message)

    def after_finishing(self, finished: str) -> None:
        if self.problem is None:
            super().after_finishing(finished)
            return
        self.finished = f"{self.finished}; {finished}" if self.finished else finished
        self.message = self._worded("cli")
        self.args = (self.message,)

    def _worded(self, audience: str) -> str:
        assert self.problem is not None
        within = f" (session {self.session})" if self.session else ""  # the reader the guard checked
        reader = f"agent '{self.agent}'{within}" if audience == "cli" else f"this session (agent '{self.agent}')"
        step = (BLOCKED_STEPS[self.step][audience].replace("{rest}", self._rest(audience)).replace("{program}", self.program)
                .replace("{path}", shell_word(self.path)))
        finished = f"; before that: {self.finished}" if self.finished else ""
        return f"blocked: {self.problem.replace('{reader}', reader)}{step}{finished}"

    def _rest(self, audience: str) -> str:
        """The read of the rest (``{rest}``), as ``audience`` spells it."""
        start, _, chars = self.rest.partition(":")
        if not start:
            return "{program} read {path} --from" if audience == "cli" else "memory_get with from"
        long = f": line {start} alone is {chars} characters long" if chars else ""
        if audience == "cli":
            return f"{{program}} read {{path}} --from {start}" + (f" --max-chars {chars}" if chars else "") + long
        return f"from={start}" + (f", maxChars={chars}" if chars else "") + long

    def worded_for_tools(self) -> str:
        return suggested(self._worded("tools"), self.program) if self.problem is not None else self.message

    def suggesting(self, program: str) -> None:
        self.program = program
        if self.problem is not None:
            self.message = self._worded("cli")
        super().suggesting(program)  # (a command in the problem or in what was finished before)

    def fields(self) -> dict[str, str]:
        """What the service sends so the caller can word the error for its own audience."""
        if self.problem is None:
            return {}
        told = {"problem": self.problem, "path": self.path, "step": self.step, "agent": self.agent, "session": self.session}
        return told | ({"finished": self.finished} if self.finished else {}) | ({"rest": self.rest} if self.rest else {})

    @classmethod
    def because(cls, problem: str, *, path: str, step: str = "read_again", agent: str = "", session: str = "",
                rest: str = "") -> WriteBlocked:
        return cls("", problem=problem, path=path, step=step, agent=agent, session=session, rest=rest)


# The command line a message names (suggesting: with the settings flags in force).
PROGRAM = "openclaw-memory"

# What a blocked writer does next, for each audience, following the problem.
BLOCKED_STEPS = {
    "read_again": {
        "cli": " Read it again ({program} read {path}, or read --diff {path}) and redo the change on the new version.",
        "tools": " Call memory_get again and redo the change on the new version.",
    },
    "read_first": {  # write, mv, rm; an --expect of a version not read is no read
        "cli": "; read it first ({program} read {path}) and try again.",
        "tools": "; call memory_get first, then write.",
    },
    "expect_read": {
        "cli": "; --expect takes the version {program} read {path} shows (or leave it out).",
        "tools": "; expect takes the version memory_get returned (or leave it out).",
    },
    "read_rest": {  # {rest}: the read of the lines not read yet, in the front-end's own spelling (WriteBlocked._rest)
        "cli": " ({rest}), or append (--append), or pass --replace-unread to drop them (the history keeps every version).",
        "tools": " ({rest}), or append, or pass replaceUnread: true to drop them (the history keeps every version).",
    },
    "not_utf8": {  # a replace of a file whose bytes are not all UTF-8: readers showed U+FFFD for them
        "cli": ": append instead (--append), or pass --replace-unread to replace them all the same (the history keeps "
               "every version).",
        "tools": ": append instead, or pass replaceUnread: true to replace them all the same (the history keeps every "
                 "version).",
    },
    "read_first_append": {
        "cli": "; read it first ({program} read {path}), then append.",
        "tools": "; call memory_get first, then append.",
    },
    "history": {  # (history takes the note: without it, `error: missing argument PATH`)
        "cli": " Check `{program} history {path}` and try again.",
        "tools": " Check `{program} history {path}` and try again.",
    },
    "rollback": {
        "cli": "; read them first ({program} read PATH), or pass --force: what each holds now is kept in the history.",
        "tools": "; call memory_get on each first, or pass force: what each holds now is kept in the history.",
    },
    "held_open": {
        "cli": " Try again once that program has closed it.",
        "tools": " Try again once that program has closed it.",
    },
}


class IndexMissing(MemoryToolError):
    """A search or status needs an index that has not been built yet. ``run``: the words of the
    command that builds it (``index``), named after ``message`` (then ``then``) as the front-end runs
    it (:meth:`suggesting`)."""

    exit_code = 1

    def __init__(self, message: str, *, run: str = "", then: str = ""):
        self.head, self.run, self.then = message, run, then
        super().__init__(self._worded(PROGRAM))

    def _worded(self, program: str) -> str:
        return f"{self.head}`{program} {self.run}`{self.then}" if self.run else self.head

    def suggesting(self, program: str) -> None:
        self.message = self._worded(program)
        self.args = (self.message,)

    def fields(self) -> dict[str, str]:
        return {"head": self.head, "run": self.run, "then": self.then} if self.run else {}


class MissingExtra(MemoryToolError):
    """A command needs an optional part of the package that is not installed."""

    exit_code = 1


class PathChanged(PathRefused):
    """A folder on a memory path was swapped (for a symlink, say) while the command used it."""


class DiskFull(MemoryToolError):
    """No space left (or quota exceeded) where the command had to write; it changed nothing."""

    exit_code = 1


_NO_SPACE = (28, 122)  # ENOSPC, EDQUOT


def is_no_space(exc: BaseException) -> TypeGuard[OSError]:
    return isinstance(exc, OSError) and exc.errno in _NO_SPACE


_OUT_OF_FILES = (24, 23)  # EMFILE, ENFILE


def is_out_of_files(exc: BaseException) -> bool:
    """Whether ``exc`` is the process (EMFILE) or the system (ENFILE) out of file descriptors: an
    OSError, or the index engine's own error saying so (its Rust io error, as text)."""
    if isinstance(exc, OSError):
        return exc.errno in _OUT_OF_FILES
    said = str(exc)
    return "Too many open files" in said or "TooManyOpenFiles" in said


def out_of_files() -> str:
    """What to do when the descriptors ran out: a limit, not damage (a rebuild meets it again)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return f"too many open files (the limit is {soft}: raise it with `ulimit -n`)"


class OutOfFiles(MemoryToolError):
    """The descriptors ran out (:func:`is_out_of_files`) while opening ``what``: a limit in force,
    never a file gone nor damage (with a higher limit everything is found as it was)."""

    def __init__(self, what: str):
        self.what = what
        super().__init__(f"{what}: {out_of_files()}")


def is_out_of_memory(exc: BaseException | str) -> bool:
    """Whether ``exc`` (or an engine's stderr) is memory that could not be had: a MemoryError, an
    OSError ENOMEM, or the index engine's own error or abort saying so (its Rust io error, as text)."""
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError):
        return exc.errno == 12  # ENOMEM
    said = str(exc)
    return "Cannot allocate memory" in said or "OutOfMemory" in said or re.search(r"memory allocation of \d+ bytes failed", said) is not None


def out_of_memory() -> str:
    """What to say when memory ran out: not damage (a rebuild needs as much), and the address-space
    limit where one is set (``ulimit -v``, ``prlimit --as``), the usual cause."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return "out of memory: free some memory and try again"
    return f"out of memory (the address space is limited to {soft / (1 << 20):.0f} MiB: raise it with `ulimit -v`)"



def limit_reached(exc: BaseException) -> str | None:
    """What to say where ``exc`` is a limit of this process, not damage (descriptors or memory run
    out: a rebuild meets it again), or None: one wording for every place the engine opens a shard."""
    if is_out_of_files(exc):
        return out_of_files()
    if is_out_of_memory(exc):
        return out_of_memory()
    return None

def disk_full(exc: OSError, where: str, outcome: str = "nothing was changed", *, folder: str | os.PathLike[str] | None = None) -> DiskFull:
    """The message for a write that ran out of space in ``where`` (a folder the user can find);
    ``folder``, where known, is looked at for inodes: out of them, the disk has space and "full" misleads."""
    if folder is not None and no_inode_left(folder):
        return DiskFull(f"no inode is left on the file system of {where}: no new file can be made there, however much "
                        f"space is free; {outcome}. Remove some files there and try again.")
    what = "the disk quota is exceeded" if exc.errno == 122 else "the disk is full"
    return DiskFull(f"{what}: no space left to write in {where}; {outcome}. Free some space and try again.")


def no_inode_left(folder: str | os.PathLike[str]) -> bool:
    """Whether the file system of ``folder`` has no inode left for this user (no file can be made
    there however many blocks are free); False where it does not count inodes (f_files 0) or is
    mounted read-only (squashfs, an ISO: none free, and none ever will be). A folder not made yet
    (no inode to make it with) is looked at through its nearest folder that is there."""
    at = os.path.abspath(folder)
    while True:
        try:
            vfs = os.statvfs(at)
            break
        except (FileNotFoundError, NotADirectoryError):
            if os.path.dirname(at) == at:
                return False
            at = os.path.dirname(at)
        except OSError:
            return False
    if vfs.f_files == 0 or vfs.f_flag & os.ST_RDONLY:
        return False
    return (vfs.f_ffree if os.geteuid() == 0 else vfs.f_favail) == 0


def os_error(exc: OSError, where: str, outcome: str = "nothing was changed", *,
             folder: str | os.PathLike[str] | None = None) -> MemoryToolError:
    """A typed error for an OS failure (disk full, read-only, I/O error...) while writing ``where``."""
    if is_no_space(exc):
        return disk_full(exc, where, outcome, folder=folder)
    reason = exc.strerror or str(exc)
    return MemoryToolError(f"cannot write in {where}: {reason}; {outcome}.")


def describe_os_error(exc: OSError) -> str:
    """One line for an OS failure that reached the command line unworded (never a traceback)."""
    where = f" ({exc.filename})" if exc.filename else ""
    if is_out_of_files(exc):  # wherever it struck (a lock, an import, a note), the limit is the cause
        return out_of_files()
    if is_no_space(exc):
        return f"the disk is full{where}: free some space and run the command again"
    if "/openclaw-memory/" in str(exc.filename or "") and exc.errno in _NO_ACCESS:
        closed = closed_on_the_way(str(exc.filename))
        if closed is not None:
            return f"{exc.strerror or exc}{where}: {closed}"
    if "/openclaw-memory/workspaces/" in str(exc.filename or "") and exc.errno not in _NO_ACCESS:
        # Inside a data dir (settings.Settings.data_dir): what the product keeps, which doctor checks.
        return (f"{exc.strerror or exc}{where}: `openclaw-memory doctor` says what is wrong in the state dir, "
                "`openclaw-memory doctor --fix` repairs it")
    return f"{exc.strerror or exc}{where}"


_NO_ACCESS = (13, 1)  # EACCES, EPERM


def closed_on_the_way(path: str) -> str | None:
    """What to do when ``path`` was refused to this user: the first folder on the way to it (or the
    file itself) whose mode shuts this user out, named with the command that gives it back (its
    owner's ``chmod``; another user's is theirs to give back), or None when none is found (the
    cause is elsewhere: an ACL, a security module). ``doctor --fix`` is never the answer: it goes
    the same way and is refused alike."""
    import os
    import stat as stat_

    parts = os.path.abspath(path).split(os.sep)
    ours = parts.index("openclaw-memory") + 1 if "openclaw-memory" in parts else len(parts)
    for depth in range(2, len(parts) + 1):
        here = os.sep.join(parts[:depth]) or os.sep
        try:
            st = os.lstat(here)
        except OSError:
            return None  # the one above it shuts us out, or it is gone: nothing more to find
        folder = stat_.S_ISDIR(st.st_mode)
        if not folder and here != os.path.abspath(path):
            return None
        # Above the product's own folders only the way through is needed; its own it makes 0700.
        need = (os.R_OK | os.W_OK | os.X_OK) if depth >= ours else os.X_OK
        need = need if folder else (os.R_OK | os.W_OK)
        if os.access(here, need):
            continue
        what = "folder" if folder else "file"
        if st.st_uid != os.geteuid():
            return (f"the {what} {here} (mode {stat_.S_IMODE(st.st_mode):03o}) belongs to another user (uid {st.st_uid}) "
                    "and shuts this user out: its owner gives it back (`chown`), or give another state dir (--state-dir DIR or "
                    "OPENCLAW_STATE_DIR)")
        return (f"the {what} {here} is closed to this user, its owner (mode {stat_.S_IMODE(st.st_mode):03o}): "
                f"`chmod u+{'rwx' if folder else 'rw'} {here}` gives it back")
    return None


class StateDamaged(MemoryToolError):
    """A file openclaw-memory keeps in the state dir is damaged; ``doctor --fix`` repairs it."""

    exit_code = 1


class IndexDamaged(StateDamaged):
    """An index shard cannot be loaded or does not hold what its manifest says."""


class UnreleasedLayout(MemoryToolError):
    """The data dir holds what a development build of openclaw-memory wrote, which no release reads."""

    exit_code = 1


class MemoryClosed(MemoryToolError):
    """A call on a memory after its ``close()``: it let go of its index, and does not open it again
    behind its caller's back (a search after close() reopened the shards and held them: nothing was
    left to close them, and other processes timed out waiting)."""

    def __init__(self) -> None:
        super().__init__("this memory is closed (its close() was called): open_memory(settings) opens a new one")


# The errors a service answer may name (by class name), to raise the same one in the caller.
ERROR_KINDS: dict[str, type[MemoryToolError]] = {
    cls.__name__: cls
    for cls in (MemoryToolError, UsageError, BadValue, ConfigError, WorkspaceError, PathRefused, StateDirError, LockTimeout,
                WriteBlocked, IndexMissing, MissingExtra, PathChanged, DiskFull, StateDamaged, IndexDamaged,
                UnreleasedLayout, NulInText)
}
