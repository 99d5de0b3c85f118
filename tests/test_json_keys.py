"""One JSON style: every key every command prints is camelCase and documented in docs/cli.md."""

from __future__ import annotations

import re
import shutil

import pytest

from conftest import REPO

CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")
DOCUMENTED = set(re.findall(r"`([A-Za-z]+)`", (REPO / "docs" / "cli.md").read_text(encoding="utf-8").split("## JSON keys", 1)[1]))

LIGHT = [
    ["files"], ["read", "MEMORY.md"], ["read", "MEMORY.md", "--diff"], ["prompt", "--peek"], ["doctor"], ["state"],
    ["history", "MEMORY.md"], ["log"], ["watchdog", "snapshot"], ["watchdog", "verify"], ["watchdog", "heartbeat"],
    ["write", "memory/2026-12-01.md", "--append", "x", "--no-index"], ["doctor", "--fix"], ["read", "notes.txt"],
]


def keys_of(value, found: set[str]) -> set[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            found.add(key)
            keys_of(item, found)
    elif isinstance(value, list):
        for item in value:
            keys_of(item, found)
    return found


def test_light_commands_speak_documented_camel_case(cli, workspace):
    shutil.copytree(REPO / "fixtures" / "workspace", workspace, dirs_exist_ok=True)
    for argv in LIGHT:
        res = cli(*argv, "--json")
        keys = keys_of(res.json(), set())
        bad = sorted(k for k in keys if not CAMEL.match(k))
        assert not bad, f"{argv}: keys not camelCase: {bad}"
        missing = sorted(keys - DOCUMENTED)
        assert not missing, f"{argv}: keys missing from docs/cli.md: {missing}"


@pytest.mark.parametrize("key", ["break_count", "taken_at", "guard_ms"])
def test_the_old_snake_case_keys_are_gone(key):
    assert key not in DOCUMENTED
