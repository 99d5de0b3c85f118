"""What openclaw.json says for an agent, read as OpenClaw 2026.9.6 reads it: its roster and entry,
extra paths, startup context, search settings by spelling, switches and counts as JavaScript takes them."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..errors import SURROGATE, ConfigError, cut, shown
from ..files.jstext import js_trim
from ..files.paths import MODALITIES
from ._ids import openclaw_agent_id
from ._places import env_value, path_text, unpathable
from ._tree import DEFAULT_MAX_RESULTS, MAX_WHOLE, StartupContext, is_real

_JSON_TYPES = ((bool, "boolean"), (int, "number"), (float, "number"), (str, "string"), (list, "array"), (dict, "object"))


def json_shown(value: Any, limit: int = 60) -> str:
    """A value of openclaw.json as JSON writes it (``true``, ``null``, ``{"path": "x", "pattern": null}``),
    not as Python shows it (``True``, ``None``), cut short; a lone surrogate as its escape (``\\ud83d``)."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return cut(SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", text), limit)


def json_type(value: Any) -> str:
    """The value's JSON type: boolean, number, string, array, object or null."""
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), "null" if value is None else type(value).__name__)


def json_object(value: Any, where: str) -> dict[str, Any]:
    """A JSON object from OpenClaw's config, absent being empty; anything else is an error naming it."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be an object, not {json_type(value)} {json_shown(value)}")
    return value


# OpenClaw 2026.9.6's agents.entries key (its AgentsSchema: /^[a-z0-9_][a-z0-9_-]{0,63}$/i, which in
# JavaScript folds no letter outside ASCII onto one in it): "a b", "-ops", "a.b", "ＯＰＳ" are refused there.
_ENTRY_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}")


def read_roster(openclaw: dict[str, Any], where: str) -> tuple[bool, list[tuple[str, str, dict[str, Any]]]]:
    """OpenClaw's agents, as (normalized id, where the entry is, entry), in order, and whether a roster
    is configured at all. OpenClaw 2026.9.6 keeps them in ``agents.entries``, an object keyed by id
    (its ``doctor --fix`` moves the older ``agents.list`` array there), and reads ``agents.list``
    only where there is no ``agents.entries``, as that fix moves it (``projectLegacyAgentRosterEntries``):
    an entry without an id is agent ``agent``'s, a second entry of one id is ``<id>-2``'s, and so on
    (an ``agents.entries`` key holding null is the roster too, refused, as OpenClaw reads it).
    A key OpenClaw's schema refuses ("a b", "!!!", over 64 characters) is refused in its words, as is a
    config with two keys of one id ("OPS" and "ops"): neither can be told which of the two an agent is."""
    agents = json_object(openclaw.get("agents"), f"{where}: agents")
    keyed, listed = agents.get("entries"), agents.get("list")
    if "entries" in agents:  # the roster, even null (OpenClaw's readAgentRosterProperty): the list beside it is not read
        if not isinstance(keyed, dict):
            raise ConfigError(f"{where}: agents.entries must be an object keyed by agent id, not {json_shown(keyed)}")
        for key in keyed:  # OpenClaw's schema refuses the whole config, naming each (AgentsSchema's record keys)
            if not _ENTRY_KEY.fullmatch(key):
                named = key if key.isprintable() and len(key) <= 80 else shown(key)  # (one line, and short)
                raise ConfigError(f"{where}: agents.entries.{named}: Invalid key in record")
        first: dict[str, str] = {}
        for key in keyed:
            agent = openclaw_agent_id(key)
            if agent in first:  # OpenClaw's schema refuses it (AgentsSchema), in these words
                raise ConfigError(f'{where}: agents.entries.{key}: agents.entries keys "{first[agent]}" and "{key}" '
                                  f'resolve to the same agent id "{agent}"; rename one key so each agent has a unique id')
            first[agent] = key
        return True, [(openclaw_agent_id(key), f"agents.entries.{key}", entry) for key, entry in keyed.items()
                      if isinstance(entry, dict)]
    if listed is None:
        return False, []
    if not isinstance(listed, list):
        raise ConfigError(f"{where}: agents.list must be an array of agents, not {json_shown(listed)}")
    roster: list[tuple[str, str, dict[str, Any]]] = []
    ids: set[str] = set()
    for index, entry in enumerate(listed):
        if not isinstance(entry, dict):
            continue  # the fix removes it
        given = entry.get("id")
        trimmed = js_trim(given) if isinstance(given, str) else ""  # JavaScript's trim, as OpenClaw's
        wanted = openclaw_agent_id(trimmed or "agent")
        agent, suffix = wanted, 2
        while agent in ids:
            agent, suffix = f"{wanted}-{suffix}", suffix + 1
        ids.add(agent)
        roster.append((agent, f"agents.list[{trimmed if trimmed and agent == wanted else index}]", entry))
    return True, roster


def agent_entry(openclaw: dict[str, Any], agent: str, where: str) -> tuple[dict[str, Any], str]:
    """The agent's entry in openclaw.json (the first whose id is the agent's, as OpenClaw matches
    ids), and where it is, for messages (``{}`` when it has none)."""
    wanted = openclaw_agent_id(agent)
    for key, at, entry in read_roster(openclaw, where)[1]:
        if key == wanted:
            return entry, at
    return {}, f"agents.entries.{wanted}"


def extra_list(value: Any, where: str) -> list:
    """Extra paths as OpenClaw accepts them: strings, or ``{path, pattern}`` objects (a glob filter)."""
    if value is None:
        return []
    if isinstance(value, (str, dict)):
        value = [value]
    if not isinstance(value, list):
        raise ConfigError(f"{where} must be a list of paths or {{path, pattern}} objects")
    out: list = []
    for item in value:
        unknown = sorted(set(item) - {"path", "pattern"}) if isinstance(item, dict) else []
        if unknown:  # (`patern`: taken as no pattern, the folder's every note was memory) OpenClaw's schema is strict
            raise ConfigError(f"{where}: unknown key {json_shown(unknown[0])} in {json_shown(item, 80)} (an entry is "
                              "{path, pattern}; OpenClaw refuses the config)")
        if isinstance(item, str):
            out.append(path_text(item, where))
        elif isinstance(item, dict) and isinstance(item.get("path"), str) and isinstance(item.get("pattern", ""), str):
            out.append((path_text(item["path"], where), _pattern_text(item.get("pattern") or "", item["path"], where)))
        else:
            raise ConfigError(f"{where} must be a list of paths or {{path, pattern}} objects, not {json_shown(item, 80)}")
    return out


def _pattern_text(pattern: str, path: str, where: str) -> str:
    """An extra path's glob; one holding what no file name holds (a NUL character, half a character) is
    refused, naming the pattern: OpenClaw takes it and lists nothing of that extra path."""
    why = unpathable(pattern)
    if why is not None:
        raise ConfigError(f"{where}: the pattern {json_shown(pattern, 80)} of extra path {json_shown(path, 80)} {why}, "
                          "which no file name holds: it matches nothing (OpenClaw lists nothing of that extra path); "
                          "remove it or the extra path")
    return pattern


def js_int(value: Any, default: int, low: int | None = 1, high: int | None = None) -> int:
    """OpenClaw's ``resolveIntegerOption``: a finite number floored and clamped, anything else the default."""

    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else default
    number = math.floor(number)
    if low is not None:
        number = max(low, number)
    return number if high is None else min(high, number)


