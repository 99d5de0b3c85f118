"""The workspaces openclaw.json gives its agents: what tells one agent's memory from another's where
they share a state dir (doctor's history left behind, the watchdog's walk, the notes-folder hint)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..files.paths import MEMORY_DIR

if TYPE_CHECKING:
    from ._tree import Settings


class AgentPlaces(NamedTuple):
    """Where openclaw.json puts an agent's memory."""

    workspace: str  # as node's path.resolve spells it (symbolic links kept)
    where: str  # where that came from: its entry's key, or agents.defaults.workspace
    extras: tuple[str, ...]  # its extra paths (the shared ones and its own), absolute


def configured_agents(settings: Settings) -> dict[str, AgentPlaces]:
    """Each agent openclaw.json configures (its roster, and the owner of ``agents.defaults.workspace``)
    by id, with the workspace OpenClaw gives it: its entry's ``workspace``, else its folder under
    ``agents.defaults.workspace`` or OpenClaw's default (resolveAgentWorkspaceDir); and its extra paths.
    Read from openclaw.json alone (``-w``, ``OPENCLAW_WORKSPACE`` and the toml name this command's
    workspace, not another agent's), with the environment the settings were resolved with (its ``.env``
    files' and ``env.vars``' variables: a ``${VAR}``, ``OPENCLAW_STATE_DIR``); empty where it cannot be
    read (the config's own checks say why)."""
    from ..errors import UsageError
    from ._files import load_openclaw
    from ._openclaw import extra_list, json_object, own_sources, read_roster, search_key, shared_sources
    from ._places import expand, openclaw_env
    from ._resolve import _openclaw_workspace, _text, _workspace_owner, js_resolve, normalize_extra_paths

    json_path = settings.config_file
    try:
        openclaw, env = load_openclaw(json_path, os.environ if settings.openclaw_environ is None else settings.openclaw_environ)
        defaults = json_object(json_object(openclaw.get("agents"), f"{json_path}: agents").get("defaults"), "defaults")
        shared = _text(defaults.get("workspace"), "agents.defaults.workspace")
        _configured, roster = read_roster(openclaw, str(json_path))
        entries = {agent: (at, entry) for agent, at, entry in roster}
        owner = _workspace_owner(openclaw, str(json_path))
        if owner is not None:
            entries.setdefault(owner, (f"agents.entries.{owner}", {}))
        given = "--state-dir" in settings.command_flags or openclaw_env("OPENCLAW_STATE_DIR", env) is not None  # (as resolved)
        shared_search = shared_sources(openclaw, f"{json_path}: ")
    except (UsageError, OSError, ValueError):
        return {}
    out: dict[str, AgentPlaces] = {}
    for agent, (at, entry) in entries.items():
        try:
            raw = _text(entry.get("workspace"), "workspace")
            where = f"{at}.workspace"
            if not raw:
                raw = next((value for value, _where in _openclaw_workspace(
                    openclaw, agent, shared, settings.state_dir, json_path, env, given) if value), None)
                where = "agents.defaults.workspace" if shared else "OpenClaw's default"
            if not raw:
                continue
            workspace = js_resolve(expand(raw, env))
            extras: list = []
            for level in (shared_search, own_sources(entry, at, f"{json_path}: ")):
                value, key_at = search_key(level, "extraPaths")
                extras += extra_list(value, key_at)
            paths = tuple(str(p) for p in normalize_extra_paths(extras, Path(workspace)))
        except (UsageError, OSError, ValueError):
            continue  # this agent's own run says what is wrong with its entry
        out[agent] = AgentPlaces(workspace, where, paths)
    return out


def configured_workspaces(settings: Settings) -> dict[str, str]:
    """Each configured agent's workspace (:func:`configured_agents`), by id."""
    return {agent: places.workspace for agent, places in configured_agents(settings).items()}


class Nested(NamedTuple):
    """The workspaces of the other configured agents inside this one, as the watchdog's walk takes them."""

    left_out: frozenset[str]  # workspace-relative folders (``ops/``)
    kept: frozenset[str]  # this agent's memory paths inside them (``ops/shared/`` and ``ops/shared``)


