"""Checks OpenClaw 2026.9.6's doctor makes that concern memory: no memory system, retired QMD settings.

``openclaw.json`` is OpenClaw's file: these checks read it and say what to change, never
rewrite it (``openclaw doctor --fix`` migrates it).
"""

from __future__ import annotations

import os
import re
import stat

from ..files.paths import CANONICAL_ROOT
from ..fsutil.safeopen import NotRegularFile, open_regular_nofollow
from .model import CheckContext, Finding

AGENTS_FILE = "AGENTS.md"
AGENTS_MAX_BYTES = 1024 * 1024
# OpenClaw's own words (doctor-workspace.ts MEMORY_SYSTEM_PROMPT).
MEMORY_SYSTEM_PROMPT = "\n".join([
    "Memory system not found in workspace.",
    "Paste this into your agent:",
    "",
    "Install the memory system by applying:",
    "https://github.com/openclaw/openclaw/commit/9ffea23f31ca1df5183b25668f8f814bee0fb34e",
    "https://github.com/openclaw/openclaw/commit/7d1fee70e76f2f634f1b41fca927ee663914183a",
])
_MENTION = re.compile(r"\bMEMORY\.md\b", re.ASCII)


def memory_system_missing(workspace: str) -> bool:
    """OpenClaw's ``shouldSuggestMemorySystem``: no ``MEMORY.md`` file and ``AGENTS.md`` never names it."""
    try:
        if CANONICAL_ROOT in os.listdir(workspace) and stat.S_ISREG(os.stat(os.path.join(workspace, CANONICAL_ROOT)).st_mode):
            return False
    except OSError:
        pass
    try:
        fd, st = open_regular_nofollow(os.path.realpath(os.path.join(workspace, AGENTS_FILE)))
    except (OSError, NotRegularFile):
        return True
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(AGENTS_MAX_BYTES + 1)
    if len(data) > AGENTS_MAX_BYTES:
        return True  # OpenClaw's bounded read refuses it, so it counts as not mentioning memory
    return not _MENTION.search(data.decode("utf-8", errors="replace"))


MEMORY_SYSTEM_NOT_FOUND = "memory-system-not-found"  # (left out by doctor --no-workspace-suggestions)


def check_memory_system(ctx: CheckContext) -> list[Finding]:
    if not memory_system_missing(ctx.workspace):
        return []
    return [Finding(
        MEMORY_SYSTEM_NOT_FOUND, "info",
        f"{MEMORY_SYSTEM_PROMPT}\n(OpenClaw's note: there is no MEMORY.md and {AGENTS_FILE} does not mention it; "
        "create MEMORY.md to start the agent's durable memory.)",
        False, (CANONICAL_ROOT,),
    )]


def _record(value: object) -> dict | None:
    return value if isinstance(value, dict) else None


def _qmd_paths(value) -> list[dict]:
    """OpenClaw's ``readRetiredQmdExternalPaths``: the ``{path, pattern}`` entries that migrate."""
    out = []
    for item in value if isinstance(value, list) else []:
        item = _record(item) or {}
        path = raw.strip() if isinstance(raw := item.get("path"), str) else ""
        if not path:
            continue
        pattern = raw.strip() if isinstance(raw := item.get("pattern"), str) else ""
        out.append({"path": path, **({"pattern": pattern} if pattern else {})})
    return out


def _fmt(entries: list[dict]) -> str:
    import json

    return ", ".join(json.dumps(e["path"]) if "pattern" not in e else json.dumps(e) for e in entries)


