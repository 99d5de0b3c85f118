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
- ``env.vars`` (and ``env``'s own string keys) are added to the environment OpenClaw resolves its
  paths and ``${NAME}`` with (its ``applyConfigEnvVars``): a name trimmed and portable
  (``[A-Za-z_][A-Za-z0-9_]*``), a value not only white space and holding no ``${...}``, a name
  OpenClaw does not block (``OPENCLAW_INCLUDE_ROOTS``, ``HOME``, ``XDG_CACHE_HOME``, ``LD_*``... its
  host-env policy); a variable the environment already holds, not only white space, keeps its value.
  So ``env.vars.OPENCLAW_WORKSPACE_DIR``, ``OPENCLAW_STATE_DIR`` or ``OPENCLAW_HOME`` name the
  workspace and state dir OpenClaw's agent uses (:func:`config_env`).
- ``${NAME}`` (``NAME`` upper case, digits, ``_``) in any string is the variable's value in that
  environment; one that is unset or empty stays as written, as OpenClaw reads it (with a warning
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
from .openclaw_dotenv import FromFiles

INCLUDE_KEY = "$include"
MAX_INCLUDE_DEPTH = 10  # OpenClaw's
_VARIABLE = re.compile(r"\$(\$?)\{([A-Z_][A-Z0-9_]*)\}")


def expand(config: dict[str, Any], path: Path, env: Mapping[str, str], load: Callable[[Path], Any],
           tilde: Callable[[str], str]) -> tuple[dict[str, Any], Mapping[str, str]]:
    """``config`` (read from ``path``) with its includes in place (each file read by ``load``) and its
    ``${NAME}`` references replaced, and ``env`` with the config's variables added (:func:`config_env`);
    a ``~`` in ``OPENCLAW_INCLUDE_ROOTS`` is expanded by ``tilde`` (the settings' rule for every
    OpenClaw path)."""
    if _has_include(config):
        listed = [r.strip() for r in env.get("OPENCLAW_INCLUDE_ROOTS", "").split(os.pathsep) if r.strip()]
        roots = [os.path.dirname(os.path.abspath(path))] + [os.path.abspath(tilde(r)) for r in listed]
        config = _Includes(roots, load).process(config, Path(os.path.abspath(path)), (), 0)
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: line 1: the top level must be an object (after its $include)")
    env = config_env(config, env, path)
    return _substituted(config, lambda name: env.get(name) or None), env


def config_env(config: dict[str, Any], env: Mapping[str, str], path: Path) -> Mapping[str, str]:
    """``env`` with the variables of ``config``'s ``env`` block that OpenClaw 2026.9.6 applies to its own
    environment when it loads the config (its ``collectConfigEnvVarsByTarget`` and ``applyConfigEnvVars``,
    before ``${NAME}`` is resolved and before any path is): ``env.vars``, then ``env``'s other string keys
    (``shellEnv`` aside), a later one winning; each name trimmed and portable, not blocked
    (:func:`_blocked`), its value not only white space and holding no ``${...}``; set only where ``env``
    has no value but white space. Each added one is said to come from ``path`` (a message about its value
    names the file: the shell has no such variable)."""
    block = config.get("env")
    if not isinstance(block, dict):
        return env
    found: dict[str, tuple[str, str]] = {}
    vars_ = block.get("vars")
    for where, source in (("env.vars", vars_ if isinstance(vars_, dict) else {}),
                          ("env", {k: v for k, v in block.items() if k not in ("shellEnv", "vars")})):
        for raw, value in source.items():
            name = raw.strip() if isinstance(raw, str) else ""
            if (not isinstance(value, str) or not value.strip() or not _PORTABLE.match(name) or _blocked(name)
                    or _holds_reference(value)):
                continue
            found[name] = (value, where)
    fresh = {name: found_ for name, found_ in found.items() if not (env.get(name) or "").strip()}
    if not fresh:
        return env
    merged = FromFiles({**env, **{name: value for name, (value, _) in fresh.items()}})
    merged.files = {**(env.files if isinstance(env, FromFiles) else {}),
                    **{name: f"{path}: {where}" for name, (_, where) in fresh.items()}}
    return merged


_PORTABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _holds_reference(value: str) -> bool:
    """OpenClaw's ``containsEnvVarReference``: a ``${NAME}`` not escaped as ``$${NAME}``."""
    return any(not m.group(1) for m in _VARIABLE.finditer(value))


def _blocked(name: str) -> bool:
    """Whether OpenClaw 2026.9.6 refuses ``name`` from a config's ``env`` (its ``isBlockedConfigEnvVar``:
    three of its own, and its host-env policy's blocked and override-blocked names and prefixes)."""
    upper = name.upper()
    return (upper in _BLOCKED_NAMES or upper.startswith(_BLOCKED_PREFIXES)
            or re.fullmatch(r"CARGO_TARGET_[A-Z0-9_]+_(?:LINKER|RUNNER)", upper) is not None)



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


# OpenClaw 2026.9.6's host-env-security-policy (blockedKeys and blockedOverrideKeys, with the prefixes of
# each), and the three names its isBlockedConfigEnvVar adds (OPENCLAW_INCLUDE_ROOTS among them).
_BLOCKED_NAMES = frozenset((
    "ALL_PROXY AMQP_URL ANSIBLE_CALLBACK_PLUGINS ANSIBLE_COLLECTIONS_PATH ANSIBLE_CONFIG ANSIBLE_CONNECTION_PLUGINS "
    "ANSIBLE_FILTER_PLUGINS ANSIBLE_INVENTORY_PLUGINS ANSIBLE_LIBRARY ANSIBLE_LOOKUP_PLUGINS ANSIBLE_MODULE_UTILS "
    "ANSIBLE_REMOTE_TEMP ANSIBLE_ROLES_PATH ANSIBLE_STRATEGY_PLUGINS ANT_OPTS AWS_ACCESS_KEY_ID AWS_CONFIG_FILE "
    "AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_SECRET_ACCESS_KEY "
    "AWS_SECURITY_TOKEN AWS_SESSION_TOKEN AWS_SHARED_CREDENTIALS_FILE AWS_WEB_IDENTITY_TOKEN_FILE "
    "AZURE_AUTH_LOCATION AZURE_CLIENT_ID AZURE_CLIENT_SECRET BASHOPTS BASH_ENV BROWSER BUNDLE_GEMFILE "
    "BUN_CONFIG_REGISTRY BZR_EDITOR BZR_PLUGIN_PATH BZR_SSH CARGO_BUILD_RUSTC CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER "
    "CARGO_BUILD_RUSTC_WRAPPER CARGO_BUILD_RUSTDOC CARGO_HOME CATALINA_OPTS CC CFLAGS CGO_CFLAGS CGO_LDFLAGS "
    "CLASSPATH CMAKE_CXX_COMPILER CMAKE_C_COMPILER CMAKE_TOOLCHAIN_FILE COMPOSER_HOME CONDA_DEFAULT_ENV "
    "CONDA_PREFIX CONFIG_SHELL CONFIG_SITE CORECLR_PROFILER CORECLR_PROFILER_PATH CPATH CPLUS_INCLUDE_PATH CPP "
    "CURL_CA_BUNDLE CURL_HOME CXX CXXCPP C_INCLUDE_PATH DATABASE_URL DENO_DIR DOCKER_CERT_PATH DOCKER_CONTEXT "
    "DOCKER_HOST DOCKER_TLS_VERIFY DOTNET_ADDITIONAL_DEPS DOTNET_STARTUP_HOOKS EDITOR ELIXIR_ERL_OPTIONS "
    "EMACSLOADPATH ENV ERL_AFLAGS ERL_FLAGS ERL_ZFLAGS EXINIT FCEDIT FPATH GCONV_PATH GEM_HOME GEM_PATH GH_TOKEN "
    "GITHUB_TOKEN GITLAB_TOKEN GIT_ALLOW_PROTOCOL GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_ASKPASS GIT_COMMON_DIR "
    "GIT_DIR GIT_EDITOR GIT_EXEC_PATH GIT_EXTERNAL_DIFF GIT_HOOK_PATH GIT_INDEX_FILE GIT_NAMESPACE "
    "GIT_OBJECT_DIRECTORY GIT_PAGER GIT_PROTOCOL_FROM_USER GIT_PROXY_COMMAND GIT_SEQUENCE_EDITOR GIT_SSH "
    "GIT_SSH_COMMAND GIT_SSL_CAINFO GIT_SSL_CAPATH GIT_SSL_NO_VERIFY GIT_TEMPLATE_DIR GIT_WORK_TREE GLIBC_TUNABLES "
    "GOENV GOFLAGS GONOPROXY GONOSUMCHECK GONOSUMDB GOOGLE_APPLICATION_CREDENTIALS GOPATH GOPRIVATE GOPROXY "
    "GRADLE_OPTS GRADLE_USER_HOME GVIMINIT HELM_HOME HELM_PLUGINS HGEDITOR HGMERGE HGRCPATH HISTFILE HOME "
    "HOSTALIASES HTTPS_PROXY HTTP_PROXY IFS JAVA_OPTS JAVA_TOOL_OPTIONS JDK_JAVA_OPTIONS JULIA_EDITOR KSH_ENV "
    "KUBECONFIG LDFLAGS LESSCLOSE LESSOPEN LIBRARY_PATH LUA_CPATH LUA_INIT LUA_INIT_5_1 LUA_INIT_5_2 LUA_INIT_5_3 "
    "LUA_INIT_5_4 LUA_PATH MAKE MAKEFLAGS MANPAGER MAVEN_OPTS MFLAGS MONGODB_URI MYVIMRC NODE_AUTH_TOKEN "
    "NODE_EXTRA_CA_CERTS NODE_OPTIONS NODE_PATH NODE_REDIRECT_WARNINGS NODE_REPL_EXTERNAL_MODULE NODE_REPL_HISTORY "
    "NODE_TLS_REJECT_UNAUTHORIZED NODE_V8_COVERAGE NO_PROXY NPM_TOKEN OBJC_INCLUDE_PATH "
    "OPENCLAW_ALLOW_OLDER_BINARY_DESTRUCTIVE_ACTIONS OPENCLAW_CONFIG_READONLY OPENCLAW_INCLUDE_ROOTS OPENSSL_CONF "
    "OPENSSL_ENGINES PACKER_PLUGIN_PATH PAGER PERL5DB PERL5DBCMD PERL5LIB PERL5OPT PHPRC PHP_INI_SCAN_DIR "
    "PIP_CONFIG_FILE PIP_EXTRA_INDEX_URL PIP_FIND_LINKS PIP_INDEX_URL PIP_PYPI_URL PIP_TRUSTED_HOST PROMPT_COMMAND "
    "PS4 PYTHONBREAKPOINT PYTHONHOME PYTHONPATH PYTHONSTARTUP PYTHONUSERBASE REDIS_URL REQUESTS_CA_BUNDLE RUBYLIB "
    "RUBYOPT RUBYSHELL RUSTC RUSTC_WORKSPACE_WRAPPER RUSTC_WRAPPER RUSTDOC RUSTFLAGS RUSTUP_DIST_ROOT "
    "RUSTUP_DIST_SERVER RUSTUP_HOME RUSTUP_TOOLCHAIN RUSTUP_UPDATE_ROOT R_ENVIRON R_ENVIRON_USER R_LIBS_USER "
    "R_PROFILE R_PROFILE_USER SBT_OPTS SHELL SHELLOPTS SSH_ASKPASS SSH_AUTH_SOCK SSLKEYLOGFILE SSL_CERT_DIR "
    "SSL_CERT_FILE SUDO_ASKPASS SUDO_EDITOR SVN_EDITOR SVN_SSH SYSTEMROOT TCLLIBPATH TF_CLI_CONFIG_FILE "
    "TF_PLUGIN_CACHE_DIR UV_DEFAULT_INDEX UV_EXTRA_INDEX_URL UV_INDEX UV_INDEX_URL UV_PYTHON VAGRANT_VAGRANTFILE "
    "VIMINIT VIRTUAL_ENV VISUAL WGETRC WINDIR XDG_CACHE_HOME XDG_CONFIG_DIRS XDG_CONFIG_HOME XDG_DATA_DIRS "
    "XDG_DATA_HOME XDG_RUNTIME_DIR XDG_STATE_HOME YARN_RC_FILENAME ZDOTDIR _JAVA_OPTIONS "
).split())
_BLOCKED_PREFIXES = ('BASH_FUNC_', 'CARGO_REGISTRIES_', 'DYLD_', 'GIT_CONFIG_', 'LD_', 'NPM_CONFIG_', 'TF_VAR_')
