"""Which memory files a git work tree holds uncommitted changes of, or ignores.

Many workspaces are git repositories: a memory file with uncommitted changes is not backed up by
them, and one that ``.gitignore`` matches never is. This asks ``git`` (when it is on PATH) and
never writes the repository: ``--no-optional-locks`` (and ``GIT_OPTIONAL_LOCKS=0``) keep ``status``
from refreshing the index file, and only the memory paths are asked about. No git, no
repository, or a repository git refuses to read (another user's: ``safe.directory``) is never an
error: nothing is said, or one note.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..files.paths import file_kind
from ..wire import key

if TYPE_CHECKING:
    from ..settings import Settings

TIMEOUT_S = 10.0
# The workspace's memory paths as pathspecs (files.paths.is_memory_path, and the legacy root).
WORKSPACE_PATHSPECS = (":(literal)MEMORY.md", ":(literal)USER.md", ":(literal)memory.md",
                       ":(icase,literal)dreams.md", ":(literal)memory")
# What the caller's environment must not redirect: another repository, work tree or index.
_GIT_ENV_DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_CEILING_DIRECTORIES")


@dataclass(frozen=True)
class GitChanges:
    """The memory files of one root as its git work tree sees them (paths relative to the root)."""

    root: str  # the memory root asked about (the workspace, or an extra path)
    head: str | None = key(default=None)  # the HEAD commit; None before the first commit
    modified: tuple[str, ...] = ()  # changed in the work tree, not staged
    staged: tuple[str, ...] = ()  # staged, not committed
    untracked: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()  # matched by .gitignore: never backed up by the repository

    @property
    def uncommitted(self) -> tuple[str, ...]:
        return tuple(sorted({*self.modified, *self.staged, *self.untracked}))


def git_changes(root: Path, pathspecs: tuple[str, ...] = WORKSPACE_PATHSPECS) -> tuple[GitChanges | None, str | None]:
    """(what git says of ``pathspecs`` under ``root``, a note); (None, None) without git or a repository."""
    if not _may_be_in_a_repository(root):
        return None, None
    import shutil  # only here: a workspace in no repository (most) never loads them (~5 ms a command)
    import subprocess

    git = shutil.which("git")
    if git is None:
        return None, None
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROPPED}
    env.update(GIT_OPTIONAL_LOCKS="0", LC_ALL="C", GIT_TERMINAL_PROMPT="0")
    base = [git, "--no-optional-locks", "-C", str(root)]
    try:
        where = subprocess.run([*base, "rev-parse", "--is-inside-work-tree", "--show-prefix"],
                               capture_output=True, env=env, timeout=TIMEOUT_S, check=False)
        if where.returncode != 0:
            return None, _refusal(root, where.stderr)
        lines = where.stdout.decode("utf-8", "surrogateescape").splitlines()
        if not lines or lines[0] != "true":
            return None, None  # inside a .git folder, or a bare repository: no work tree
        prefix = lines[1] if len(lines) > 1 else ""
        status = subprocess.run(
            [*base, "status", "--porcelain=v2", "-z", "--branch", "--ignored=matching", "--untracked-files=all",
             "--", *pathspecs], capture_output=True, env=env, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"git could not say which memory files under {root} have uncommitted changes ({exc})"
    if status.returncode != 0:
        return None, _refusal(root, status.stderr) or (
            f"git status failed under {root}: {_first_line(status.stderr)}")
    changes = parse_status(str(root), prefix, status.stdout)
    if any(prefix.startswith(folder) for folder in changes.ignored if folder.endswith("/")):
        # The repository ignores a folder holding the whole root (a workspace under build/, say):
        # the root is not part of that work tree, and nothing of it is the repository's business.
        return None, None
    return changes, None


def _may_be_in_a_repository(root: Path) -> bool:
    """Whether ``root`` or a folder above it has a ``.git``: a few stats, so that a workspace in no
    repository never pays for starting git (git itself decides when there is one)."""
    if not root.is_dir():
        return False
    return any(os.path.lexists(folder / ".git") for folder in (root, *root.parents))


def parse_status(root: str, prefix: str, out: bytes) -> GitChanges:
    """Read ``git status --porcelain=v2 -z --branch`` (paths from the repository's top; ``prefix``
    is where ``root`` lies in it) into the root's own relative paths."""
    head: str | None = None
    found: dict[str, list[str]] = {"modified": [], "staged": [], "untracked": [], "ignored": []}
    records = iter(out.decode("utf-8", "surrogateescape").split("\0"))
    for record in records:
        if record.startswith("# branch.oid "):
            oid = record.removeprefix("# branch.oid ")
            head = None if oid == "(initial)" else oid
            continue
        kind = record[:1]
        if kind == "?":
            found["untracked"].append(record[2:])
        elif kind == "!":
            found["ignored"].append(record[2:])
        elif kind in ("1", "2", "u"):
            fields = record.split(" ", {"1": 8, "2": 9, "u": 10}[kind])
            xy, path = fields[1], fields[-1]
            if kind == "2":
                next(records, None)  # a rename's original path follows as its own record
            if xy[0] != "." or kind == "u":
                found["staged"].append(path)
            if xy[1] != "." or kind == "u":
                found["modified"].append(path)

    def rel(paths: list[str]) -> tuple[str, ...]:
        # A folder above the root (an ignored one that holds it) keeps its repository path.
        return tuple(sorted(p.removeprefix(prefix) if p.startswith(prefix) else p for p in paths))

    return GitChanges(root, head, rel(found["modified"]), rel(found["staged"]), rel(found["untracked"]),
                      rel(found["ignored"]))


