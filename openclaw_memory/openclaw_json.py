"""OpenClaw's own configuration as OpenClaw 2026.9.6 reads it, past the JSON5: ``$include`` and ``${VAR}``.

A config split into files (``agents: { $include: "./agents.json5" }``) is one config once its
includes are in place, and a value may name an environment variable (``workspace:
"${AGENT_HOME}/ws"``). OpenClaw resolves both before it reads a key (its ``resolveConfigIncludes``
and ``resolveConfigEnvVars``); without them an agent kept in an included file got OpenClaw's
default workspace without a word, and ``${AGENT_HOME}`` was taken for a folder's name.

- ``$include``: a path, or a list of paths deep-merged in order (lists concatenated, objects merged,
  a later value winning), relative to the file that names it; it replaces the object holding it, and
  that object's other keys are merged over it (the included value must then be an object). Includes
  nest up to 10 deep; a file may not include itself through any chain; every file must lie in the
  folder of ``openclaw.json`` or in a folder of ``OPENCLAW_INCLUDE_ROOTS`` (``os.pathsep``-separated),
  by its path and by its real path. Each is read and parsed as ``openclaw.json`` is.
- ``${NAME}`` (``NAME`` upper case, digits, ``_``) in any string is the variable's value, from this
  process's environment, else from the config's own ``env`` block (``env: { NAME: "…", vars: { NAME:
  "…" } }``); one that is unset or empty stays as written, as OpenClaw reads it (with a warning
  there). ``$${NAME}`` is the text ``${NAME}``.

Not done: the ``.env`` files OpenClaw also reads variables from (the current folder's and the state
dir's), and its login-shell import (``env.shellEnv``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .errors import ConfigError

INCLUDE_KEY = "$include"
MAX_INCLUDE_DEPTH = 10  # OpenClaw's
_VARIABLE = re.compile(r"\$(\$?)\{([A-Z_][A-Z0-9_]*)\}")


def expand(config: dict[str, Any], path: Path, env: Mapping[str, str], load: Callable[[Path], Any],
           tilde: Callable[[str], str]) -> dict[str, Any]:
    """``config`` (read from ``path``) with its includes in place (each file read by ``load``) and its
    ``${NAME}`` references replaced; a ``~`` in ``OPENCLAW_INCLUDE_ROOTS`` is expanded by ``tilde``
    (the settings' rule for every OpenClaw path)."""
    if _has_include(config):
        listed = [r.strip() for r in env.get("OPENCLAW_INCLUDE_ROOTS", "").split(os.pathsep) if r.strip()]
        roots = [os.path.dirname(os.path.abspath(path))] + [os.path.abspath(tilde(r)) for r in listed]
        config = _Includes(roots, load).process(config, Path(os.path.abspath(path)), (), 0)
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: line 1: the top level must be an object (after its $include)")
    own = config.get("env") if isinstance(config.get("env"), dict) else {}
    inline = {**{k: v for k, v in own.items() if isinstance(v, str)},
              **{k: v for k, v in (own.get("vars") or {}).items() if isinstance(v, str)}} if own else {}
    return _substituted(config, lambda name: env.get(name) or inline.get(name) or None)


def _has_include(value: Any) -> bool:
    if isinstance(value, dict):
        return INCLUDE_KEY in value or any(_has_include(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_include(v) for v in value)
    return False


class _Includes:
    """One resolution of a config's includes: the folders files may come from, and how to read one."""

    def __init__(self, roots: list[str], load: Callable[[Path], Any]):
        self.roots = roots
        self.real_roots = [os.path.realpath(r) for r in roots]
        self.load = load

    def process(self, value: Any, base: Path, chain: tuple[str, ...], depth: int) -> Any:
        if isinstance(value, list):
            return [self.process(v, base, chain, depth) for v in value]
        if not isinstance(value, dict):
            return value
        if INCLUDE_KEY not in value:
            return {k: self.process(v, base, chain, depth) for k, v in value.items()}
        named = value[INCLUDE_KEY]
        if isinstance(named, str):
            included = self._file(named, base, chain, depth)
        elif isinstance(named, list) and all(isinstance(n, str) for n in named):
            included = {}
            for name in named:
                included = _merged(included, self._file(name, base, chain, depth))
        else:
            raise ConfigError(f"{base}: $include must be a path or a list of paths, not {named!r:.60}")
        rest = {k: self.process(v, base, chain, depth) for k, v in value.items() if k != INCLUDE_KEY}
        if not rest:
            return included
        if not isinstance(included, dict):
            raise ConfigError(f"{base}: $include {named!r:.80} is not an object, so the keys beside it cannot be merged over it")
        return _merged(included, rest)

    def _file(self, name: str, base: Path, chain: tuple[str, ...], depth: int) -> Any:
        where = f"{base}: $include {name!r:.200}"
        if "\x00" in name:
            raise ConfigError(f"{where}: a path cannot hold a NUL character")
        target = os.path.normpath(os.path.join(os.path.dirname(base), name))  # no `~`: OpenClaw expands none here
        if not any(_inside(target, root) for root in self.roots) or not any(
                _inside(os.path.realpath(target), root) for root in self.real_roots):
            raise ConfigError(f"{where}: the file is outside the folder of openclaw.json ({self.roots[0]}); "
                              "OPENCLAW_INCLUDE_ROOTS names other folders includes may come from")
        visited = (*chain, str(base))
        if target in visited:
            raise ConfigError(f"{where}: circular include: {' -> '.join((*visited, target))}")
        if depth >= MAX_INCLUDE_DEPTH:
            raise ConfigError(f"{where}: includes nest more than {MAX_INCLUDE_DEPTH} deep")
        return self.process(self.load(Path(target)), Path(target), visited, depth + 1)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _merged(base: Any, over: Any) -> Any:
    """OpenClaw's deep merge for includes: objects merged key by key, lists concatenated, else ``over``."""
    if isinstance(base, list) and isinstance(over, list):
        return [*base, *over]
    if not isinstance(base, dict) or not isinstance(over, dict):
        return over
    out = dict(base)
    for key, value in over.items():
        out[key] = _merged(out[key], value) if key in out else value
    return out


def _substituted(value: Any, lookup: Callable[[str], str | None]) -> Any:
    if isinstance(value, str):
        if "$" not in value:
            return value

        def one(match: re.Match) -> str:
            if match.group(1):  # $${NAME}: the text itself
                return "${" + match.group(2) + "}"
            found = lookup(match.group(2))
            return match.group(0) if found is None else found

        return _VARIABLE.sub(one, value)
    if isinstance(value, list):
        return [_substituted(v, lookup) for v in value]
    if isinstance(value, dict):
        return {k: _substituted(v, lookup) for k, v in value.items()}
    return value
