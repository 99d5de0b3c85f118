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

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pathspec

from ..errors import UsageError
from ..fsutil.safeopen import Folder, NotRegularFile

DEFAULT_PATTERNS: tuple[str, ...] = (
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
    lines = raw.decode("utf-8", errors="replace").splitlines()
    _check_patterns(lines, path)
    return lines


def _check_patterns(lines: list[str], path: Path) -> None:
    try:
        pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError as whole:
        for number, line in enumerate(lines, 1):
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except ValueError:
                hint = " (a pattern cannot end with a single backslash)" if line.endswith("\\") else ""
                raise UsageError(f"{path}, line {number}: {line!r} is not a valid gitignore pattern{hint}") from None
        raise UsageError(f"{path} holds patterns that are not valid gitignore: {whole}") from None


@dataclass(frozen=True)
class IgnoreRules:
    """Compiled ignore rules; ``patterns`` is what gets stored with a snapshot."""

    patterns: tuple[str, ...]
    _full: re.Pattern[str] | None
    _include: tuple[bool, ...]
    # Without negations, a file needs only the patterns that can match a file, split into
    # name-only ones (tested on the last component) and path ones; with negations, all of them.
    _suffixes: tuple[str, ...]  # "*.log"-style name patterns, checked with str.endswith
    _name: re.Pattern[str] | None
    _path: re.Pattern[str] | None
    _has_negation: bool
    # Workspace-relative folders ("a/b/") excluded whatever the patterns say (a state dir inside).
    excluded_dirs: frozenset[str] = frozenset()

    def ignores_file(self, rel: str, name: str) -> bool:
        """Whether the file at ``rel`` (last component ``name``) is ignored; its folders were not."""
        if self._has_negation:
            return self._last_match(rel)
        return (
            name.endswith(self._suffixes)
            or (self._name is not None and self._name.match(name) is not None)
            or (self._path is not None and self._path.match(rel) is not None)
        )

    @property
    def file_suffixes_only(self) -> tuple[str, ...] | None:
        """The suffixes when they alone decide for files (the common case; lets a caller inline them)."""
        if self._has_negation or self._name is not None or self._path is not None:
            return None
        return self._suffixes

    def ignores_dir(self, rel_with_slash: str) -> bool:
        return rel_with_slash in self.excluded_dirs or self._last_match(rel_with_slash)

    def ignores_path(self, rel: str) -> bool:
        """Whether a workspace-relative file path is ignored, its folders included."""
        parts = rel.split("/")
        folders = ("/".join(parts[: n + 1]) + "/" for n in range(len(parts) - 1))
        return any(self.ignores_dir(f) for f in folders) or self.ignores_file(rel, parts[-1])

    def _last_match(self, rel: str) -> bool:
        if self._full is None:
            return False
        m = self._full.match(rel)
        if m is None:
            return False
        # Every alternative is one outer named group, the last to close on a match.
        assert m.lastgroup is not None
        return self._include[int(m.lastgroup[1:])]


_ANY_DEPTH = "^(?:.+/)?"
# pathspec's regex for "*.<literal>": any depth, any stem, a literal suffix, file or folder.
_SUFFIX_REGEX = re.compile(r"\^\(\?:\.\+/\)\?\[\^/\]\*((?:\\\.|[A-Za-z0-9_~-])+)\(\?:\(\?P<ps_d>/\)\|\$\)")


def _is_name_only(regex: str) -> bool:
    rest = regex[len(_ANY_DEPTH):].replace("(?P<ps_d>/)", "").replace("[^/]", "")
    return regex.startswith(_ANY_DEPTH) and "/" not in rest


def _alternation(bodies: list[str]) -> re.Pattern[str] | None:
    if not bodies:
        return None
    return re.compile("|".join(f"(?P<g{n}>{_PATHSPEC_GROUP.sub('(?:', body)})" for n, body in enumerate(bodies)))


def compile_rules(patterns: list[str] | tuple[str, ...], excluded_dirs: frozenset[str] = frozenset()) -> IgnoreRules:
    """Compile gitignore ``patterns`` (blank lines and comments allowed)."""
    spec = pathspec.GitIgnoreSpec.from_lines(list(patterns))
    # (include, regex source) of every pattern that matches anything.
    compiled: list[tuple[bool, str]] = [
        (p.include, regex.pattern) for p in spec.patterns
        if p.include is not None and (regex := getattr(p, "regex", None)) is not None
    ]
    newest_first = list(reversed(compiled))
    has_negation = any(not include for include, _ in compiled)
    # A regex without an end anchor matches only through a folder prefix ("dir/"), and such
    # a folder was tested and pruned before any file inside it is looked at.
    file_capable = [r for _, r in compiled if r.endswith("$)") or r.endswith("$")]
    suffixes = [m.group(1).replace("\\", "") for r in file_capable if (m := _SUFFIX_REGEX.fullmatch(r))]
    names = [r[len(_ANY_DEPTH):] for r in file_capable if _is_name_only(r) and not _SUFFIX_REGEX.fullmatch(r)]
    paths = [r for r in file_capable if not _is_name_only(r)]
    return IgnoreRules(
        tuple(patterns),
        _alternation([r for _, r in newest_first]),
        tuple(include for include, _ in newest_first),
        tuple(suffixes),
        _alternation(names),
        _alternation(paths),
        has_negation,
        excluded_dirs,
    )


def workspace_patterns(workspace: Path) -> list[str]:
    """The rules in force for a new snapshot: defaults, then the root ignore file."""
    return list(DEFAULT_PATTERNS) + read_ignore_file(workspace)


def excluded_state_dirs(workspace: Path, state_dir: Path) -> frozenset[str]:
    """The state dir as a workspace-relative folder when it lies inside the workspace."""
    try:
        real = state_dir.resolve()
    except OSError:
        return frozenset()
    try:
        rel = real.relative_to(workspace)
    except ValueError:
        return frozenset()
    text = rel.as_posix()
    # A state dir that *is* the workspace (or holds it) cannot be excluded without excluding everything.
    return frozenset() if text in ("", ".") else frozenset({text + "/"})
