"""Which workspace paths the watchdog ignores: gitignore rules, matched fast.

The rules are the defaults plus the workspace's root ``.openclaw-memoryignore``,
read when a snapshot is taken and stored with it, so a verify judges the tree by
the same rules as its baseline. Patterns are compiled by ``pathspec`` (gitignore
semantics) and folded into one regular expression whose alternatives run from
the last pattern to the first, so the first alternative that matches is git's
"last matching pattern wins" in a single ``re`` call per path.

Folders are tested with a trailing slash and pruned when ignored, which gives
git's rule that nothing inside an excluded folder can be re-included.
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import pathspec

from ..errors import UsageError
from ..files.paths import MEMORY_DIR, file_kind
from ..fsutil.safeopen import Folder, NotRegularFile

# The defaults leave out a tool's clutter, never a memory file: OpenClaw lists memory/node_modules/a.md
# and memory/x.tmp/d.md as memory, so under memory/ a folder only the defaults ignore is walked for the
# memory files in it (see IgnoreRules.spares). Their first line, a comment, says so in the patterns
# stored with a snapshot: a snapshot of an earlier release stored them without it, and its rules stay
# what they were (the defaults left such notes out), so a rollback to it does not take them for notes
# it removed.
SPARES_MEMORY = "# the defaults below leave out no memory file (memory/**)"
DEFAULT_PATTERNS: tuple[str, ...] = (
    SPARES_MEMORY,
    "*.tmp",
    "*.log",
    ".git/",
    "__pycache__/",
    "node_modules/",
    ".openclaw/agents/*/sessions/",
)
IGNORE_FILE = ".openclaw-memoryignore"
MAX_IGNORE_BYTES = 1 << 20
# pathspec names a group in every pattern; the combined expression needs unique names.
_PATHSPEC_GROUP = re.compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>")


def read_ignore_file(workspace: Path) -> list[str]:
    """The lines of the workspace's root ignore file (none when it is absent).

    Opened from the workspace's descriptor as a regular file only: a symlink (which
    could pull in rules from anywhere, or ``/dev/zero``) or a FIFO (which would hang
    the snapshot) is refused, and so is a file past ``MAX_IGNORE_BYTES``.
    """
    path = workspace / IGNORE_FILE
    try:
        with Folder.under(str(workspace)) as root:
            fd, _ = root.open_regular(IGNORE_FILE)
            with os.fdopen(fd, "rb") as fh:
                raw = fh.read(MAX_IGNORE_BYTES + 1)
    except FileNotFoundError:
        return []
    except NotRegularFile as exc:
        what = "a symlink" if exc.strerror == "is a symlink" else "not a regular file (a folder, FIFO, socket or device)"
        raise UsageError(f"{path} is {what}; it should be a regular file of gitignore patterns") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_IGNORE_BYTES:
        raise UsageError(f"{path} is larger than {MAX_IGNORE_BYTES // 1024} KiB; it should be a short file of gitignore patterns")
    # git skips a UTF-8 byte order mark at the start of an ignore file (as Windows editors save
    # one): kept, it would be part of the first pattern, which would then match nothing.
    # A line ends at a line feed alone, its CR dropped before it (or at the end), as git reads it:
    # splitlines() also ended one at a lone CR, a form feed, NEL or U+2028, and "*.bak<CR>MEMORY.md"
    # left MEMORY.md out of every snapshot where git ignores nothing by that line.
    text = raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace").removesuffix("\n")
    lines = [line.removesuffix("\r") for line in text.split("\n")] if text else []
    _check_patterns(lines, path)
    return lines


def _check_patterns(lines: list[str], path: Path) -> None:
    for number, line in enumerate(lines, 1):
        try:
            _translate(line)
        except ValueError:
            hint = " (a pattern cannot end with a single backslash)" if line.endswith("\\") else ""
            raise UsageError(f"{path}, line {number}: {line!r} is not a valid gitignore pattern{hint}") from None


@functools.cache
def _pattern_class() -> type[pathspec.RegexPattern]:
    """The class ``GitIgnoreSpec`` compiles its patterns with in the installed pathspec (it moved in 1.0)."""
    pattern = pathspec.GitIgnoreSpec.from_lines(["x"]).patterns[0]
    assert isinstance(pattern, pathspec.RegexPattern)
    return type(pattern)


def _translate(line: str) -> tuple[bool | None, str | None]:
    """(include, regex source) of one line, as ``GitIgnoreSpec`` compiles it; (None, None) for a
    blank line or a comment. Only the source: compiling each pattern's own expression too (as
    ``GitIgnoreSpec.from_lines`` does) was most of the cost of a long ignore file. Raises
    ValueError for a line git would reject."""
    if line.rstrip(" ") == "!":  # the negation of nothing: git passes over it, pathspec raised
        return None, None
    regex, include = _pattern_class().pattern_to_regex(line)
    return include, (_brackets_without_slash(regex) if regex is not None else None)


def _brackets_without_slash(regex: str) -> str:
    """``regex`` with no bracket expression able to match "/": git's wildmatch never matches a
    folder separator by ``[...]`` in an ignore pattern, pathspec's ``[!x]`` (``[^x]``) did, so
    ``a[!x]b`` ignored ``a/b`` where a negation made the whole path be judged at once. The slash
    is written ``\x2f``: a literal "/" would make the star optimizer below take the class for the
    end of a name."""
    out: list[str] = []
    i = 0
    while i < len(regex):
        ch = regex[i]
        if ch == "\\":
            out.append(regex[i:i + 2])
            i += 2
            continue
        if ch != "[":
            out.append(ch)
            i += 1
            continue
        j = i + 1
        j += regex[j:j + 1] == "^"
        j += regex[j:j + 1] == "]"  # a "]" first is a member
        while j < len(regex) and regex[j] != "]":
            j += 2 if regex[j] == "\\" else 1
        bracket = regex[i:j + 1]
        with warnings.catch_warnings():  # "[[]" is a set holding "[" (a future re may read it as nested)
            warnings.simplefilter("ignore", FutureWarning)
            takes_slash = re.fullmatch(bracket, "/") is not None
        if not takes_slash:
            out.append(bracket)
        elif bracket.startswith("[^"):
            out.append(bracket[:-1] + "\\x2f]")
        else:
            out.append("(?!\\x2f)" + bracket)
        i = j + 1
    return "".join(out)


@dataclass(frozen=True)
class _Verdicts:
    """Patterns newest first, cut into runs of the same verdict (ignore or re-include): the first
    run that matches decides, which is git's "last matching pattern wins"."""

    runs: tuple[tuple[re.Pattern[str], bool], ...]
    any: re.Pattern[str] | None  # all of them at once, when there are several runs: most paths match none
    defaults_from: int  # the first run of the default patterns (they are the oldest); len(runs): none known

    def ignores(self, rel: str) -> bool:
        return self._deciding(rel) % 2 == 1

    def ignored_by_defaults(self, rel: str) -> bool:
        """Whether a default pattern ignores ``rel`` and no later one (the ignore file's) matches it."""
        decided = self._deciding(rel)
        return decided % 2 == 1 and decided // 2 >= self.defaults_from

    def _deciding(self, rel: str) -> int:
        """2 * the index of the run that decides plus its verdict (1: ignored); 0 when none matches."""
        if self.any is not None and self.any.match(rel) is None:
            return 0
        for n, (regex, include) in enumerate(self.runs):
            if regex.match(rel) is not None:
                return 2 * n + include
        return 0


