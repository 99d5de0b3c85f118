"""Settings resolved once: flags > environment > config files > defaults. Extra memory paths from
every source add up into one de-duplicated list; scalars follow the precedence."""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import BadValue, ConfigError, StateDirError, UsageError, WorkspaceError, shell_word, shown
from ..files.jstext import js_trim
from ..files.paths import PATH_MAX, ExtraPath, absolute_path
from ..fsutil.atomic import NAME_MAX
from ..fsutil.private import check_planted, forget_ways, others_may_plant
from ..openclaw_dotenv import set_in, where_set, with_dotenv
from ._files import load_openclaw, load_toml, toml_tables
from ._ids import DEFAULT_AGENT, OPENCLAW_ID, agent_id, check_session, openclaw_agent_id
from ._openclaw import (
    agent_entry,
    extra_list,
    js_int,
    js_positive,
    json_object,
    json_shown,
    max_results_setting,
    multimodal_setting,
    own_sources,
    read_roster,
    search_key,
    shared_sources,
    startup_context,
    switch_env,
)
from ._places import (
    _home_value,
    default_model_cache,
    default_state_dir,
    env_value,
    expand,
    expand_home_path,
    openclaw_config_path,
    openclaw_env,
    openclaw_home,
    path_text,
    unpathable,
)
from ._tree import (
    DATA_DIR_USABLE,
    SQLITE_PATH_MAX,
    TOML_NAME,
    HistorySettings,
    IndexSettings,
    Overrides,
    PromptLimits,
    ReadLimits,
    SearchSettings,
    ServiceSettings,
    Settings,
    WatchdogSettings,
)


def _text(value: Any, where: str) -> str | None:
    """A configured workspace; None where it is not set, as OpenClaw trims it (a blank one named
    the current folder)."""
    if value is None or isinstance(value, str):
        return None if value is None or not js_trim(value) else path_text(value, where)
    raise ConfigError(f"{where} must be a string (a folder path), not {json_shown(value)}")


def command_line(settings: Settings, *, in_force: bool = False) -> str:
    """``openclaw-memory`` and the settings flags its command line was given, quoted for a shell: a
    command a hint names (read it first, build the index) acts on the same workspace, agent and
    session as the command that printed it (without them, on $OPENCLAW_WORKSPACE's or OpenClaw's
    default agent's).

    ``in_force``: the workspace, state dir and agent in force however they were chosen (the MCP
    server's: its settings may come from the environment its host gave it, which the model's shell
    does not have), with the flags given besides."""

    flags = settings.command_flags
    if in_force:
        rest: list[str] = []
        i = 0
        while i < len(flags):  # the given ones besides, in their order (each takes a value but --[no-]multimodal)
            width = 1 if flags[i] in ("--multimodal", "--no-multimodal") else 2
            if flags[i] not in ("-w", "--state-dir", "--agent"):
                rest += flags[i:i + width]
            i += width
        if settings.qdrant_url and "--qdrant-url" not in rest:
            rest += ["--qdrant-url", printable_url(settings.qdrant_url)]
        flags = ("-w", str(settings.workspace), "--state-dir", str(settings.state_dir), "--agent", settings.agent, *rest)
    return " ".join(["openclaw-memory", *map(shell_word, flags)])  # a folder not UTF-8: $'...\xe9' (it printed U+FFFD)