def retired_qmd_findings(config: dict, where: str) -> list[str]:
    """One message per retired key of ``config`` (OpenClaw's legacy rules), each saying what to change."""
    memory = _record(config.get("memory")) or {}
    search = _record(memory.get("search")) or {}
    messages: list[str] = []
    if "backend" in memory:
        messages.append("memory.backend is retired; builtin memory is now the only memory engine. Remove it.")
    if "qmd" in memory:
        moved = _qmd_paths((_record(memory["qmd"]) or {}).get("paths"))
        messages.append(
            "memory.qmd is retired because the QMD memory backend was removed; configured external paths migrate to "
            "memory.search.extraPaths."
            + (f" Add {_fmt(moved)} to memory.search.extraPaths, then remove memory.qmd." if moved else " Remove memory.qmd.")
        )
    if "qmd" in search:
        moved = _qmd_paths((_record(search["qmd"]) or {}).get("extraCollections"))
        messages.append(
            "memory.search.qmd is retired because the QMD memory backend was removed; configured external collections "
            "migrate to memory.search.extraPaths."
            + (f" Add {_fmt(moved)} to memory.search.extraPaths, then remove memory.search.qmd." if moved
               else " Remove memory.search.qmd.")
        )
    agents = _record(config.get("agents")) or {}
    scopes: list[tuple[str, dict]] = []
    if _record(agents.get("defaults")):
        scopes.append(("agents.defaults", agents["defaults"]))
    for i, entry in enumerate(listed if isinstance(listed := agents.get("list"), list) else []):
        if _record(entry):
            scopes.append((f"agents.list[{i}]" + (f" ({entry['id']})" if isinstance(entry.get("id"), str) else ""), entry))
    for key, entry in (_record(agents.get("entries")) or {}).items():
        if _record(entry):
            scopes.append((f"agents.entries.{key}", entry))
    for scope, entry in scopes:
        agent_search = _record((_record(entry.get("memory")) or {}).get("search")) or {}
        if "qmd" not in agent_search:
            continue
        target = "memory.search.extraPaths" if scope == "agents.defaults" else f"{scope.split(' ')[0]}.memory.search.extraPaths"
        moved = _qmd_paths((_record(agent_search["qmd"]) or {}).get("extraCollections"))
        messages.append(
            f"{scope}.memory.search.qmd is retired because the QMD memory backend was removed; configured external "
            f"collections migrate to {target}."
            + (f" Add {_fmt(moved)} to {target}, then remove it." if moved else " Remove it.")
        )
    return [f"{where}: {m}" for m in messages]


def check_retired_qmd(ctx: CheckContext) -> list[Finding]:
    from ..errors import ConfigError
    from ..settings import load_json5

    path = ctx.settings.config_file  # OPENCLAW_CONFIG_PATH's, or the state dir's (it was always the latter)
    try:
        config = load_json5(path)
    except ConfigError:
        return []  # settings already refused to start with it; nothing more to say here
    messages = retired_qmd_findings(config, str(path))
    if not messages:
        return []
    return [Finding(
        "retired-qmd-settings", "warning",
        "OpenClaw 2026.9.6 retired its QMD memory backend; these settings do nothing now:\n"
        + "\n".join(f"- {m}" for m in messages)
        + "\nopenclaw-memory only reads openclaw.json and never changes it: edit it as above, or run "
        '"openclaw doctor --fix", which migrates it.',
        False, (path.name,),
    )]


def bare_multimodal(config: dict) -> list[str]:
    """Where ``config`` holds ``multimodal: true`` or ``false`` in place of its object: OpenClaw 2026.9.6
    reads no key of it (``true.enabled`` is undefined; its schema refuses the form), and neither does
    this product (settings), so media files are not memory there, whatever it seems to say. Only the
    places settings read (a ConfigError where one is not an object: settings refused it already)."""
    from ..settings import every_agents_sources

    return [f"{at}.multimodal: {str(value).lower()}" for source, at in every_agents_sources(config, "")
            if isinstance(value := source.get("multimodal"), bool)]


def check_bare_multimodal(ctx: CheckContext) -> list[Finding]:
    from ..errors import ConfigError
    from ..settings import load_json5

    path = ctx.settings.config_file
    try:
        found = bare_multimodal(load_json5(path))
    except ConfigError:
        return []  # settings already refused to start with it
    if not found:
        return []
    return [Finding(
        "multimodal-not-an-object", "warning",
        f"{path}: " + "; ".join(found) + ": OpenClaw 2026.9.6 reads no key of a bare true or false (its schema refuses "
        "it), and neither does openclaw-memory: media files are not memory by it. Write {enabled: true} (or false).",
        False, (path.name,),
    )]


CHECKS = [check_memory_system, check_retired_qmd, check_bare_multimodal]