def js_positive(value: Any, default: int) -> int:
    """OpenClaw's bootstrap limit rule: a finite number above 0, floored; else the default."""

    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return math.floor(value)
    return default


def startup_context(defaults: dict[str, Any]) -> StartupContext:
    raw = defaults.get("startupContext")
    raw = raw if isinstance(raw, dict) else {}
    apply_on = raw.get("applyOn")
    tz = defaults.get("userTimezone")
    return StartupContext(
        enabled=raw.get("enabled") is not False,
        apply_on=tuple(a for a in apply_on if isinstance(a, str)) if isinstance(apply_on, list) else (),
        daily_memory_days=js_int(raw.get("dailyMemoryDays"), 2, 1, 14),
        max_file_bytes=js_int(raw.get("maxFileBytes"), 16_384, 1, 65_536),
        max_file_chars=js_int(raw.get("maxFileChars"), 1_200, 1, 10_000),
        max_total_chars=js_int(raw.get("maxTotalChars"), 2_800, 1, 50_000),
        user_timezone=tz.strip() or None if isinstance(tz, str) else None,
    )


def timezone_problem(name: str | None) -> str | None:
    """What is wrong with openclaw.json's ``agents.defaults.userTimezone``, or None. A zone this
    system does not know is not refused: OpenClaw takes the host's zone then, and so does the
    prompt (``prompt.startup``); but it is said, with the closest known name."""
    if not name:
        return None
    import datetime as dt
    import difflib
    from zoneinfo import available_timezones

    from ..timezones import host_zone, resolve_zone

    if resolve_zone(name) is not None:  # as OpenClaw (JavaScript's Intl) takes it
        return None
    close = difflib.get_close_matches(name, sorted(available_timezones()), n=1)
    meant = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"openclaw.json's agents.defaults.userTimezone {shown(name)} is not a time zone this system knows{meant}: "
            f"today's date comes from the host's zone ({dt.datetime.now(host_zone()).tzname()}), as in OpenClaw")


