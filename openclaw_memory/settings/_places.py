"""Where OpenClaw's files are (its home, the state dir, openclaw.json, the model cache) from the
environment as OpenClaw reads it; and the paths no file system can hold."""

from __future__ import annotations

import os
import posixpath
import pwd
import re
from collections.abc import Mapping
from pathlib import Path

from ..errors import ConfigError, StateDirError, shown
from ..files.jstext import js_trim
from ..files.paths import absolute_path

OPENCLAW_JSON_NAME = "openclaw.json"
# The names OpenClaw 2026.9.6 still reads from before its rename (its LEGACY_STATE_DIRNAMES and
# LEGACY_CONFIG_FILENAMES): a state dir ~/.clawdbot where there is no ~/.openclaw, a clawdbot.json.
LEGACY_STATE_DIR_NAME = ".clawdbot"
LEGACY_JSON_NAME = "clawdbot.json"


def env_value(name: str, environ) -> str | None:
    value = environ.get(name)
    return value if value not in (None, "") else None


def openclaw_env(name: str, environ) -> str | None:
    """A path or name variable as OpenClaw reads its own (``env.X?.trim()``): only white space is unset,
    never the current folder (``OPENCLAW_WORKSPACE_DIR=" "`` named it)."""
    value = (environ.get(name) or "").strip()
    return value or None


def default_model_cache(environ, state_dir: Path | None = None) -> Path:
    """``OPENCLAW_MEMORY_MODEL_CACHE``, else ``$XDG_CACHE_HOME/openclaw-memory/models``, else
    ``~/.cache/openclaw-memory/models``; with no home folder at all (:func:`_os_home`: never the
    current folder), ``<state dir>/openclaw-memory/models``."""
    own = env_value("OPENCLAW_MEMORY_MODEL_CACHE", environ)
    if own:
        return Path(expand(own)).absolute()
    xdg = env_value("XDG_CACHE_HOME", environ)
    if xdg and os.path.isabs(expand(xdg)):
        return Path(expand(xdg)) / "openclaw-memory" / "models"
    try:
        return Path(_system_home()) / ".cache" / "openclaw-memory" / "models"
    except StateDirError:
        if state_dir is None:
            raise
        return state_dir / "openclaw-memory" / "models"


def expand(path: str, env: Mapping[str, str] | None = None) -> str:
    """``path`` trimmed, a leading ``~`` expanded (:func:`tilde`)."""
    return tilde(path.strip(), env)


def tilde(path: str, env: Mapping[str, str] | None = None) -> str:
    """``path`` with a leading ``~`` (alone, or before ``/`` or ``\\``) expanded: with ``env``, to OpenClaw's
    home (:func:`openclaw_home`, as its ``resolveUserPath`` expands its own paths), else to this user's home
    folder (:func:`_system_home`, for this product's own paths). ``~user`` is a name like any other (a folder
    of that name, relative), as OpenClaw 2026.9.6 reads every path (``expandHomePrefix``), not that user's home."""
    if _TILDE.match(path):
        return (_system_home() if env is None else openclaw_home(env, depth=2)) + path[1:]
    return path


_TILDE = re.compile(r"~(?=\Z|[\\/])")  # OpenClaw's /^~(?=$|[\\/])/ (its $ no line's end)


def expand_home_path(value: str) -> str:
    """A ``~`` in an extra path as OpenClaw 2026.9.6 expands it (memory-host-sdk's ``expandHomePath``):
    node's ``os.homedir()`` as it is (:func:`_node_homedir`: ``$HOME`` even empty or ``null``, and
    never ``OPENCLAW_HOME``), ``~/x`` joined to it as ``path.join`` joins (``HOME=`` makes it ``x``,
    relative to the workspace, as there)."""
    if value == "~":
        return _node_homedir()
    if value.startswith(("~/", "~\\")):
        joined = posixpath.normpath(posixpath.join(_node_homedir(), value[2:]))
        return "/" + joined.lstrip("/") if joined.startswith("/") else joined
    return value


def _home_value(value: str | None) -> str | None:
    """OpenClaw's ``normalizeHomeDirValue``: a home trimmed as JavaScript trims; empty, ``undefined`` and
    ``null`` (an unset variable a script or service manager wrote out) are none."""
    trimmed = js_trim(value) if value else ""
    return trimmed if trimmed and trimmed not in ("undefined", "null") else None


def _termux_home(environ: Mapping[str, str]) -> str | None:
    """OpenClaw's ``resolveTermuxHome``: ``$PREFIX/../home`` where ``$PREFIX`` is Termux's (with ``ANDROID_DATA``)."""
    prefix = _home_value(environ.get("PREFIX"))
    if not prefix or not _home_value(environ.get("ANDROID_DATA")):
        return None
    if not re.search(r"(?:^|/)com\.termux/files/usr/?\Z", prefix.replace("\\", "/")):
        return None
    return _resolve(prefix, "..", "home")


def _node_homedir() -> str:
    """node's ``os.homedir()`` (libuv's): ``$HOME`` as it is whenever it is set, else the password database's
    entry; with neither, refused (StateDirError) as node throws."""
    if "HOME" in os.environ:
        return os.environ["HOME"]
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        raise StateDirError(f"cannot tell the home folder (HOME is not set, and user id {os.getuid()} has no entry in "
                            "the password database), where a `~` in an extra path is: set HOME") from None


