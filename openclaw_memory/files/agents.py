"""The workspaces openclaw.json gives its agents: what tells one agent's memory from another's where
they share a state dir (doctor's history left behind, the watchdog's walk, the notes-folder hint)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..settings import Settings


def configured_workspaces(settings: Settings) -> dict[str, str]:
    """Each agent openclaw.json configures (its roster, and the owner of ``agents.defaults.workspace``)
    by id, with the workspace OpenClaw gives it: its entry's ``workspace``, else its folder under
    ``agents.defaults.workspace`` or OpenClaw's default (resolveAgentWorkspaceDir), as node's
    path.resolve spells it. Read from openclaw.json alone (``-w``, ``OPENCLAW_WORKSPACE`` and the toml
    name this command's workspace, not another agent's); empty where it cannot be read (the config's
    own checks say why)."""
    from ..errors import UsageError
    from ..settings._files import load_openclaw
    from ..settings._openclaw import json_object, read_roster
    from ..settings._places import expand
    from ..settings._resolve import _openclaw_workspace, _text, _workspace_owner, js_resolve

    json_path = settings.config_file
    try:
        openclaw, env = load_openclaw(json_path, os.environ)
        defaults = json_object(json_object(openclaw.get("agents"), f"{json_path}: agents").get("defaults"), "defaults")
        shared = _text(defaults.get("workspace"), "agents.defaults.workspace")
        _configured, roster = read_roster(openclaw, str(json_path))
        entries = {agent: entry for agent, _at, entry in roster}
        owner = _workspace_owner(openclaw, str(json_path))
        if owner is not None:
            entries.setdefault(owner, {})
        given = "--state-dir" in settings.command_flags or "OPENCLAW_STATE_DIR" in env
        out: dict[str, str] = {}
        for agent, entry in entries.items():
            raw = _text(entry.get("workspace"), "workspace") or next(
                (value for value, _where in _openclaw_workspace(openclaw, agent, shared, settings.state_dir, json_path,
                                                                  env, given) if value), None)
            if raw:
                out[agent] = js_resolve(expand(raw, env))
        return out
    except (UsageError, OSError, ValueError):
        return {}


def nested_workspaces(settings: Settings) -> frozenset[str]:
    """The workspaces of the other configured agents that lie inside this one, as workspace-relative
    folders (``ops/``): OpenClaw's default layout puts each agent's in ``<agents.defaults.workspace>/<id>``,
    the default agent's own. They are those agents' memory, kept apart by OpenClaw. One in this
    workspace's ``memory/`` folder is not among them: what is there is this agent's notes as well."""
    here = str(settings.workspace)
    out = set()
    for agent, path in configured_workspaces(settings).items():
        if agent == settings.agent:
            continue
        real = os.path.realpath(path)
        if real != here and real.startswith(here.rstrip("/") + "/"):
            rel = real[len(here.rstrip("/")) + 1:]
            if rel.split("/")[0] != "memory":  # this agent's own notes all the same (doctor warns of the overlap)
                out.add(rel + "/")
    return frozenset(out)
