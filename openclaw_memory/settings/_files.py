"""The config files, read whole and parsed: openclaw.json as JSON5 (its ``$include``s too) and
openclaw-memory.toml into the tree's tables."""

from __future__ import annotations

import copy
import datetime
import errno
import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..errors import ConfigError, cut, shown
from ..fsutil.private import check_planted, others_may_plant
from ._places import tilde
from ._tree import BAD, TOML_KEYS, TOML_TABLES, Check

# Real config files are a few KB; every command reads both, whole, before anything else.
MAX_CONFIG_BYTES = 16 << 20


def _read_config(path: Path) -> bytes | None:
    """The bytes of a config file; None when there is none.

    Opened non-blocking and checked to be a regular file first: a FIFO (or a device)
    named like the config must not hang every command. A symlink to a regular file
    is fine here (dotfile managers make those); this is not a memory path. A file over
    ``MAX_CONFIG_BYTES`` is refused having read no more than that.

    In a folder another user may add files to (a 1777 state dir: :func:`others_may_plant`) the
    file is read only when it is this user's (or root's) and closed to others' writes, as the
    descriptor opened says, and never through a symbolic link (StateDirUnsafe): another user's
    ``openclaw-memory.toml`` there chose the Qdrant server the notes were sent to.
    """
    guarded = others_may_plant(path.parent)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (os.O_NOFOLLOW if guarded else 0)
    try:
        fd = os.open(path, flags)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if guarded and exc.errno == errno.ELOOP:
            _refuse_link(path)
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if guarded:
            check_planted("config file", path, st)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"cannot read {path}: not a regular file (a FIFO, socket, device or folder)")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)  # never more, whatever the file's size says
        if len(data) > MAX_CONFIG_BYTES:
            size = max(os.fstat(fd).st_size, len(data))
            shown = f"{size / (1 << 30):.1f} GiB" if size >= 1 << 30 else f"{size / (1 << 20):.1f} MiB"
            raise ConfigError(f"cannot read {path}: it is {shown}; the limit is {MAX_CONFIG_BYTES >> 20} MiB "
                              "(a config file is a few KB: is it the right file?)")
        return data
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _refuse_link(path: Path) -> None:
    """The config file ``path`` (opened with O_NOFOLLOW: ELOOP) is a symbolic link, refused as such."""
    try:
        st = os.lstat(path)
    except OSError:
        return  # gone meanwhile: the ELOOP is worded as it came
    check_planted("config file", path, st)


def load_json5(path: Path, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """OpenClaw's openclaw.json at ``path`` ({} when there is none), its ``$include`` files in place and
    its ``${NAME}`` references replaced from ``env`` (default: this process's), as OpenClaw reads it."""
    return load_openclaw(path, os.environ if env is None else env)[0]


def load_openclaw(path: Path, env: Mapping[str, str]) -> tuple[dict[str, Any], Mapping[str, str]]:
    """:func:`load_json5`, and ``env`` with the variables OpenClaw takes from the config's ``env``
    block into its own environment (``env.vars``: :func:`openclaw_json.config_env`)."""
    from ..openclaw_json import expand

    data = _json5_file(path)
    if data is _MISSING:
        return {}, env
    if not isinstance(data, dict):  # (a file holding `null` is no config at all for OpenClaw either)
        raise ConfigError(f"{path}: line 1: the top level must be an object, not {_kind(data)} (OpenClaw refuses it too)")
    try:
        return expand(data, path, env, _included, lambda root: tilde(root, env))
    except RecursionError:
        raise ConfigError(f"{path}: not valid JSON5: nested too deeply") from None


def _kind(value: Any) -> str:
    return {type(None): "null", list: "a list", str: "a string", bool: "true or false"}.get(type(value), "a number")


def _included(path: Path) -> Any:
    """A file an ``$include`` names, read and parsed as openclaw.json is; it must be there (one holding
    ``null`` is that value)."""
    data = _json5_file(path)
    if data is _MISSING:
        raise ConfigError(f"cannot read {path} (an $include of openclaw.json): no such file")
    return data


_MISSING: Any = object()  # no such file (a file may hold `null`)


def _json5_file(path: Path) -> Any:
    """The JSON5 value of the file at ``path``; :data:`_MISSING` when there is no such file."""
    raw = _read_config(path)
    if raw is None:
        return _MISSING
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read {path}: not UTF-8 ({exc})") from None
    try:  # most files are plain JSON, which the C parser reads a thousand times faster than json5
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    # A JSON5 text is parsed once a process (json5's parser is pure Python: 12 ms for a small config,
    # and a command reads openclaw.json twice, for its settings and for the other agents' workspaces);
    # each reader gets its own copy.
    if text not in _PARSED:
        if len(_PARSED) >= 8:
            _PARSED.clear()
        _PARSED[text] = _parse_json5(text, path)
    return copy.deepcopy(_PARSED[text])


_PARSED: dict[str, Any] = {}


def _parse_json5(text: str, path: Path) -> Any:
    import json5

    try:
        return json5.loads(text)
    except RecursionError:
        raise ConfigError(f"{path}: not valid JSON5: nested too deeply") from None
    except ValueError as exc:
        if _blank_json5(text):  # json5 says "Empty strings are not legal JSON5" or "Unexpected end of input"
            raise ConfigError(f"{path}: the file is empty, which is not valid JSON5 (OpenClaw refuses it too): "
                              "an empty configuration is {}") from None
        # json5 words its errors as "<string>:LINE message"; name the real file instead.
        detail = re.sub(r"^<string>:(\d+)\s*", r"line \1: ", str(exc))
        raise ConfigError(f"{path}: not valid JSON5: {detail}") from None


def _blank_json5(text: str) -> bool:
    """Whether ``text`` holds no JSON5 value at all, only white space, a BOM and comments: then an
    object after it is the whole document (a text with a token of its own in it cannot take one)."""
    import json5

    try:
        return json5.loads(text + "\n{}") == {}
    except (ValueError, RecursionError):
        return False


def load_toml(path: Path) -> dict[str, Any]:
    raw = _read_config(path)
    if raw is None:
        return {}
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8").removeprefix("\ufeff"))  # the BOM a Windows editor writes
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return data


def _unknown(key: str, value: Any, known: list[str], tables: set[str], inside: str | None) -> str:
    """``unknown key 'x'`` / ``unknown table [x]``, with the closest valid name (or the valid names)."""
    import difflib

    def name(k: str) -> str:
        full = f"{inside}.{k}" if inside else k
        return f"[{full}]" if k in tables else f"'{k}'"

    full = f"{inside}.{key}" if inside else key
    what = f"unknown table [{full}]" if isinstance(value, dict) else f"{f'[{inside}] ' if inside else ''}unknown key '{key}'"
    close = difflib.get_close_matches(key, known, n=1)
    if close:
        return f"{what} (did you mean {name(close[0])}?)"
    return f"{what} (known: {', '.join(name(k) for k in known)})"


# Keys refused with a reason of their own rather than as unknown.
_REFUSED = {
    ("index.server", "api_key"): (
        "is not read from the toml, so the key never sits in a shared file; "
        "set OPENCLAW_MEMORY_QDRANT_API_KEY or name a file holding it with api_key_file"
    ),
}


def toml_shown(value: Any, limit: int = 80) -> str:
    """A value of openclaw-memory.toml as TOML writes it (``true``, ``{a = 1}``, ``2026-01-01``), not
    as Python shows it (``True``, ``{'a': 1}``, ``datetime.date(2026, 1, 1)``), cut short."""
    return cut(_toml(value), limit)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value[:20]) + (", ...]" if len(value) > 20 else "]")
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml(v)}" for k, v in list(value.items())[:20]) + "}"
    return shown(value, 10**6)  # a string as a TOML literal string ('x'), a number as TOML spells it (inf, nan)