_SWITCH_WORDS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


def switch_env(name: str, environ) -> bool | None:
    """An on/off environment variable (unset or empty: None). A word that is neither is refused: a
    setting given and then silently taken as off (OPENCLAW_MEMORY_MULTIMODAL=enabled) was lost, and
    OPENCLAW_MEMORY_SERVICE=of used the service."""
    value = env_value(name, environ)
    if value is None:
        return None
    switch = _SWITCH_WORDS.get(value.strip().lower())
    if switch is None:
        raise ConfigError(f"{name} must be 1, true, yes or on (or 0, false, no, off), not {shown(value)}")
    return switch


Sources = tuple[tuple[dict[str, Any], str], ...]  # one level's search settings, by spelling, the current first


def shared_sources(openclaw: dict[str, Any], where: str) -> Sources:
    """The search settings every agent shares, by spelling, the current first: OpenClaw 2026.9.6 reads
    only the top-level `memory.search`, and its startup migration (as `doctor --fix`) fills a key of it
    from the older spellings only where it is missing (agents.defaults.memorySearch, then the top-level
    memorySearch). ``where`` starts each place's name (``"<openclaw.json>: "``)."""
    defaults = json_object(json_object(openclaw.get("agents"), f"{where}agents").get("defaults"), f"{where}agents.defaults")
    top = json_object(json_object(openclaw.get("memory"), f"{where}memory").get("search"), f"{where}memory.search")
    return ((top, f"{where}memory.search"),
            (json_object(defaults.get("memorySearch"), f"{where}agents.defaults.memorySearch"), f"{where}agents.defaults.memorySearch"),
            (json_object(openclaw.get("memorySearch"), f"{where}memorySearch"), f"{where}memorySearch"))


def own_sources(entry: dict[str, Any], entry_at: str, where: str) -> Sources:
    """An agent's own search settings (its entry at ``entry_at``), the current spelling first (its
    `memorySearch` fills what its `memory.search` lacks)."""
    memory = json_object(entry.get("memory"), f"{where}{entry_at}.memory")
    return ((json_object(memory.get("search"), f"{where}{entry_at}.memory.search"), f"{where}{entry_at}.memory.search"),
            (json_object(entry.get("memorySearch"), f"{where}{entry_at}.memorySearch"), f"{where}{entry_at}.memorySearch"))