def _refusal(root: Path, stderr: bytes) -> str | None:
    """The note for a repository git will not read; None when ``root`` is simply in no repository."""
    text = stderr.decode("utf-8", "replace")
    if "dubious ownership" in text or "safe.directory" in text:
        return (f"git refuses to read the repository of {root} (owned by another user; see git's "
                "safe.directory): its memory files' uncommitted changes are not reported")
    if "not a git repository" in text:
        return None
    return f"git could not read the repository of {root}: {_first_line(stderr)}"


def _first_line(stderr: bytes) -> str:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[0] if lines else "no reason given"


def memory_git_changes(settings: Settings) -> tuple[tuple[GitChanges, ...], tuple[str, ...]]:
    """What git says of the memory files of the workspace and of each extra path in a work tree
    (only roots with something to say), and the notes of roots git would not read."""
    asked: list[tuple[Path, tuple[str, ...]]] = [(settings.workspace, WORKSPACE_PATHSPECS)]
    for extra in settings.extra_paths:
        path = Path(extra)
        asked.append((path, (":(literal).",)) if path.is_dir() else (path.parent, (f":(literal){path.name}",)))
    found: list[GitChanges] = []
    notes: list[str] = []
    for root, pathspecs in asked:
        changes, note = git_changes(root, pathspecs)
        if note:
            notes.append(note)
        if changes is not None:
            changes = _memory_only(changes, settings.media)
            if changes.uncommitted or changes.ignored:
                found.append(changes)
    return tuple(found), tuple(notes)


def workspace_head(workspace: Path) -> str | None:
    """The HEAD commit of the work tree holding ``workspace`` (None: no git, no repository, no commit)."""
    changes, _ = git_changes(workspace, (":(literal)MEMORY.md",))
    return changes.head if changes is not None else None


def _memory_only(changes: GitChanges, multimodal: tuple[str, ...]) -> GitChanges:
    """Drop what no scan would call a memory file (a ``memory/.DS_Store``, an extra folder's other files)."""
    def keep(paths: tuple[str, ...]) -> tuple[str, ...]:
        # A folder git ignores whole (``memory/`` in .gitignore) is named as the folder.
        return tuple(p for p in paths if p.endswith("/") or file_kind(p.rsplit("/", 1)[-1], multimodal))

    return replace(changes, modified=keep(changes.modified), staged=keep(changes.staged),
                   untracked=keep(changes.untracked), ignored=keep(changes.ignored))