def _toml_key(key: str) -> str:
    """A key as TOML writes it: bare where it may be, else quoted ("x.y" unquoted is a nested table)."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key, ensure_ascii=False)


def _table_values(cls: type, raw: dict[str, Any], name: str, path: Path) -> dict[str, Any]:
    """The keys of ``[name]`` as ``cls`` keeps them; an unknown key or a wrong value is a ConfigError."""
    known = {f.name: f for f in fields(cls) if "toml" in f.metadata or "table" in f.metadata}
    tables = {k for k, f in known.items() if "table" in f.metadata}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        f = known.get(key)
        if f is None:
            if (name, key) in _REFUSED:
                raise ConfigError(f"{path}: [{name}] {key} {_REFUSED[name, key]}")
            raise ConfigError(f"{path}: {_unknown(key, value, list(known), tables, name)}")
        if "table" in f.metadata:
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: [{name}] {key} must be a table ([{name}.{key}] with keys under it), not {toml_shown(value)}")
            sub = f.metadata["table"]
            values[key] = sub(**_table_values(sub, value, f"{name}.{key}", path))
            continue
        check: Check = f.metadata["toml"]
        kept = check.convert(value)
        if kept is BAD:
            raise ConfigError(f"{path}: [{name}] {key} must be {check.words}, not {toml_shown(value)}")
        values[key] = kept
    return values


def toml_tables(data: dict[str, Any], path: Path) -> dict[str, dict[str, Any]]:
    """Check every key of openclaw-memory.toml; the values of each table as its dataclass keeps them
    (only the keys the file sets: defaults that come from openclaw.json are filled in by the caller)."""
    words = {
        "workspace": "a string (a folder path)",
        "multimodal": "true or false",
        "extra_paths": "a list of strings (folder or file paths) or {path, pattern} tables",
    }
    for key, value in data.items():
        if key in TOML_TABLES:
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: {key} must be a table ([{key}] with keys under it), not {toml_shown(value)}")
        elif key in words:
            good = (
                isinstance(value, str) if key == "workspace"
                else isinstance(value, bool) if key == "multimodal"
                else isinstance(value, list) and all(isinstance(v, (str, dict)) for v in value)
            )
            if not good:
                raise ConfigError(f"{path}: {key} must be {words[key]}, not {toml_shown(value)}")
        else:
            raise ConfigError(f"{path}: {_unknown(key, value, [*TOML_KEYS, *TOML_TABLES], set(TOML_TABLES), None)}")
    for item in data.get("extra_paths") or ():
        unknown = sorted(set(item) - {"path", "pattern"}) if isinstance(item, dict) else []
        if unknown:
            raise ConfigError(f"{path}: extra_paths: unknown key '{unknown[0]}' in {toml_shown(item)} (an entry is {{path, pattern}})")
    tables = {name: _table_values(cls, data.get(name, {}), name, path) for name, cls in TOML_TABLES.items()}
    budget, overlap = tables["index"].get("chunk_tokens"), tables["index"].get("overlap_tokens")
    if budget is not None and overlap is not None and overlap > budget // 2:
        raise ConfigError(f"{path}: [index] overlap_tokens must be at most half of chunk_tokens ({budget // 2}), not {overlap}")
    return tables
