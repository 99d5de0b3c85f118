"""One JSON style: every key every command prints is camelCase and documented in docs/cli.md."""

from __future__ import annotations

import re
import shutil

import pytest

from conftest import REPO

CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")
TABLE = (REPO / "docs" / "cli.md").read_text(encoding="utf-8").split("## JSON keys", 1)[1]
DOCUMENTED = set(re.findall(r"`([A-Za-z]+)`", TABLE))


def _rows() -> dict[str, set[str]]:
    """Each row of the table: the keys it names, and those of the rows it refers to (`index` (as
    `write`'s), `verify` (a `verify` result), `sync` (an `index` summary), the keys of a `read`)."""
    named: dict[str, tuple[set[str], list[str]]] = {}
    for names, keys in re.findall(r"^\| ([^|]+?) \| (.+) \|$", TABLE, re.M)[1:]:  # (the header)
        refers = re.findall(r"(?:as `([^`]+)`'s|an? `([^`]+)` (?:result|summary)|the keys of an? `([^`]+)`)", keys)
        for name in re.findall(r"`([^`]+)`", names) or [names]:
            named[name] = set(re.findall(r"`([A-Za-z]+)`", keys)), ["".join(r) for r in refers]
    by_word = {name.split()[-1]: name for name in named} | {name: name for name in named}  # `verify`: watchdog verify
    rows = {}
    for name in named:
        seen, todo = set(), [name]
        while todo:
            row = by_word[todo.pop()]
            if row not in seen:
                seen.add(row)
                todo += named[row][1]
        rows[name] = {k for row in seen for k in named[row][0]}
    return rows


ROWS = _rows()

LIGHT = [
    ("files", ["files"]), ("read", ["read", "MEMORY.md"]), ("read --diff", ["read", "MEMORY.md", "--diff"]),
    ("prompt", ["prompt", "--peek"]), ("doctor", ["doctor"]), ("state", ["state"]), ("history", ["history", "MEMORY.md"]),
    ("log", ["log"]), ("watchdog snapshot", ["watchdog", "snapshot"]), ("watchdog verify", ["watchdog", "verify"]),
    ("watchdog heartbeat", ["watchdog", "heartbeat"]), ("write", ["write", "memory/2026-12-01.md", "--append", "x", "--no-index"]),
    ("doctor", ["doctor", "--fix"]), ("errors", ["read", "notes.txt"]), ("links", ["links"]),
    ("links", ["links", "memory/people/contacts.md"]), ("serve", ["serve", "--stop"]),
    ("mv", ["mv", "memory/2026-12-01.md", "memory/moved.md", "--no-index"]), ("rm", ["rm", "memory/moved.md", "--no-index"]),
    ("restore", ["restore", "memory/moved.md", "--last", "--no-index"]),
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
    """Each command's keys are in its own row (or a row it refers to): `links` had no row, and
    `serve --stop`'s `stopped` was in none."""
    shutil.copytree(REPO / "fixtures" / "workspace", workspace, dirs_exist_ok=True)
    (workspace / "memory" / "people" / "contacts.md").write_text("# People\n\nSee [[2026-11-30]] and [[nobody]].\n")
    for row, argv in LIGHT:
        res = cli(*argv, "--json")
        keys = keys_of(res.json(), set())
        bad = sorted(k for k in keys if not CAMEL.match(k))
        assert not bad, f"{argv}: keys not camelCase: {bad}"
        assert row in ROWS, f"docs/cli.md's JSON keys table has no row for `{row}`"
        missing = sorted(keys - ROWS[row])
        assert not missing, f"{argv}: keys missing from the row `{row}` of docs/cli.md's JSON keys: {missing}"


@pytest.mark.parametrize("key", ["break_count", "taken_at", "guard_ms"])
def test_the_old_snake_case_keys_are_gone(key):
    assert key not in DOCUMENTED
