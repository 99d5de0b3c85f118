"""Names and rules that say what counts as memory."""

from __future__ import annotations

import datetime as dt
import os
import re

from .jstext import js_trim

CANONICAL_ROOT = "MEMORY.md"
USER_ROOT = "USER.md"
LEGACY_ROOT = "memory.md"
DREAMS = "DREAMS.md"
LEGACY_DREAMS = "dreams.md"
MEMORY_DIR = "memory"
REPAIR_DIR = ".openclaw-repair"
REPAIR_ROOT_MEMORY = f"{REPAIR_DIR}/root-memory"


def _path_max() -> int:
    try:
        return os.pathconf("/", "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        return 4096


# The longest path and name the system takes. Longer paths could still be reached one folder at a
# time, but nothing else (an editor, the shell, OpenClaw) could open them: refused before any folder is made.
PATH_MAX = _path_max()

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".webp", ".gif", ".heic", ".heif"})
AUDIO_EXTENSIONS = frozenset({".mp3", ".wav", ".ogg", ".opus", ".m4a", ".m2a", ".aac", ".flac"})
_IMAGE_SUFFIXES = tuple(IMAGE_EXTENSIONS)
_AUDIO_SUFFIXES = tuple(AUDIO_EXTENSIONS)
MODALITIES = ("image", "audio")  # OpenClaw's MEMORY_MULTIMODAL_MODALITIES

DAILY_NOTE = re.compile(r"^memory/(\d{4})-(\d{2})-(\d{2})\.md$")


def file_kind(name: str, multimodal: bool | tuple[str, ...]) -> str | None:
    """``markdown``, ``image``, ``audio`` or None. ``.md`` is case-sensitive; media extensions are not.
    ``multimodal``: True for both media kinds, or the kinds that count (``("image",)``; empty: none)."""
    if name.endswith(".md"):
        return "markdown"
    if not multimodal:
        return None
    # OpenClaw's classifyMemoryMultimodalPath: the name trimmed (JavaScript's white space) and
    # lower-cased ends with the extension; '.jpg' and '..jpg' are images, 'a.png ' is one too.
    lower = js_trim(name).lower()
    kind = "image" if lower.endswith(_IMAGE_SUFFIXES) else "audio" if lower.endswith(_AUDIO_SUFFIXES) else None
    return kind if kind is None or isinstance(multimodal, bool) or kind in multimodal else None  # (True: both)


def is_memory_path(rel: str) -> bool:
    """OpenClaw's ``isMemoryPath``: ``MEMORY.md``, ``USER.md``, the dream diary (any case), or under ``memory/``."""
    rel = re.sub(r"^[./]+", "", js_trim(rel)).replace("\\", "/")
    if not rel:
        return False
    if rel in (CANONICAL_ROOT, USER_ROOT) or rel.lower() == LEGACY_DREAMS:
        return True
    return rel.startswith(MEMORY_DIR + "/")


class ExtraPath(str):
    """An extra memory path (absolute, normalized) and the optional glob ``pattern`` filtering it.

    A ``str`` (the path) so that every caller that only needs where the extra path
    lives keeps working; only the scanner and the reader look at ``pattern``.
    """

    pattern: str | None

    def __new__(cls, path: str, pattern: str | None = None) -> ExtraPath:
        obj = super().__new__(cls, path)
        obj.pattern = pattern or None
        return obj

    def __repr__(self) -> str:
        return f"ExtraPath({str(self)!r}, pattern={self.pattern!r})" if self.pattern else f"ExtraPath({str(self)!r})"

    def __reduce__(self):
        return (ExtraPath, (str(self), self.pattern))

    def admits(self, abs_path: str) -> bool:
        """OpenClaw's ``matchesExtraMemoryPathEntry``: no pattern, the path itself, or a match below it."""
        if not self.pattern:
            return True
        rel = os.path.relpath(abs_path, self)
        if rel == os.curdir:
            return True
        if rel == os.pardir or rel.startswith(os.pardir + os.sep):
            return False
        from .glob import matches_glob

        try:
            return matches_glob(rel.replace(os.sep, "/"), self.pattern)
        except (re.error, RecursionError):
            return False


def is_daily_note(rel: str) -> bool:
    import datetime

    match = DAILY_NOTE.match(rel)
    if not match:
        return False
    try:
        datetime.date(*(int(g) for g in match.groups()))
    except ValueError:
        return False
    return True


def shorten_home(path: str) -> str:
    """OpenClaw's ``shortenHomePath``: the home folder at the start of ``path`` shown as ``~``
    (``$OPENCLAW_HOME`` when that is set)."""
    custom = (os.environ.get("OPENCLAW_HOME") or "").strip()
    home = os.path.expanduser(custom) if custom else os.path.expanduser("~")
    prefix = "$OPENCLAW_HOME" if custom else "~"
    if not home or home == os.sep:
        return path
    if path == home:
        return prefix
    if path.startswith(home + "/"):
        return prefix + path[len(home):]
    return path


def absolute_path(path: str, base: str) -> str:
    """``path`` made absolute against ``base``, ``.``, ``..`` and doubled slashes folded, as node's
    ``path.resolve`` does: POSIX's normpath keeps a leading ``//``, which gave every note a second
    name (``//tmp/ws/memory/a.md``) with a history of its own."""
    return "/" + os.path.normpath(path if os.path.isabs(path) else os.path.join(base, path)).lstrip("/")


def display_path(abs_path: str, workspace: str) -> str:
    """Relative to the workspace with ``/``, as OpenClaw shows and indexes paths: a file in an
    extra folder outside the workspace is ``../outside/one.md`` (``path.relative``)."""
    prefix = workspace.rstrip(os.sep) + os.sep
    if abs_path.startswith(prefix) and f"{os.sep}{os.pardir}" not in abs_path:
        rel = abs_path[len(prefix):]
        return rel.replace(os.sep, "/") if os.sep != "/" else rel
    try:
        rel = os.path.relpath(abs_path, workspace)
    except ValueError:
        return abs_path  # another drive (Windows): no relative form exists
    return "" if rel == os.curdir else rel.replace(os.sep, "/")


def archive_stamp(now: dt.datetime | None = None) -> str:
    """The name of a repair archive's folder under REPAIR_DIR: the moment, UTC, to the millisecond."""
    now = now or dt.datetime.now(dt.UTC)
    now = now.astimezone(dt.UTC)
    return now.strftime("%Y-%m-%dT%H-%M-%S-") + f"{now.microsecond // 1000:03d}Z"
