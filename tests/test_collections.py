"""Collection naming: sanitize, agent scope, clashes, stable custom numbers, file assignment."""

from __future__ import annotations

import dataclasses

import pytest
from test_serve import start

from conftest import settings_for, write
from openclaw_memory.database import Database
from openclaw_memory.files.scan import scan_memory_files
from openclaw_memory.index.collections import assign_files, resolve_collections, sanitize, scoped_name


def test_sanitize_rules():
    assert sanitize("Main") == "main"
    assert sanitize("  My Agent!! v2 ") == "my-agent-v2"
    assert sanitize("--a__b--") == "a-b"
    assert sanitize("日本語") == "collection"
    assert sanitize("") == "collection"
    assert scoped_name("memory-root", "Ops Bot") == "memory-root-ops-bot"


def test_default_names_and_patterns(workspace, state_dir):
    names = [c.name for c in resolve_collections(settings_for(workspace, state_dir, agent="ops_bot"))]
    assert names == ["memory-root-ops-bot", "memory-dir-ops-bot"]
    root, tree = resolve_collections(settings_for(workspace, state_dir))
    assert root.pattern.startswith("MEMORY.md") and not root.recursive
    assert tree.pattern == "**/*.md" and tree.root == str(workspace / "memory") and tree.recursive


def test_agents_that_sanitize_alike_get_suffixes(workspace, state_dir):
    # (agent ids as OpenClaw normalizes them: `A b` is `a-b` itself, so these are three agents)
    first = resolve_collections(settings_for(workspace, state_dir, agent="a-b"), register=True)
    second = resolve_collections(settings_for(workspace, state_dir, agent="a_b"), register=True)
    third = resolve_collections(settings_for(workspace, state_dir, agent="a--b"), register=True)
    assert [c.name for c in first] == ["memory-root-a-b", "memory-dir-a-b"]
    assert [c.name for c in second] == ["memory-root-a-b-2", "memory-dir-a-b-2"]
    assert [c.name for c in third] == ["memory-root-a-b-3", "memory-dir-a-b-3"]
    # Stable: asking again gives the same names, in any order of agents.
    assert [c.name for c in resolve_collections(settings_for(workspace, state_dir, agent="a_b"))] == [c.name for c in second]


def test_custom_numbers_stay_stable_when_an_extra_path_is_removed(workspace, state_dir, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    both = resolve_collections(settings_for(workspace, state_dir, extra=(str(one), str(two))), register=True)
    assert [c.name for c in both][2:] == ["custom-1-main", "custom-2-main"]
    only_two = resolve_collections(settings_for(workspace, state_dir, extra=(str(two),)), register=True)
    assert [c.name for c in only_two][2:] == ["custom-2-main"]
    three = tmp_path / "three"
    three.mkdir()
    again = resolve_collections(settings_for(workspace, state_dir, extra=(str(three), str(two))), register=True)
    # position 1 is free for the new path only if no earlier path of this agent holds it
    assert [c.name for c in again][2:] == ["custom-3-main", "custom-2-main"]
    names = [row[0] for row in Database(settings_for(workspace, state_dir).data_dir).rows("SELECT name FROM collections")]
    assert len(set(names)) == len(names) == 5


def test_unregistered_lookup_writes_nothing(workspace, state_dir):
    settings = settings_for(workspace, state_dir)
    resolve_collections(settings)
    assert Database(settings.data_dir).rows("SELECT name FROM collections") == []


def test_files_are_assigned_to_their_collection(workspace, state_dir, tmp_path):
    extra = tmp_path / "notes"
    write(workspace / "MEMORY.md", "# root\n")
    write(workspace / "DREAMS.md", "# dreams\n")
    write(workspace / "USER.md", "# user\n")
    write(workspace / "memory" / "a.md", "a\n")
    write(workspace / "memory" / "deep" / "b.md", "b\n")
    write(extra / "c.md", "c\n")
    single = write(tmp_path / "single.md", "d\n")
    settings = settings_for(workspace, state_dir, extra=(str(extra), str(single)))
    collections = resolve_collections(settings)
    scan = scan_memory_files(settings.workspace, extra_paths=settings.extra_paths, agent=settings.agent)
    groups = {name: sorted(f.path for f in files) for name, files in assign_files(collections, scan.files).items()}
    assert groups == {
        "memory-root-main": ["DREAMS.md", "MEMORY.md", "USER.md"],
        "memory-dir-main": ["memory/a.md", "memory/deep/b.md"],
        "custom-1-main": ["../notes/c.md"],  # relative to the workspace, as OpenClaw indexes them
        "custom-2-main": ["../single.md"],
    }
    assert collections[3].pattern == "single.md" and not collections[3].recursive


@pytest.mark.parametrize("mode", ["in-process", "service"])
def test_collections_is_one_frozen_result_whose_json_is_what_the_cli_prints(cli, workspace, state_dir, services, mode):
    """``Memory.collections()`` returned a plain list (its JSON a bare array) while `collections --json`
    printed {agent, collections}: one CollectionsResult now, from the library, the service and the CLI.
    `status --json` is the library's IndexStatus with the memory's ``service()`` beside it."""
    from openclaw_memory import CollectionInfo, CollectionsResult
    from openclaw_memory.memory import open_memory
    from openclaw_memory.wire import to_json

    write(workspace / "MEMORY.md", "# Memory\n")
    if mode == "service":
        start(services, workspace, state_dir, "--no-watch")
    memory = open_memory(settings_for(workspace, state_dir), in_process=mode == "in-process")
    try:
        result = memory.collections()
        status, service = memory.status(), memory.service()
    finally:
        memory.close()
    assert isinstance(result, CollectionsResult) and result.agent == "main"
    assert isinstance(result.collections, tuple) and all(isinstance(c, CollectionInfo) for c in result.collections)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.agent = "other"  # type: ignore[misc]
    assert to_json(result) == cli("collections", "--json").json()
    shown = cli("status", "--json").json()
    assert shown.pop("service")["running"] is (mode == "service") is service.running
    assert to_json(status) == shown
