"""Where OpenClaw's files are (its home, the state dir, openclaw.json, the model cache) from the
environment as OpenClaw reads it; and the paths no file system can hold."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..errors import ConfigError, StateDirError, shown

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
    ``~/.cache/openclaw-memory/models``; with no home folder at all, ``<state dir>/openclaw-memory/models``."""
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
    """``path`` with a leading ``~`` (alone, or before ``/``) expanded: with ``env``, to OpenClaw's
    home (:func:`openclaw_home`), else the system's. ``~user`` is a name like any other (a folder
    of that name, relative), as OpenClaw 2026.9.6 reads every path (``expandHomePrefix``), not
    that user's home."""
    if path == "~" or path.startswith("~/"):
        return (_system_home() if env is None else openclaw_home(env)) + path[1:]
    return path


def _system_home() -> str:
    """This user's home folder; refused (StateDirError) when there is none to tell: ``~`` would be a
    folder named ``~`` in the current folder."""
    home = os.path.expanduser("~")
    if home == "~":  # no HOME, and the password database has no entry for this user (a container's --user)
        raise StateDirError(f"cannot tell the home folder (HOME is not set, and user id {os.getuid()} has no entry in the "
                            "password database), where OpenClaw's state dir ~/.openclaw is: give --state-dir or "
                            "OPENCLAW_STATE_DIR, or set HOME")
    return home


def openclaw_home(env: Mapping[str, str]) -> str:
    """The home OpenClaw resolves every path of its own against (``~/.openclaw``, ``~`` in
    openclaw.json): ``$OPENCLAW_HOME`` (a service account's, say; a ``~`` in it is the system's home),
    else the system's."""
    own = (env.get("OPENCLAW_HOME") or "").strip()
    if not own or own in ("undefined", "null"):  # OpenClaw's normalizeHomeDirValue
        return _system_home()
    return os.path.normpath(os.path.abspath(tilde(own)))


def default_state_dir(env: Mapping[str, str]) -> Path:
    """OpenClaw's state dir when none is given (its resolveStateDirFromHome): ``~/.openclaw``, in
    OpenClaw's home (:func:`openclaw_home`); where there is none but there is a ``~/.clawdbot``, that one."""
    home = Path(openclaw_home(env))
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
        home = Path(openclaw_home(env))
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