@dataclass(frozen=True)
class IgnoreRules:
    """Compiled ignore rules; ``patterns`` is what gets stored with a snapshot."""

    patterns: tuple[str, ...]
    _dirs: _Verdicts  # folders, tested as "a/b/"
    # With negations, files are judged by every pattern that can match a file itself, in order.
    _files: _Verdicts | None
    # Without negations, a file needs only the patterns that can match a file, split into
    # name-only ones (tested on the last component) and path ones.
    _suffixes: tuple[str, ...]  # "*.log"-style name patterns, checked with str.endswith
    _name: re.Pattern[str] | None
    _path: re.Pattern[str] | None
    # Workspace-relative folders ("a/b/") excluded whatever the patterns say (a state dir inside).
    excluded_dirs: frozenset[str] = frozenset()
    # Paths inside those walked all the same ("a/b/c/" a folder, "a/b/c" a file): this agent's memory
    # paths in another agent's workspace. A folder on the way to one is walked for it alone.
    kept: frozenset[str] = frozenset()

    def ignores_file(self, rel: str, name: str) -> bool:
        """Whether the file at ``rel`` (last component ``name``) is ignored; its folders were not."""
        if self._files is not None:
            return self._files.ignores(rel)
        return (
            name.endswith(self._suffixes)
            or (self._name is not None and self._name.match(name) is not None)
            or (self._path is not None and self._path.match(rel) is not None)
        )

    @property
    def file_suffixes_only(self) -> tuple[str, ...] | None:
        """The suffixes when they alone decide for files (the common case; lets a caller inline them)."""
        if self._files is not None or self._name is not None or self._path is not None:
            return None
        return self._suffixes

    def ignores_dir(self, rel_with_slash: str) -> bool:
        return rel_with_slash in self.excluded_dirs or self._dirs.ignores(rel_with_slash)

    def spares(self, rel_with_slash: str) -> bool:
        """Whether an ignored folder is walked all the same for the memory files in it: it lies under
        ``memory/`` and only the default patterns ignore it (``memory/node_modules/``)."""
        return (rel_with_slash.startswith(MEMORY_DIR + "/") and rel_with_slash not in self.excluded_dirs
                and self._dirs.ignored_by_defaults(rel_with_slash))

    def ignores_path(self, rel: str) -> bool:
        """Whether a workspace-relative file path is ignored, its folders included (as the walk judges it)."""
        if self.left_out(rel):
            return True
        parts = rel.split("/")
        spared = False
        for n in range(len(parts) - 1):
            folder = "/".join(parts[: n + 1]) + "/"
            if self._dirs.ignores(folder):
                if not self.spares(folder):
                    return True
                spared = True
        return (spared and not is_memory_kind(parts[-1])) or self.ignores_file(rel, parts[-1])

    def left_out(self, rel: str) -> bool:
        """Whether ``rel`` lies in a folder excluded whatever the patterns say and is no kept path."""
        if not rel.startswith(tuple(self.excluded_dirs)):
            return False
        return rel not in self.kept and not any(k.endswith("/") and rel.startswith(k) for k in self.kept)

    def patterns_ignore_dir(self, rel_with_slash: str) -> bool:
        """Whether the patterns alone ignore the folder."""
        return self._dirs.ignores(rel_with_slash)

    def through(self, rel_with_slash: str) -> bool:
        """Whether the folder, excluded or in an excluded one, holds a kept path below it."""
        return any(k.startswith(rel_with_slash) and k != rel_with_slash for k in self.kept)


