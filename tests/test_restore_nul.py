"""A restore puts back a stored version holding a NUL byte as it was, and says the index leaves it out."""

from __future__ import annotations

from conftest import write

HELD = b"# a\n- one\n- x\x00y\n"
NUL_AT = HELD.index(b"\x00")


def _held_version(cli, workspace) -> str:
    write(workspace / "memory" / "a.md", HELD)
    listed = cli("history", "memory/a.md", "--json")  # the history sees that version
    assert listed.returncode == 0, listed.stderr
    return cli("read", "memory/a.md", "--json").json()["version"]


def test_a_restore_of_a_version_holding_a_nul_warns_that_search_leaves_the_file_out(cli, workspace):
    write(workspace / "memory" / "a.md", "# a\n- one\n")
    assert cli("index").returncode == 0
    assert cli("search", "one", "--json").json()["results"]  # found while it is text
    version = _held_version(cli, workspace)
    write(workspace / "memory" / "a.md", "# a\n- two\n")
    restored = cli("restore", "memory/a.md", version[:12])
    assert restored.returncode == 0, restored.stderr
    assert (workspace / "memory" / "a.md").read_bytes() == HELD  # exactly what was there
    assert f"the restored version holds a NUL byte at offset {NUL_AT}" in restored.stderr, restored.stderr
    assert "memory-file-not-text" in restored.stderr and "until the NUL is removed" in restored.stderr
    assert restored.stdout.startswith("restored memory/a.md to version")

    write(workspace / "memory" / "a.md", "# a\n- two\n")
    as_json = cli("restore", "memory/a.md", version[:12], "--json")
    assert as_json.returncode == 0, as_json.stderr
    (warning,) = as_json.json()["warnings"]
    assert f"memory/a.md: the restored version holds a NUL byte at offset {NUL_AT}" in warning
    # What the warning says: search does not find the note.
    found = cli("search", "one", "--json")
    assert found.returncode == 0, found.stderr
    assert found.json()["results"] == [], found.stdout


def test_a_restore_to_the_version_the_file_holds_still_names_its_nul(cli, workspace):
    version = _held_version(cli, workspace)
    same = cli("restore", "memory/a.md", version[:12], "--json")
    assert same.returncode == 0, same.stderr
    assert same.json()["changed"] is False
    assert any(f"NUL byte at offset {NUL_AT}" in w for w in same.json()["warnings"])


def test_a_restore_of_a_text_version_has_no_such_warning(cli, workspace):
    write(workspace / "memory" / "a.md", "# a\n- one\n")
    assert cli("history", "memory/a.md").returncode == 0
    version = cli("read", "memory/a.md", "--json").json()["version"]
    write(workspace / "memory" / "a.md", "# a\n- two\n")
    restored = cli("restore", "memory/a.md", version[:12], "--json")
    assert restored.returncode == 0, restored.stderr
    assert "warnings" not in restored.json() and "NUL" not in restored.stderr


def test_a_rollback_bringing_back_a_version_holding_a_nul_says_so(cli, workspace):
    import time

    from openclaw_memory.rollback.plan import iso_moment

    _held_version(cli, workspace)
    moment = time.time()
    while time.time() <= moment + 0.001:  # every later entry after the moment
        time.sleep(0.001)
    assert cli("read", "memory/a.md").returncode == 0
    assert cli("write", "memory/a.md", "--append", "- two").returncode == 0
    done = cli("rollback", "--to", iso_moment(moment + 2e-6), "--force", "--json")
    assert done.returncode == 0, done.stderr
    assert (workspace / "memory" / "a.md").read_bytes() == HELD
    assert any(f"memory/a.md: the restored version holds a NUL byte at offset {NUL_AT}" in w
               for w in done.json()["warnings"]), done.stdout