def nested_workspaces(settings: Settings) -> Nested:
    """The workspaces of the other configured agents that lie inside this one, as workspace-relative
    folders (``ops/``): OpenClaw's default layout puts each agent's in ``<agents.defaults.workspace>/<id>``,
    the default agent's own. They are those agents' memory, kept apart by OpenClaw. One that lies in one
    of this agent's memory paths (its ``memory/`` folder, an extra path) is not among them: what is there
    is this agent's notes as well; and such a path inside one (an extra path ``ops/shared``) is kept, in
    both spellings (a folder's with its slash, a file's without: what it is may change)."""

    here = str(settings.workspace).rstrip("/") + "/"

    def inside(path: str) -> str | None:
        real = os.path.realpath(path)
        return real[len(here):] + "/" if real.startswith(here) else None

    mine = [rel for rel in (inside(p) for p in (os.path.join(here, MEMORY_DIR), *settings.extra_paths)) if rel]
    left_out: set[str] = set()
    kept: set[str] = set()
    for agent, path in configured_workspaces(settings).items():
        rel = inside(path) if agent != settings.agent else None
        if rel is None or any(rel.startswith(memory) for memory in mine):
            continue  # elsewhere, this one's, or this agent's own notes all the same (doctor warns of the overlap)
        left_out.add(rel)
        for memory in mine:
            if memory.startswith(rel):
                kept.update((memory, memory[:-1]))
    return Nested(frozenset(left_out), frozenset(kept))


class Overlap(NamedTuple):
    """An agent's workspace in another agent's memory."""

    agent: str  # whose workspace it is
    places: AgentPlaces  # that agent's
    holder: str  # the agent whose memory holds it
    holder_workspace: str
    memory: str  # the holder's memory folder or extra path that holds it


def _real(path: str) -> str:
    return os.path.realpath(path)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def overlaps(agents: dict[str, AgentPlaces]) -> list[Overlap]:
    """Every configured agent's workspace that lies in another agent's memory: its ``memory/`` folder
    (an agent named ``memory`` under ``agents.defaults.workspace`` is given the default agent's, as
    OpenClaw's resolveAgentWorkspaceDir gives it) or one of its extra paths. The holder lists, reads
    and searches the other agent's notes as its own."""

    out = []
    for agent, places in agents.items():
        mine = _real(places.workspace)
        for holder, theirs in agents.items():
            if holder == agent or _real(theirs.workspace) == mine:
                continue  # (a workspace shared outright is the same memory, not a part of another's)
            for memory in (os.path.join(theirs.workspace, MEMORY_DIR), *theirs.extras):
                if _within(mine, _real(memory)):
                    out.append(Overlap(agent, places, holder, theirs.workspace, memory))
                    break
    return out


def configured_overlap(workspace: str, settings: Settings) -> str | None:
    """The warning for this agent's workspace as openclaw.json gives it (``workspace``, real path) where it
    lies in another configured agent's memory (an agent named ``memory`` gets
    ``<agents.defaults.workspace>/memory``, the default agent's memory/ folder, as OpenClaw gives it):
    "give -w <the parent>" would put the agent in the other's workspace outright. None otherwise."""
    agents = configured_agents(settings)
    mine = agents.get(settings.agent)
    if mine is None or os.path.realpath(mine.workspace) != workspace:
        return None
    found = next((o for o in overlaps(agents) if o.agent == settings.agent), None)
    return None if found is None else overlap_text(found)


def overlap_text(o: Overlap) -> str:
    """One agent's workspace in another's memory, said: both agents, the folder, and what to do."""
    if o.places.where == "agents.defaults.workspace":
        given = f"its folder {o.agent}/ in agents.defaults.workspace, as OpenClaw gives an agent with no workspace of its own"
    elif o.places.where == "OpenClaw's default":
        given = "OpenClaw's default"
    else:
        given = f"{o.places.where} in openclaw.json"
    what = (f"the {MEMORY_DIR}/ folder" if os.path.realpath(o.memory) == os.path.realpath(os.path.join(o.holder_workspace, MEMORY_DIR))
            else f"the extra path {o.memory}")
    inside = "is" if os.path.realpath(o.places.workspace) == os.path.realpath(o.memory) else "lies in"
    return (f"agent {o.agent}'s workspace {o.places.workspace} ({given}) {inside} {what} of agent {o.holder}'s "
            f"workspace {o.holder_workspace}: agent {o.holder} lists, reads and searches agent {o.agent}'s notes as its "
            f"own; rename agent {o.agent} or give it a workspace of its own (agents.entries.{o.agent}.workspace in "
            "openclaw.json)")


def workspace_hint(settings: Settings) -> str | None:
    """What to say when the workspace looks like its own ``memory/`` folder (``-w ws/memory``), or
    openclaw.json (no ``-w``) puts it in another agent's memory; None otherwise."""
    from ..files.root import notes_folder_hint

    if "-w" not in settings.command_flags:
        overlap = configured_overlap(os.path.normpath(str(settings.workspace)), settings)
        if overlap is not None:
            return overlap
    return notes_folder_hint(str(settings.workspace))