def _os_home() -> str | None:
    """This user's home as OpenClaw 2026.9.6 reads it (``resolveRawOsHomeDir``): ``$HOME``, ``$USERPROFILE``,
    Termux's, node's ``os.homedir()``, the first that is one (:func:`_home_value`); None when none is.
    Read from this process's environment."""
    environ = os.environ
    found = _home_value(environ.get("HOME")) or _home_value(environ.get("USERPROFILE")) or _termux_home(environ)
    if found or "HOME" in environ:  # (os.homedir() answers $HOME itself, found wanting above)
        return found
    try:
        return _home_value(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:  # no entry for this user id (a container's --user): os.homedir() throws
        return None


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:  # (the current folder was removed)
        raise StateDirError("Unable to resolve an OpenClaw home: set OPENCLAW_HOME, HOME, or USERPROFILE, or run "
                            "from an existing directory.") from None


def _resolve(*parts: str) -> str:
    """node's ``path.resolve``: absolute against the current folder, ``.``/``..`` and doubled slashes folded."""
    joined = os.path.join(*parts)
    return absolute_path(joined, joined if os.path.isabs(joined) else _cwd())


def _system_home() -> str:
    """This user's home folder (:func:`_os_home`), for this product's own paths; refused (StateDirError)
    when there is none to tell."""
    home = _os_home()
    if home is None:
        raise StateDirError(f"cannot tell the home folder (HOME is {_told_home()}, and user id {os.getuid()} has no "
                            "home in the password database): give --state-dir or OPENCLAW_STATE_DIR, or set HOME")
    return _resolve(home)


def _told_home() -> str:
    value = os.environ.get("HOME")
    return "not set" if value is None else f"set to {shown(value)}"


def openclaw_home(env: Mapping[str, str], depth: int = 1) -> str:
    """The home OpenClaw 2026.9.6 resolves its paths against (its ``resolveRequiredHomeDir``): ``$OPENCLAW_HOME``
    (a service account's; a leading ``~`` in it this user's home), else this user's (:func:`_os_home`), else
    the current folder, as there: a ``HOME`` that is empty, blank, ``null`` or ``undefined`` is no home.

    ``depth``: how many times OpenClaw nests the call (its ``homedir`` argument another ``resolveRequiredHomeDir``):
    1 for its default workspace, 2 for its state dir, openclaw.json and a ``~`` in their paths. It tells only
    where an ``OPENCLAW_HOME`` of ``~/x`` meets no home at all: ``x`` in the current folder at 2, not at 1."""
    explicit = _home_value(env.get("OPENCLAW_HOME"))
    raw = _os_home()
    home = ""
    for _level in range(depth):
        below = raw or home or None  # a nested call's os home: the level below's answer
        if explicit is None:
            found = below
        elif _TILDE.match(explicit):
            found = below + explicit[1:] if below else None
        else:
            found = explicit
        home = _resolve(found) if found else _cwd()
    return home


def default_state_dir(env: Mapping[str, str]) -> Path:
    """OpenClaw's state dir when none is given (its resolveStateDirFromHome): ``~/.openclaw``, in
    OpenClaw's home (:func:`openclaw_home`); where there is none but there is a ``~/.clawdbot``, that one."""
    home = Path(openclaw_home(env, depth=2))
    current, legacy = home / ".openclaw", home / LEGACY_STATE_DIR_NAME
    return legacy if not current.exists() and legacy.exists() else current


def openclaw_config_path(state_dir: Path, state_dir_given: bool, env: Mapping[str, str]) -> Path:
    """The openclaw.json OpenClaw 2026.9.6 reads (its resolveConfigPath): ``OPENCLAW_CONFIG_PATH``; else in
    the state dir, ``openclaw.json`` or else an existing ``clawdbot.json``; with no state dir given, the first
    of those in ``~/.openclaw`` and then ``~/.clawdbot`` that exists; else ``<state dir>/openclaw.json``."""
    named = openclaw_env("OPENCLAW_CONFIG_PATH", env)
    if named:
        return Path(os.path.abspath(expand(named, env)))
    if state_dir_given:
        folders: tuple[Path, ...] = (state_dir,)
    else:
        home = Path(openclaw_home(env, depth=2))
        folders = (home / ".openclaw", home / LEGACY_STATE_DIR_NAME)
    for folder in folders:
        for name in (OPENCLAW_JSON_NAME, LEGACY_JSON_NAME):
            if (folder / name).exists():
                return folder / name
    return state_dir / OPENCLAW_JSON_NAME


def unpathable(value: str) -> str | None:
    """Why no file system can hold the path ``value``, or None."""
    if "\x00" in value:
        return "holds a NUL character"
    try:
        value.encode("utf-8", "surrogateescape")  # a name that is not UTF-8 comes as surrogate escapes: fine
    except UnicodeEncodeError:
        return "holds a lone UTF-16 surrogate (half a character)"
    return None


def path_text(value: str, where: str) -> str:
    why = unpathable(value)
    if why is not None:
        raise ConfigError(f"{where}: the path {shown(value)} {why}, which no path can hold")
    return value
