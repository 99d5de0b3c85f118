"""One JSON style: every key every command prints is camelCase and documented in docs/cli.md."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import threading

import pytest

from conftest import REPO, run_paused, settings_for, write
from openclaw_memory.service_files import service_dir, socket_address, socket_path

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


def _fake_service(settings) -> socket.socket:
    """A program on the service's socket that speaks no JSON-RPC: `status` says the service runs and
    refused it (``service`` {``running``, ``note``, ``refused``})."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    os.makedirs(service_dir(settings), exist_ok=True)
    with socket_address(settings) as address:  # (a tmp path past the 107 bytes AF_UNIX takes)
        listener.bind(address)
    listener.listen()

    def answer() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                with conn:
                    conn.recv(65536)
                    conn.sendall(b"{}\n")

    threading.Thread(target=answer, daemon=True).start()
    return listener


def test_index_commands_speak_documented_camel_case(cli, workspace, state_dir, tmp_path, services):
    """`index`, `status`, `search` and `collections` in a workspace that makes them print their
    optional keys too: `status`'s `leftOut` and `search`'s `filteredOut` were in no row, as no
    workspace here printed them (a note whose name is not UTF-8; filters that admit no file)."""
    from test_serve import start

    shutil.copytree(REPO / "fixtures" / "workspace", workspace, dirs_exist_ok=True)
    write(workspace / "memory" / "people" / "copy.md", (workspace / "memory" / "2026-11-30.md").read_text())  # alsoIn
    write(workspace / os.fsdecode(b"memory/n\xe9.md"), "x\n")  # left out: its name is not UTF-8
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)  # status's git: untracked notes
    extra = tmp_path / "extra"
    write(extra / ".git", "not a gitdir line\n")  # status's gitNotes: a repository git cannot read
    write(extra / "notes.md", "# Notes\n\nGreen tea in the morning.\n")
    write(extra / "photo.png", b"\x89PNG\r\n\x1a\n")  # status's notIndexable (with --multimodal)
    flags = ("--extra", str(extra), "--multimodal")

    printed: dict[str, set[str]] = {}

    def run(row: str, *argv: str, code: int = 0) -> dict:
        res = cli(*flags, *argv, "--json")
        assert res.returncode == code, res.stderr
        keys = keys_of(res.json(), set())
        bad = sorted(k for k in keys if not CAMEL.match(k))
        assert not bad, f"{argv}: keys not camelCase: {bad}"
        missing = sorted(keys - ROWS[row])
        assert not missing, f"{argv}: keys missing from the row `{row}` of docs/cli.md's JSON keys: {missing}"
        printed.setdefault(row, set()).update(keys)
        return res.json()

    run("index", "index")
    run("status", "status")
    run("collections", "collections")
    run("search", "search", "flaky race between the watcher and the indexer", "--mode", "hybrid")
    run("search", "search", "nothing", "--path", "nomatch/*")
    write(workspace / "MEMORY.md", "# Memory\n\nChanged since the last index.\n")
    run("search", "search", "memory", "--no-sync")

    def meanwhile() -> None:  # an index run going on
        run("status", "status")
        run("search", "search", "memory")

    write(workspace / "memory" / "2026-12-02.md", "# 2026-12-02\n\nA note the paused run embeds.\n")
    code, _, err = run_paused(workspace, state_dir, (*flags, "index"), "index:embedded:1", meanwhile)
    assert code == 0, err

    settings = settings_for(workspace, state_dir, extra=[str(extra)], multimodal=True)
    listener = _fake_service(settings)
    try:
        run("status", "status")
    finally:
        listener.close()
        os.unlink(socket_path(settings))
    start(services, workspace, state_dir, *flags, "--http", "127.0.0.1:0")
    run("status", "status")

    # The optional keys, printed: a workspace that no longer printed one would no longer check it.
    optional = {"status": {"leftOut", "notIndexable", "git", "gitNotes", "indexRunningPid", "note", "refused", "pid",
                           "uptimeS", "lockWaits", "maxMs", "untracked"},
                "search": {"filteredOut", "vectorScore", "textScore", "alsoIn", "date", "notes", "stale", "warning",
                           "action", "stalePaths", "updating", "passages"},
                "index": {"notes"}}
    for row, keys in optional.items():
        assert keys <= printed[row], f"{row}: not printed: {sorted(keys - printed[row])}"