_ANY_DEPTH = "^(?:.+/)?"
# pathspec's regex for "*.<literal>": any depth, any stem, a literal suffix, file or folder.
_SUFFIX_REGEX = re.compile(r"\^\(\?:\.\+/\)\?\[\^/\]\*((?:\\\.|[A-Za-z0-9_~-])+)\(\?:\(\?P<ps_d>/\)\|\$\)")
# How pathspec ends a pattern's expression: "$" or "(?:(?P<ps_d>/)|$)" for one that names the path
# itself (the second also matches a folder's contents through its name), "(?P<ps_d>/)" for a folder
# only ("build/"), "/" for everything inside a folder ("build/**").
_FILE_OR_FOLDER = "(?:(?P<ps_d>/)|$)"
_FOLDER_ONLY = "(?P<ps_d>/)"


def _is_name_only(regex: str) -> bool:
    rest = regex[len(_ANY_DEPTH):].replace("(?P<ps_d>/)", "").replace("[^/]", "")
    return regex.startswith(_ANY_DEPTH) and "/" not in rest


def _names_the_path(regex: str) -> bool:
    return regex.endswith("$)") or regex.endswith("$")


_INNER_STARSTAR = "(?:/.+)?"  # pathspec's "/**/" inside a pattern


def _without_backtracking(regex: str) -> str:
    """``regex`` with every inner ``**`` but the last matched once, at the earliest place where the
    part after it fits (an atomic group), never retried.

    Each inner ``**`` is any number of folders; with several, ``re`` tried every way of sharing a
    path's folders among them: "a/**/x/**/x/**/x/**/x/**/x/**/x/**/x/**/x/b" against a path 40
    folders deep took 6.5 s, twelve such parts longer than any snapshot would wait (one line of
    an ignore file anyone could write). The earliest place is always right: the part after each
    ``**`` spans a fixed number of whole folders (the lookahead makes it end at one), and placing it
    earlier leaves the rest of the path, not less, for the parts after it."""
    parts = regex.split(_INNER_STARSTAR)
    if len(parts) >= 3:
        middle = "".join(f"(?>(?:/.+?)??{part}(?=/))" for part in parts[1:-1])
        regex = f"{parts[0]}{middle}{_INNER_STARSTAR}{parts[-1]}"
    return _stars_once(regex)