def every_agents_sources(openclaw: dict[str, Any], where: str) -> Sources:
    """Every place of openclaw.json a memory search setting is read from, for any agent: the shared
    levels, then each configured agent's own (as :func:`read_roster` lists them)."""
    places = list(shared_sources(openclaw, where))
    for _key, at, entry in read_roster(openclaw, where.removesuffix(": "))[1]:
        try:
            places += own_sources(entry, at, where)
        except ConfigError:  # another agent's entry no setting of this one reads: its own run refuses it
            continue
    return tuple(places)


def search_key(sources: Sources, *keys: str) -> tuple[Any, str]:
    """The value at ``keys`` (``"multimodal", "enabled"``) of the first of ``sources`` that sets it, and
    where it is: OpenClaw's migration of an older spelling (its mergeMissing) fills a key only where the
    current spelling lacks it. A bare ``multimodal: true`` or ``false`` is kept by that migration (the
    level's older spellings are not read) and holds no key (``true.enabled`` is undefined to OpenClaw
    2026.9.6: the other level, or the default, decides); it was read as ``{enabled: true}``, media
    files OpenClaw does not list listed as memory."""
    for source, at in sources:
        value: Any = source
        for depth, key in enumerate(keys):
            value = value.get(key)
            if key == "multimodal" and isinstance(value, bool):
                return None, f"{at}.{'.'.join(keys)}"
            if value is None:
                break
            if depth < len(keys) - 1 and not isinstance(value, dict):  # (the migration would keep it in the way)
                what = "{enabled: true|false, modalities: [...]}" if key == "multimodal" else "an object"
                raise ConfigError(f"{at}.{'.'.join(keys[:depth + 1])} must be {what}, not {json_shown(value)}")
        else:
            return value, f"{at}.{'.'.join(keys)}"
    return None, f"{sources[0][1]}.{'.'.join(keys)}"


def multimodal_setting(own: Sources, shared: Sources) -> tuple[bool | None, tuple[str, ...]]:
    """``multimodal.enabled`` and the media kinds of ``multimodal.modalities``, each the agent's own
    before the shared one (OpenClaw's ``overrides?.multimodal?.x ?? defaults?.multimodal?.x``):
    ``["image"]``, ``["audio"]``, ``["all"]`` (or none given: both)."""
    def first(key: str) -> tuple[Any, str]:
        value, at = search_key(own, "multimodal", key)
        return (value, at) if value is not None else search_key(shared, "multimodal", key)

    enabled, at = first("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        raise ConfigError(f"{at} must be true or false, not {json_shown(enabled)}")
    kinds, at = first("modalities")
    if kinds is None:
        return enabled, MODALITIES
    if not isinstance(kinds, list) or not all(k in ("image", "audio", "all") for k in kinds):
        raise ConfigError(f"{at} must be a list of \"image\", \"audio\" or \"all\", not {json_shown(kinds)}")
    return enabled, MODALITIES if "all" in kinds else tuple(k for k in MODALITIES if k in kinds)


def max_results_setting(own: Sources, shared: Sources) -> int:
    """``query.maxResults``, the agent's own before the shared one, else OpenClaw's default. An
    older flat ``maxResults`` counts where ``query.maxResults`` is missing, as OpenClaw migrates it."""
    for level in (own, shared):
        value, at = search_key(level, "query", "maxResults")
        if value is None:
            value, at = search_key(level, "maxResults")
        if value is None:
            continue
        # OpenClaw's schema: a positive whole number (2.0 is one); it refuses the config otherwise.
        if not is_real(value) or value < 1 or value != int(value):
            raise ConfigError(f"{at} must be a whole number of at least 1, not {json_shown(value)}")
        return min(int(value), MAX_WHOLE)
    return DEFAULT_MAX_RESULTS