def printable_url(url: str) -> str:
    """A Qdrant URL without its user:password part and its query (an api_key=...), safe to print: a
    hint's command line is shown to the model over MCP, whose host may have given the URL with its
    credentials in the environment the model never saw."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
    except ValueError:  # not a URL (refused later, naming it): its text with the same parts cut
        scheme, sep, rest = url.partition("//") if "//" in url else ("", "", url)
        return scheme + sep + rest.rsplit("@", 1)[-1].split("?", 1)[0].split("#", 1)[0]
    if not parts.scheme or not parts.netloc:  # no scheme://: user:password@host reads as a path
        return url.rsplit("@", 1)[-1].split("?", 1)[0].split("#", 1)[0]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _command_flags(given: _Given, settings: Settings) -> tuple[str, ...]:
    """The flags of ``given`` with their values in force (a workspace as resolved, an agent id as
    normalized): the same memory from any folder."""
    flags: list[str] = []
    for name, flag, value in (("workspace", "-w", str(settings.workspace)), ("state_dir", "--state-dir", str(settings.state_dir)),
                              ("agent", "--agent", settings.agent),
                              ("qdrant_url", "--qdrant-url", settings.qdrant_url and printable_url(settings.qdrant_url)),
                              ("session", "--session", settings.session)):
        if getattr(given, name) is not None and value is not None:
            flags += [flag, value]
    for extra in given.extra:  # (as given: a relative one is relative to the workspace, not the current folder)
        flags += ["--extra", extra]
    if given.multimodal is not None:
        flags.append("--multimodal" if given.multimodal else "--no-multimodal")
    return tuple(flags)


class _Given(NamedTuple):
    """Overrides as checked (:func:`_given`): each path as its text."""

    workspace: str | None
    agent: str | None
    state_dir: str | None
    extra: tuple[str, ...]
    multimodal: bool | None
    qdrant_url: str | None
    session: str | None


def _given(o: Overrides) -> _Given:
    """``o`` with each field of its type, a path (workspace, state dir, each extra) as its text: a Python
    caller's Overrides are what the CLI's flags are, and were taken unchecked (one string for ``extra``
    was iterated, and its "/" made every .md on the host memory; a Path for the workspace, or one
    holding a NUL, failed as a bare AttributeError or ValueError). Anything else is BadValue, named by
    the field."""

    def path(name: str, value: object) -> str:
        text = os.fspath(value) if isinstance(value, os.PathLike) else value
        if not isinstance(text, str):
            raise BadValue(name, f"takes a path (a str or os.PathLike), not {shown(value)}")
        why = unpathable(text)
        if why is not None:
            raise BadValue(name, f"{why}, which no path can hold: {shown(text)}")
        return text

    def text(name: str, value: object) -> str | None:
        if value is not None and not isinstance(value, str):
            raise BadValue(name, f"takes a str, not {shown(value)}")
        return value

    # A string is refused, not taken as one path: the field is a list like the flag it stands for, and
    # OPENCLAW_MEMORY_EXTRA_PATHS's "a:b" is two, so no reading of one string is clearly the caller's.
    if isinstance(o.extra, (str, bytes, os.PathLike)) or not isinstance(o.extra, Iterable):
        raise BadValue("extra", f"takes a sequence of paths (extra=[PATH]), not one "
                                f"{'string' if isinstance(o.extra, str) else 'value'}: {shown(o.extra)}")
    if o.multimodal is not None and not isinstance(o.multimodal, bool):
        raise BadValue("multimodal", f"takes True, False or None, not {shown(o.multimodal)}")
    return _Given(
        workspace=None if o.workspace is None else path("workspace", o.workspace),
        agent=text("agent", o.agent),
        state_dir=None if o.state_dir is None else path("state_dir", o.state_dir),
        extra=tuple(path("extra", item) for item in o.extra),
        multimodal=o.multimodal,
        qdrant_url=text("qdrant_url", o.qdrant_url),
        session=text("session", o.session),
    )


def resolve_settings(overrides: Overrides | None = None, environ=None) -> Settings:
    """Resolve settings from flags, the environment, config files and defaults."""
    o = _given(overrides or Overrides())
    env = os.environ if environ is None else environ
    forget_ways()
    # A folder or agent given empty (`-w "$WS"` with WS unset) is refused: taken as not given, a
    # script's write went to $OPENCLAW_WORKSPACE or OpenClaw's default workspace, another agent's
    # memory, or was made as the default agent.
    for value, what, instead in ((o.workspace, "workspace given with -w/--workspace", "$OPENCLAW_WORKSPACE or OpenClaw's default"),
                                 (o.state_dir, "state dir given with --state-dir", "$OPENCLAW_STATE_DIR or ~/.openclaw"),
                                 (o.agent, "agent given with --agent", "OpenClaw's default agent"),
                                 (o.session, "session given with --session", "the command line's own read records"),
                                 (o.qdrant_url, "Qdrant server given with --qdrant-url", "the embedded engine")):
        if value is not None and not value.strip():
            raise UsageError(f"the {what} is empty; give one (an empty value does not mean {instead})")
    if any(not extra.strip() for extra in o.extra):  # (`--extra "$NOTES"`, NOTES unset: dropped without a word)
        raise UsageError("the extra path given with --extra is empty; give one (an empty value adds no path)")

    # OPENCLAW_WORKSPACE is this product's own, read from its process alone: OpenClaw reads no such
    # variable, so one its .env files or openclaw.json's env.vars hold names no agent's workspace there
    # (taken from them, it gave every agent that folder, over each one's agents.entries.<id>.workspace).
    own_workspace = openclaw_env("OPENCLAW_WORKSPACE", env)
    given = o.state_dir or openclaw_env("OPENCLAW_STATE_DIR", env)
    _fits("the state dir path", given, StateDirError)
    # OpenClaw's environment is this one plus its own .env files (the state dir's may name another).
    try:
        home: str | None = openclaw_home(env)
    except StateDirError:  # none to tell: a state dir given is still read; one that is not fails below
        home = None
    if given or home is not None:
        env = with_dotenv(env, js_resolve(expand(given, env)) if given else str(default_state_dir(env)),
                          bool(o.state_dir) or "OPENCLAW_STATE_DIR" in env, home)
        given = o.state_dir or openclaw_env("OPENCLAW_STATE_DIR", env)
    state_dir = _state_dir(given, o.state_dir, env)
    json_path = openclaw_config_path(state_dir, bool(given), env)
    # OpenClaw adds the config's env.vars to its environment as it loads it, and resolves every path
    # after with them (the state dir too: its agents' folders and data are there; openclaw.json stays
    # the one read).
    before = env
    openclaw, env = load_openclaw(json_path, env)
    if env is not before and not o.state_dir:
        given = openclaw_env("OPENCLAW_STATE_DIR", env)
        _fits("the state dir path", given, StateDirError)
        state_dir = _state_dir(given, None, env)
    _refuse_null(openclaw, json_path)
    agent = agent_id(o.agent) if o.agent else default_agent(openclaw, str(json_path))
    toml_path = state_dir / TOML_NAME
    toml = load_toml(toml_path)
    tables = toml_tables(toml, toml_path)  # every key checked here, once

    defaults = json_object(json_object(openclaw.get("agents"), f"{json_path}: agents").get("defaults"), f"{json_path}: agents.defaults")
    entry, entry_at = agent_entry(openclaw, agent, str(json_path))
    shared_search = shared_sources(openclaw, f"{json_path}: ")
    own_search = own_sources(entry, entry_at, f"{json_path}: ")

    # The first source that names a workspace, and where it came from (said when it is wrong).
    # Never the current folder: with nothing configured it is OpenClaw's default, as OpenClaw
    # resolves it (a `write` from any folder went to that folder; `--state-dir` elsewhere made the
    # current folder the workspace without a word).
    shared = _text(defaults.get("workspace"), f"{json_path}: agents.defaults.workspace")
    workspace_raw, workspace_source = next((value, where) for value, where in itertools.chain((
        (o.workspace, "given with --workspace"),
        (own_workspace, "from OPENCLAW_WORKSPACE"),
        (_text(toml.get("workspace"), f"{toml_path}: workspace"), f"from {toml_path}: workspace"),
        (_text(entry.get("workspace"), f"{json_path}: {entry_at}.workspace"),
         f"from {json_path}: {entry_at}.workspace"),
    ), _openclaw_workspace(openclaw, agent, shared, state_dir, json_path, env, bool(given))
    ) if value)  # (the last only when needed)

    # Each extra path, as its refusal names it (the key, the variable, the flag), and that refusal.
    extras: list[tuple[Any, str, type[UsageError]]] = []
    for level in (shared_search, own_search):  # the shared ones, then the agent's (an agent's list adds to them, as in OpenClaw)
        value, at = search_key(level, "extraPaths")
        extras += [(item, f"{at}: the extra path", ConfigError) for item in extra_list(value, at)]
    toml_at = f"{toml_path}: extra_paths"
    extras += [(item, f"{toml_at}: the extra path", ConfigError) for item in extra_list(toml.get("extra_paths"), toml_at)]
    env_extra = env_value("OPENCLAW_MEMORY_EXTRA_PATHS", env)
    if env_extra:
        named = f"the extra path {where_set('OPENCLAW_MEMORY_EXTRA_PATHS', env)}"
        extras += [(item, named, UsageError) for item in env_extra.split(os.pathsep)]
    extras += [(item, "the extra path given with --extra", UsageError) for item in o.extra]
    if workspace_source.startswith("OpenClaw's default"):
        _check_default_workspace(expand(str(workspace_raw), env))
    workspace = resolve_workspace(str(workspace_raw), workspace_source, env)  # after the checks of the files' paths: those name their key
    # One no system call takes is refused as -w is, in one short line: kept, it was a warning and a
    # `skipped:` line each echoing it whole (120,000 characters), and `status` failed (exit 1) on it.
    # OpenClaw 2026.9.6 takes none either: its whole listing fails (`memory source scan failed ...
    # ENAMETOOLONG`), as on a path holding a NUL, which a config is refused for here too.
    for item, named, error in extras:
        for extra in normalize_extra_paths([item], workspace):  # as the system gets it: absolute, `~` expanded
            _fits(named, str(extra), error)
    extra_paths = normalize_extra_paths([item for item, _, _ in extras], workspace)

    multimodal = o.multimodal
    if multimodal is None:
        multimodal = switch_env("OPENCLAW_MEMORY_MULTIMODAL", env)
    if multimodal is None and isinstance(toml.get("multimodal"), bool):
        multimodal = toml["multimodal"]
    enabled, modalities = multimodal_setting(own_search, shared_search)
    if multimodal is None:
        multimodal = enabled
    max_results = max_results_setting(own_search, shared_search)

    read_table, prompt_table = tables["read"], tables["prompt"]
    # An agent's own contextLimits object replaces the defaults' whole (OpenClaw's rule).
    limits = entry.get("contextLimits") if isinstance(entry.get("contextLimits"), dict) else defaults.get("contextLimits")
    limits = limits if isinstance(limits, dict) else {}
    read = ReadLimits(
        default_lines=read_table.get("default_lines", ReadLimits.default_lines),
        max_chars=read_table.get("max_chars", js_int(limits.get("memoryGetMaxChars"), ReadLimits.max_chars)),
    )

    def bootstrap(key: str, default: int) -> int:
        value = entry.get(key) if entry.get(key) is not None else defaults.get(key)
        return js_positive(value, default)

    prompt = PromptLimits(
        file_chars=prompt_table.get("file_chars", bootstrap("bootstrapMaxChars", PromptLimits.file_chars)),
        total_chars=prompt_table.get("total_chars", bootstrap("bootstrapTotalMaxChars", PromptLimits.total_chars)),
        startup=startup_context(defaults),
    )
    hybrid: dict[str, Any] = {}
    (_top, _), (defaults_search, _), (legacy_search, _) = shared_search
    _current, (entry_search, _) = own_search
    for source in (legacy_search, defaults_search, entry_search):  # the older spellings, as read before
        table = ((source.get("query") or {}) if isinstance(source.get("query"), dict) else {}).get("hybrid")
        if isinstance(table, dict):
            for key, value in table.items():
                hybrid[key] = {**hybrid[key], **value} if isinstance(value, dict) and isinstance(hybrid.get(key), dict) else value
    resolved = Settings(
        workspace=workspace,
        workspace_spelled=js_resolve(expand(str(workspace_raw), env)),
        agent=agent,
        state_dir=state_dir,
        openclaw_json=json_path,
        extra_paths=tuple(extra_paths),
        multimodal=bool(multimodal and modalities),  # no media kind left: off, as OpenClaw has it
        modalities=modalities,
        max_results=max_results,
        read=read,
        prompt=prompt,
        index=IndexSettings(**tables["index"], configured=bool(toml.get("index"))),
        search=SearchSettings(**tables["search"]),
        history=HistorySettings(**tables["history"]),
        watchdog=WatchdogSettings(**tables["watchdog"]),
        service=ServiceSettings(**tables["service"]),
        qdrant_url=(o.qdrant_url or env_value("OPENCLAW_MEMORY_QDRANT_URL", env) or "").strip() or None,
        session=check_session(o.session or None),
        openclaw_hybrid=hybrid,
        model_cache=default_model_cache(env, state_dir),
        embedding_backend=(env_value("OPENCLAW_MEMORY_EMBEDDING_BACKEND", env) or "").strip() or None,
        embedding_backend_from=set_in("OPENCLAW_MEMORY_EMBEDDING_BACKEND", env),
        openclaw_environ=env,
    )
    return replace(resolved, command_flags=_command_flags(o, resolved))


_OBJECT, _FOLDER, _NUMBER, _ARRAY, _SWITCH = "an object", "a string (a folder path)", "a number", "an array", "true or false"
_SEARCH_KEYS = (("", _OBJECT), (".extraPaths", _ARRAY), (".multimodal", _OBJECT), (".multimodal.enabled", _SWITCH),
                (".multimodal.modalities", _ARRAY), (".query", _OBJECT), (".query.maxResults", _NUMBER))
_AGENT_KEYS = (("", _OBJECT), (".workspace", _FOLDER), (".default", _SWITCH), (".memory", _OBJECT),
               *((f".memory.search{key}", what) for key, what in _SEARCH_KEYS), (".contextLimits", _OBJECT),
               (".contextLimits.memoryGetMaxChars", _NUMBER), (".bootstrapMaxChars", _NUMBER),
               (".bootstrapTotalMaxChars", _NUMBER))
# The keys this product reads that OpenClaw 2026.9.6 refuses as null ("expected object, received null"),
# and what each must be; `*` is any key of an object or item of a list (an agent's entry, a variable).
_NOT_NULL = (
    ("env", _OBJECT), ("env.vars", _OBJECT), ("env.vars.*", "a string"),
    ("memory", _OBJECT), *((f"memory.search{key}", what) for key, what in _SEARCH_KEYS),
    ("agents", _OBJECT), ("agents.ownership", '"explicit"'), ("agents.defaults", _OBJECT),
    ("agents.defaults.workspace", _FOLDER), ("agents.defaults.userTimezone", "a string"),
    ("agents.defaults.contextLimits", _OBJECT), ("agents.defaults.contextLimits.memoryGetMaxChars", _NUMBER),
    ("agents.defaults.bootstrapMaxChars", _NUMBER), ("agents.defaults.bootstrapTotalMaxChars", _NUMBER),
    ("agents.defaults.startupContext", _OBJECT), ("agents.defaults.startupContext.enabled", _SWITCH),
    ("agents.defaults.startupContext.applyOn", _ARRAY),
    *((f"agents.defaults.startupContext.{key}", _NUMBER) for key in ("dailyMemoryDays", "maxFileBytes", "maxFileChars",
                                                                    "maxTotalChars")),
    ("agents.entries", _OBJECT), *((f"agents.entries.*{key}", what) for key, what in _AGENT_KEYS),
    ("agents.list", _ARRAY), *((f"agents.list.*{key}", what) for key, what in _AGENT_KEYS),
)


def _refuse_null(config: dict[str, Any], json_path: Path) -> None:
    """A key this product reads set to ``null`` (written so, or by an ``$include`` of a file holding
    ``null``) is refused, as OpenClaw refuses the config; it was taken as unset (no extra paths, the
    default budget, no ``env.vars``). ``agents.entries`` too where the older ``agents.list`` is beside it:
    OpenClaw takes the key as its roster whatever it holds (readAgentRosterProperty) and refuses the config;
    the list was read in its place, and beside ``{"main": null}`` neither was (another folder's memory)."""
    def walk(value: Any, parts: list[str], done: str, what: str) -> None:
        places: list[tuple[Any, str]]  # (the key or index, and its name)
        if isinstance(value, list) and parts[0] == "*" and done == "agents.list.":
            places = [(index, f"{done.removesuffix('.')}[{index}]") for index in range(len(value))]
        elif isinstance(value, dict):
            places = [(key, f"{done}{key}") for key in (value if parts[0] == "*" else [parts[0]] if parts[0] in value else [])]
        else:
            return
        for key, at in places:
            if len(parts) == 1:
                if value[key] is None:
                    beside = ("; remove it, and the agents.list beside it is read as OpenClaw's doctor --fix moves it"
                              if at == "agents.entries" and "list" in config["agents"] else "")
                    raise ConfigError(f"{json_path}: {at} must be {what}, not null (OpenClaw refuses the config{beside})")
            else:
                walk(value[key], parts[1:], f"{at}.", what)

    agents = config.get("agents")
    keyed = isinstance(agents, dict) and "entries" in agents  # the roster, even null: a list beside it is not read
    for path, what in _NOT_NULL:
        if not (keyed and path.startswith("agents.list")):
            walk(config, path.split("."), "", what)


def _state_dir(given: str | None, flag: str | None, env: Mapping[str, str]) -> Path:
    """The state dir ``given`` (``--state-dir``, named ``flag``, or ``OPENCLAW_STATE_DIR``), else OpenClaw's
    default: its ``.`` and ``..`` folded as text first, as OpenClaw's ``path.resolve`` does (``link/..`` is the
    folder holding ``link``, not the one above its target), then real, so that a symlinked ~/.openclaw and
    the plain path name one service (its settings key); refused where it is not a folder."""
    state_dir = Path(os.path.realpath(js_resolve(expand(given, env)) if given else default_state_dir(env)))
    _fits("the state dir path", str(state_dir), StateDirError)
    _leaves_room(state_dir)
    # Where it came from, where a .env file or openclaw.json set it (the user's shell has no such variable to
    # look at) or OPENCLAW_HOME placed it.
    source = None if flag else (where_set("OPENCLAW_STATE_DIR", env) if set_in("OPENCLAW_STATE_DIR", env) else None) \
        if given else _home_source(env)
    told = f" ({source})" if source else ""
    if os.path.lexists(state_dir) and not state_dir.is_dir():
        raise StateDirError(f"the state dir {state_dir}{told} is not a folder (give --state-dir or OPENCLAW_STATE_DIR a folder)")
    blocker = next((above for above in reversed(state_dir.parents) if os.path.isfile(above)), None) if source else None
    if blocker is not None:  # (else said where it is made, naming the flag)
        raise StateDirError(f"the state dir {state_dir}{told} cannot be made: {blocker} is a file, not a folder; "
                            "give --state-dir or OPENCLAW_STATE_DIR a folder")
    return state_dir


def _openclaw_workspace(openclaw: dict[str, Any], agent: str, shared: str | None, state_dir: Path, json_path: Path,
                        env, state_dir_given: bool) -> Iterator[tuple[str | None, str]]:
    """The workspace OpenClaw gives an agent that has none of its own (its resolveAgentWorkspaceDir),
    with where it came from: ``agents.defaults.workspace`` (``shared``) is the workspace of the agent
    that owns it and holds a folder named after each other agent; with none configured, the owner's
    is ``OPENCLAW_WORKSPACE_DIR``, else ``<state dir>/workspace`` (``~/.openclaw-<profile>/workspace``
    with ``OPENCLAW_PROFILE`` and no state dir given), another's ``<state dir>/workspace-<agent>``."""
    agent = openclaw_agent_id(agent)  # as OpenClaw names the agent's folders
    owner = agent == _workspace_owner(openclaw, str(json_path))
    if shared:
        where = f"from {json_path}: agents.defaults.workspace"
        yield (shared, where) if owner else (os.path.join(expand(shared, env), agent), f"{where}, agent {agent}'s folder in it")
        return
    home_source = None if state_dir_given else _home_source(env)  # (said where OPENCLAW_HOME placed the folder)
    if owner:
        yield openclaw_env("OPENCLAW_WORKSPACE_DIR", env), where_set("OPENCLAW_WORKSPACE_DIR", env)
        profile = openclaw_env("OPENCLAW_PROFILE", env) or ""
        if profile and profile.lower() != "default" and not state_dir_given:
            in_file = set_in("OPENCLAW_PROFILE", env)
            if not re.fullmatch(OPENCLAW_ID, profile):
                raise ConfigError(f"OPENCLAW_PROFILE {shown(profile)}{in_file} is not a profile name (letters, digits, "
                                  "'_' and '-', at most 64, as OpenClaw's --profile takes them)")
            yield (os.path.join(openclaw_home(env), f".openclaw-{profile}", "workspace"),
                   f"OpenClaw's default for OPENCLAW_PROFILE={profile}{in_file}, as no workspace is configured for agent "
                   f"{agent} in {json_path}{f'; {home_source}' if home_source else ''}")
    unset = f"OpenClaw's default, as no workspace is configured for agent {agent} in {json_path}"
    try:
        usual = openclaw_config_path(default_state_dir(env), False, env)  # the one OpenClaw reads, clawdbot.json included
        moved = not json_path.exists() and usual != json_path and usual.is_file()  # `--state-dir` moved the config with it
    except (OSError, StateDirError):  # (a home folder this user may not enter, or none at all)
        moved = False
    if moved:
        unset += f", which does not exist ({usual} is read with OPENCLAW_CONFIG_PATH={usual})"
    if home_source:
        unset += f"; {home_source}"
    # The owner's is in ~/.openclaw whatever state dir a ~/.clawdbot gave (OpenClaw's resolveDefaultAgentWorkspaceDir).
    home_state = state_dir if state_dir_given else Path(openclaw_home(env)) / ".openclaw"
    yield str(home_state / "workspace" if owner else state_dir / f"workspace-{agent}"), unset


def _home_source(env: Mapping[str, str]) -> str | None:
    """``OpenClaw's home H is from OPENCLAW_HOME`` (and the file that set it) where that variable names the
    home OpenClaw's default places are in, for a message about such a place (the shell may have no such
    variable); None where it does not."""
    if _home_value(env.get("OPENCLAW_HOME")) is None:
        return None
    try:
        home = openclaw_home(env)
    except StateDirError:
        return None
    return f"OpenClaw's home {home} is {where_set('OPENCLAW_HOME', env)}"


def _check_default_workspace(path: str) -> None:
    """OpenClaw's default workspace (``<state dir>/workspace``, ``workspace-<agent>``), in a state
    dir another user may add to (1777), is used only when it is this user's (or root's), closed to
    others' writes and not a link (StateDirUnsafe): one another user made there before this user's
    first run took this user's writes and chose what was read. Looked at itself (``lstat``); one this
    user made is theirs, and in a sticky folder no other user can swap it."""
    if not others_may_plant(os.path.dirname(path) or ".", "workspace"):
        return
    try:
        st = os.lstat(path)
    except (OSError, ValueError):
        return  # missing: resolve_workspace says so
    check_planted("workspace", path, st)


def default_agent(openclaw: dict[str, Any], where: str) -> str:
    """The agent a command acts for when none is given (no ``--agent``): OpenClaw's default agent, as
    its own ``memory search`` takes it (resolveDefaultAgentId): the one agent of ``agents.entries``
    marked ``default: true`` (none when two are, or when ``agents.ownership`` is ``explicit``), else
    the only one configured, else ``main`` when none is. The older ``agents.list`` is read as its
    ``doctor --fix`` moves it: after that fix no marker counts in a list of several agents. Several and
    none chosen: OpenClaw refuses to guess; this product keeps ``main`` where it is one of them (its memory,
    as before agents were added), and refuses otherwise: acting as ``main`` there wrote to a workspace
    no agent reads (``workspace-main``), or made its index beside the agents' own."""
    _configured, roster = read_roster(openclaw, where)
    if len(roster) <= 1:  # (an empty agents.entries: OpenClaw says "No agents configured"; main's memory is the one)
        return roster[0][0] if roster else DEFAULT_AGENT
    agents = openclaw["agents"]  # (read_roster found a roster there)
    if isinstance(agents.get("entries"), dict) and agents.get("ownership") != "explicit":
        marked = [agent for agent, _at, entry in roster if entry.get("default") is True]
        if len(marked) == 1:
            return marked[0]
    ids = [agent for agent, _at, _entry in roster]
    if DEFAULT_AGENT in ids:
        return DEFAULT_AGENT
    raise UsageError(f"{where} configures several agents ({', '.join(ids)}) and none is the default (one marked "
                     "`default: true` in agents.entries, and agents.ownership not \"explicit\"): give --agent <id>, "
                     "as OpenClaw's own memory commands ask")


def _workspace_owner(openclaw: dict[str, Any], where: str) -> str | None:
    """The agent ``agents.defaults.workspace`` belongs to, as OpenClaw decides (its
    ``tryResolveDefaultAgentId``): the one agent marked ``default`` (none when two are, or when
    ``agents.ownership`` is ``explicit``), else the only one configured, else ``main`` when no agents
    are configured."""
    configured, roster = read_roster(openclaw, where)
    agents = openclaw.get("agents") or {}
    explicit = agents.get("ownership") == "explicit"
    listed = not isinstance(agents.get("entries"), dict)  # the roster is the older agents.list (see read_roster)
    if not configured or (not roster and listed and not explicit):
        return DEFAULT_AGENT  # an empty agents.list: the fix makes it entries.main
    marked = [key for key, _at, entry in roster if entry.get("default") is True]
    if len(marked) == 1 and not explicit:
        return marked[0]
    if (len(roster) > 1 and listed and "ownership" not in agents
            and all(entry.get("default", False) is False for _key, _at, entry in roster)):
        return roster[0][0]  # the older agents.list, no marker: the fix pins the shared workspace on its first entry
    return roster[0][0] if len(roster) == 1 else None


def _fits(what: str, path: str | None, error: type[UsageError]) -> None:
    """Refuse a path no system call takes (`-w "$NOTE"` holding a note by mistake): in one short line,
    not echoed whole (100,000 characters came back), nor an OSError worded at exit 1. ``what`` names
    it: ``the workspace path``, ``the extra path given with --extra``, ``FILE: KEY: the extra path``."""
    size = _bytes(path) if path else 0
    if size >= PATH_MAX:
        raise error(f"{what} is longer than the system allows ({size:,} bytes; at most {PATH_MAX - 1:,}): "
                    f"{shown(path, 60)}")
    longest = max((_bytes(part) for part in (path or "").split(os.sep)), default=0)
    if longest > NAME_MAX:  # (one folder name of 4,085 bytes was an OSError of exit 1, the path echoed whole)
        raise error(f"{what} holds a name longer than the system allows ({longest:,} bytes; at most "
                    f"{NAME_MAX}): {shown(path, 60)}")


def _leaves_room(state_dir: Path) -> None:
    """Refuse a state dir so long that no data dir below it leaves the state database a path SQLite
    opens: every write failed "unable to open database file (is the state dir writable?)", and
    doctor found nothing (review)."""
    folder = _bytes(str(state_dir / "openclaw-memory" / "workspaces"))
    if folder + 15 > DATA_DIR_USABLE:  # a slash and the shortest name: one character, '-', its 12-digit key
        raise StateDirError(f"the state dir path is too long for the state database ({_bytes(str(state_dir)):,} bytes; "
                            f"at most {DATA_DIR_USABLE - (folder - _bytes(str(state_dir))) - 15:,}: SQLite opens no file "
                            f"whose path is longer than {SQLITE_PATH_MAX} bytes): give a shorter --state-dir")


def _bytes(name: str) -> int:
    """How many bytes the system gets for ``name``: a byte of a name that is not UTF-8 (from argv,
    surrogate-escaped) is one byte, not the three of its escape's UTF-8; a lone surrogate no file
    name can hold (JSON's ``\\ud800``) counts as UTF-8 would write it."""
    try:
        return len(os.fsencode(name))
    except UnicodeEncodeError:
        return len(name.encode("utf-8", "surrogatepass"))


def resolve_workspace(raw: str, source: str | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The workspace's real path (a ``~`` in ``raw``: OpenClaw's home, from ``env``); refused
    (WorkspaceError, naming ``source``: where the path was given or configured) when it is missing,
    not a folder or not readable."""
    _fits("the workspace path", raw, WorkspaceError)
    path = Path(js_resolve(expand(raw, env)))  # `.` and `..` folded as text, as OpenClaw's path.resolve: `link/..` is not the target's parent
    given = f" ({source})" if source else ""
    try:
        # os.path.realpath, not Path.resolve: on a symlink loop Python 3.11's resolve raises
        # RuntimeError (a traceback), realpath the OSError worded below (ELOOP).
        real = Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        raise WorkspaceError(f"workspace not found: {path}{given}{_settings_hint(source, path)}") from None
    except OSError as exc:
        raise WorkspaceError(f"cannot open workspace {path}: {exc.strerror}{given}") from None
    if not real.is_dir():
        raise WorkspaceError(f"workspace is not a folder: {path}{given} (give the folder that holds MEMORY.md)")
    if not os.access(real, os.R_OK | os.X_OK):
        raise WorkspaceError(f"workspace is not readable: {real}{given} (permission denied)")
    return real


def js_resolve(path: str) -> str:
    """Node's ``path.resolve(path)``: absolute against the current folder, ``.`` and ``..`` folded
    as text, a trailing ``/`` dropped, symlinks left as they are (``//x`` is ``/x`` there)."""
    absolute = os.path.abspath(path)
    return "/" + absolute.lstrip("/") if absolute.startswith("//") else absolute


def _settings_hint(source: str | None, path: Path) -> str:
    """The next step for a workspace that is not there: where it was named by hand, make it or name
    another; OpenClaw's default, the ways to name one."""
    if source is None:
        return ""
    if not source.startswith("OpenClaw's default"):
        # A symbolic link to a folder not there: mkdir -p of the link fails ("File exists"); its target is made.
        made = os.path.realpath(path)
        link = f" (a symbolic link to {made})" if os.path.islink(path) else ""
        return f"{link}; make it (`mkdir -p {shell_word(made)}`) or name the folder that holds MEMORY.md"
    here = "; `-w .` for the current folder" if os.path.isfile("MEMORY.md") or os.path.isdir("memory") else ""
    return f"; give one with -w/--workspace, OPENCLAW_WORKSPACE or agents.defaults.workspace in openclaw.json{here}"


def normalize_extra_paths(raw: list, workspace: Path) -> list[ExtraPath]:
    """Trim, drop empties, expand ``~`` (node's ``os.homedir()``, as OpenClaw does for these), resolve relative ones against the workspace, de-duplicate.

    An item is a path or a ``(path, pattern)`` pair; the same folder with two patterns is
    two entries (OpenClaw lists each in turn). Symlinks are not resolved here: the
    scanner must still see (and report) a symlinked extra root.
    """
    seen: set[tuple[str, str]] = set()
    result: list[ExtraPath] = []
    for item in raw:
        path, pattern = (item, "") if isinstance(item, str) else item
        text = js_trim(path)
        pattern = js_trim(pattern).replace("\\", "/")
        if not text:
            continue
        expanded = expand_home_path(text)  # OpenClaw's expandHomePath: node's os.homedir(), never OPENCLAW_HOME
        absolute = absolute_path(expanded, str(workspace))
        if (absolute, pattern) not in seen:
            seen.add((absolute, pattern))
            result.append(ExtraPath(absolute, pattern or None))
    return result