_STAR = "[^/]*"  # pathspec's "*"


def _stars_once(regex: str) -> str:
    """Within a folder or file name, each ``*`` followed by a fixed piece and another ``*`` of the
    same name is matched once, at the earliest place the piece fits: "*a*a*a*a*a*b" against a
    name of 250 a's took minutes (every way of placing the a's tried). As for ``**``, the earliest
    place is right: the pieces have a fixed width, and the last ``*`` of the name, kept as it is,
    takes what is left up to the name's end."""
    parts = regex.split(_STAR)
    if len(parts) < 3:
        return regex
    out = [parts[0]]
    for part in parts[1:-1]:  # each followed by another "*"
        plain = part.replace("[^/]", "")  # "?": one character of the name
        if "/" in plain or "(" in plain or ")" in plain or plain.endswith("\\"):
            out.append(_STAR + part)  # the name ends within it, or it is not a plain piece: as it is
        else:
            out.append(f"(?>[^/]*?{part})")
    out.append(_STAR + parts[-1])
    return "".join(out)


def _alternation(bodies: list[str]) -> re.Pattern[str] | None:
    """One expression matching where any of ``bodies`` does, without a capturing group: ``re``
    saves and restores the marks of every group at each alternative it tries, so a group per
    pattern made a match cost the square of the pattern count (a 1 MiB ignore file, 47,000
    patterns: 4 minutes for a snapshot of 200 files)."""
    if not bodies:
        return None
    return re.compile("|".join(f"(?:{_without_backtracking(_PATHSPEC_GROUP.sub('(?:', body))})" for body in bodies))


def is_memory_kind(name: str) -> bool:
    """Whether a file of this name, under ``memory/``, can be a memory file (a note, or media, whatever
    the multimodal setting says: the watchdog's rules must not change with it)."""
    return file_kind(name, True) is not None


def _verdicts(newest_first: list[tuple[bool, str]], defaults: int = 0) -> _Verdicts:
    """The runs of ``newest_first``, whose last ``defaults`` are the default patterns (a run of their own)."""
    runs: list[tuple[re.Pattern[str], bool]] = []
    cut = len(newest_first) - defaults
    defaults_from = None
    start = 0
    for end in range(1, len(newest_first) + 1):
        if end in (len(newest_first), cut) or newest_first[end][0] != newest_first[start][0]:
            regex = _alternation([body for _, body in newest_first[start:end]])
            assert regex is not None  # the run is not empty
            if defaults and start >= cut and defaults_from is None:
                defaults_from = len(runs)
            runs.append((regex, newest_first[start][0]))
            start = end
    return _Verdicts(tuple(runs), _alternation([body for _, body in newest_first]) if len(runs) > 1 else None,
                     len(runs) if defaults_from is None else defaults_from)


def _as_folder(regex: str) -> str:
    """A pattern's expression as git applies it to a folder (``rel/``), whose parents the walk has
    judged already: a name matches the folder itself, not a folder below one of that name
    (pathspec's "(?P<ps_d>/)" alternative is for a file; ``!notes`` after ``tmp/`` re-included
    ``notes/tmp/``); "a/**" is everything inside ``a``, not ``a`` itself, which stays walked so
    that a negation can re-include a file in it."""
    for ending in (_FILE_OR_FOLDER, _FOLDER_ONLY):
        if regex.endswith(ending):
            return regex[: -len(ending)] + "/$"
    return regex + "." if regex.endswith("/") else regex


def _as_file(regex: str) -> str | None:
    """A pattern's expression as git applies it to a file whose folders the walk has judged
    already: a folder-only pattern never names a file, and a pattern matching the file's folder
    (pathspec's "(?P<ps_d>/)" alternative) was decided when that folder was walked. None: the
    pattern cannot match a file."""
    if regex.endswith(_FILE_OR_FOLDER):
        return regex[: -len(_FILE_OR_FOLDER)] + "$"
    if regex.endswith(_FOLDER_ONLY):
        return None
    return regex


def compile_rules(patterns: list[str] | tuple[str, ...], excluded_dirs: frozenset[str] = frozenset(),
                  kept: frozenset[str] = frozenset()) -> IgnoreRules:
    """Compile gitignore ``patterns`` (blank lines and comments allowed)."""
    # (include, regex source) of every pattern that matches anything. pathspec gives "*/" and
    # "**/" (every folder, as git reads them) an expression of the bare folder ending, which
    # matched no folder: theirs is any folder's, at any depth.
    compiled: list[tuple[bool, str]] = [
        (include, "^(?:.+/)?[^/]+" + _FOLDER_ONLY if regex == _FOLDER_ONLY else regex)
        for include, regex in map(_translate, patterns)
        if include is not None and regex is not None
    ]
    # How many of them are the defaults that spare memory files (none in an earlier release's snapshot).
    defaults = (sum(1 for include, _ in map(_translate, DEFAULT_PATTERNS) if include is not None)
                if tuple(patterns[:len(DEFAULT_PATTERNS)]) == DEFAULT_PATTERNS else 0)
    newest_first = list(reversed(compiled))
    if any(not include for include, _ in compiled):
        # A negation can re-include what an earlier pattern matched, so folders and files are
        # each judged as git judges them, by every pattern in order.
        files = [(include, regex) for include, regex in ((i, _as_file(r)) for i, r in newest_first) if regex is not None]
        return IgnoreRules(
            tuple(patterns),
            _verdicts([(include, _as_folder(regex)) for include, regex in newest_first], defaults),
            _verdicts(files), (), None, None, excluded_dirs, kept,
        )
    # Without negations a folder matched by "a/**" can be pruned with all it holds (nothing inside
    # can be re-included), and a regex without an end anchor matches only through such a folder.
    # pathspec's "." is "*" or "**" alone: every path, files at the top too (it was kept to folders).
    file_capable = [r for _, r in compiled if _names_the_path(r) or r == "."]
    suffixes = [m.group(1).replace("\\", "") for r in file_capable if (m := _SUFFIX_REGEX.fullmatch(r))]
    names = [r[len(_ANY_DEPTH):] for r in file_capable if _is_name_only(r) and not _SUFFIX_REGEX.fullmatch(r)]
    paths = [r for r in file_capable if not _is_name_only(r)]
    return IgnoreRules(
        tuple(patterns),
        _verdicts(newest_first, defaults),
        None,
        tuple(suffixes),
        _alternation(names),
        _alternation(paths),
        excluded_dirs,
        kept,
    )


def workspace_patterns(workspace: Path) -> list[str]:
    """The rules in force for a new snapshot: defaults, then the root ignore file."""
    return list(DEFAULT_PATTERNS) + read_ignore_file(workspace)


def excluded_state_dirs(workspace: Path, state_dir: Path) -> frozenset[str]:
    """The state dir as a workspace-relative folder when it lies inside the workspace; when it *is*
    the workspace, the folder this product keeps in it (``openclaw-memory/``: the state database,
    the models), which every command changes: recorded, it was a break at every verify."""
    try:
        real = state_dir.resolve()
    except OSError:
        return frozenset()
    try:
        rel = real.relative_to(workspace)
    except ValueError:
        return frozenset()  # elsewhere, or holding the workspace: nothing of ours is in it
    text = rel.as_posix()
    return frozenset({"openclaw-memory/"}) if text in ("", ".") else frozenset({text + "/"})
