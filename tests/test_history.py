"""The version store: history, restore (and undoing it), retention, LRU eviction, read --diff."""

from __future__ import annotations

import itertools
import os

import pytest
import xxhash

from conftest import settings_for, sql_statements, write
from openclaw_memory.database import Database
from openclaw_memory.history.objects import ObjectStore
from openclaw_memory.history.stale import read_here
from openclaw_memory.history.store import HistoryStore
from openclaw_memory.log.activity import changed_lines
from openclaw_memory.memory.local import LocalMemory
from openclaw_memory.wire import to_json


def incompressible(size: int) -> bytes:
    """Random bytes (they do not compress) a write takes: no NUL, which a write refuses (NulInText)."""
    return os.urandom(size).replace(b"\0", b"\1")


def version_of(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def configure(state_dir, **history):
    body = "".join(f"{k} = {v}\n" for k, v in history.items())
    write(state_dir / "openclaw-memory.toml", f"[history]\n{body}")


def object_files(state_dir, workspace) -> set[str]:
    store = HistoryStore(settings_for(workspace, state_dir).data_dir)
    return store.objects.versions()


def stored_size(objects, version: str) -> int:
    """The compressed bytes of a stored version, counted from its parts."""
    return sum(len(row[0]) for row in objects.db.rows("SELECT data FROM object_parts WHERE version = ?", (version,)))


V1 = b"first version\r\nwith CRLF, caf\xc3\xa9 and a stray \xff byte"
V2 = b"second version\n"


def test_history_and_restore_round_trip_byte_exact_and_undoable(cli, workspace):
    write(workspace / "MEMORY.md", V1)
    assert cli("read", "MEMORY.md").returncode == 0
    assert cli("write", "MEMORY.md", "--stdin", "--replace-unread", input=V2.decode()).returncode == 0
    versions = cli("history", "MEMORY.md", "--json").json()["versions"]
    assert [(v["version"], v["origin"], v["agent"], v["size"]) for v in versions] == [
        (version_of(V2), "agent-write", "main", len(V2)),
        (version_of(V1), "external-edit", None, len(V1)),
    ]
    assert all(v["hash"] == v["version"] and v["available"] for v in versions)
    assert versions[0]["current"] is True and versions[1]["current"] is False
    assert versions[0]["time"].endswith("Z") and versions[0]["time"] >= versions[1]["time"]

    res = cli("restore", "MEMORY.md", version_of(V1)[:8], "--json")
    assert res.returncode == 0, res.stderr
    assert res.json()["previousVersion"] == version_of(V2) and res.json()["action"] == "restore"
    assert (workspace / "MEMORY.md").read_bytes() == V1

    # The restore recorded what it replaced, so it can itself be undone.
    assert cli("restore", "MEMORY.md", version_of(V2)[:10]).returncode == 0
    assert (workspace / "MEMORY.md").read_bytes() == V2
    origins = [v["origin"] for v in cli("history", "MEMORY.md", "--json").json()["versions"]]
    assert origins == ["restore", "restore", "agent-write", "external-edit"]
    # A restore is the agent's own write: the next write needs no new read.
    assert cli("write", "MEMORY.md", "--append", "after restore").returncode == 0


def test_restore_to_the_current_version_changes_nothing(workspace, state_dir):
    s = settings_for(workspace, state_dir)
    path = write(workspace / "MEMORY.md", V1)
    inode = os.stat(path).st_ino
    result = LocalMemory(s).restore("MEMORY.md", version_of(V1)[:8])
    assert result.changed is False and os.stat(path).st_ino == inode


def test_restore_a_deleted_file(workspace, state_dir):
    s = settings_for(workspace, state_dir)
    write(workspace / "memory/note.md", V2)
    LocalMemory(s).read("memory/note.md")
    os.unlink(workspace / "memory/note.md")
    result = LocalMemory(s).restore("memory/note.md", version_of(V2)[:8])
    assert result.created and (workspace / "memory/note.md").read_bytes() == V2


def test_an_outside_edit_about_to_be_replaced_is_kept_in_history(workspace, state_dir):
    s = settings_for(workspace, state_dir)
    write(workspace / "MEMORY.md", b"seen by the agent\n")
    LocalMemory(s).read("MEMORY.md")
    unseen = b"typed by a person, never read by the product\n"
    write(workspace / "MEMORY.md", unseen)
    with read_here(version_of(unseen)):  # (an expect of the session's is a version it read, so the product saw it)
        LocalMemory(s).write("MEMORY.md", content="agent overwrites\n", expect=version_of(unseen)[:12])
    entries = to_json(LocalMemory(s).history("MEMORY.md"))["versions"]
    assert [e["version"] for e in entries][1] == version_of(unseen)
    LocalMemory(s).restore("MEMORY.md", version_of(unseen)[:8])
    assert (workspace / "MEMORY.md").read_bytes() == unseen


def test_restore_needs_a_unique_prefix_of_eight_hex_characters(cli, workspace):
    # Two contents whose versions share their first 8 hex characters (a birthday search).
    seen: dict[str, bytes] = {}
    for i in itertools.count():
        data = f"note {i}\n".encode()
        key = version_of(data)[:8]
        if key in seen:
            first, second = seen[key], data
            break
        seen[key] = data
    write(workspace / "MEMORY.md", first)
    assert cli("history", "MEMORY.md").returncode == 0  # a sighting
    write(workspace / "MEMORY.md", second)
    assert cli("history", "MEMORY.md").returncode == 0
    ambiguous = cli("restore", "MEMORY.md", key, "--json")
    assert ambiguous.returncode == 2 and "ambiguous" in ambiguous.json()["error"]
    assert cli("restore", "MEMORY.md", version_of(first)[:9]).returncode == 0
    assert (workspace / "MEMORY.md").read_bytes() == first
    assert cli("restore", "MEMORY.md", key[:7]).returncode == 2
    unknown = cli("restore", "MEMORY.md", "0123456789abcdef")
    assert unknown.returncode == 2 and "no version" in unknown.stderr


def test_history_of_an_unseen_file_records_it_as_an_external_edit(cli, workspace):
    write(workspace / "memory/x.md", "hello\n")
    versions = cli("history", "memory/x.md", "--json").json()["versions"]
    assert len(versions) == 1 and versions[0]["origin"] == "external-edit" and versions[0]["current"]
    none = cli("history", "memory/none.md", "--json").json()
    assert none["versions"] == [] and none["currentVersion"] is None
    assert cli("history", "notes.md").returncode == 2


@pytest.mark.parametrize("now", ["folder", "symlink"])
def test_history_of_a_note_whose_name_now_holds_a_folder_or_a_symlink_lists_its_versions(cli, workspace, tmp_path, now):
    """Its versions were found by `log` only: `history` refused the path as a folder (exit 2) or as
    going through a symlink, before the history was asked. Nothing is read at the name."""
    write(workspace / "memory/trip.md", "# trip\nparis\n")
    assert cli("read", "memory/trip.md").returncode == 0
    assert cli("write", "memory/trip.md", "--append", "- agent fact").returncode == 0
    before = cli("history", "memory/trip.md", "--json").json()["versions"]
    (workspace / "memory/trip.md").unlink()
    if now == "folder":
        (workspace / "memory/trip.md").mkdir()
    else:
        write(tmp_path / "elsewhere.md", "another user's words\n")
        (workspace / "memory/trip.md").symlink_to(tmp_path / "elsewhere.md")
    listed = cli("history", "memory/trip.md", "--json")
    assert listed.returncode == 0, listed.stderr
    assert listed.json()["versions"] == [{**v, "current": False} for v in before]
    assert listed.json()["currentVersion"] is None
    assert "nothing was read at memory/trip.md" in listed.stderr
    shown = cli("history", "memory/trip.md")
    assert shown.returncode == 0 and before[0]["version"][:12] in shown.stdout
    assert "another user's words" not in repr(cli("log", "--json").json())
    # A name that never had a version is refused as before.
    (workspace / "memory/other.md").mkdir()
    assert cli("history", "memory/other.md").returncode == 2


def test_history_of_a_note_whose_sighting_could_not_be_recorded_does_not_call_it_missing(cli, workspace, state_dir, tmp_path):
    from conftest import fill_disk, tmpfs

    with tmpfs(tmp_path / "small", "2m") as small:
        env = {"OPENCLAW_STATE_DIR": str(small)}
        write(workspace / "MEMORY.md", "# Memory\n")
        assert cli("history", "MEMORY.md", env=env).returncode == 0
        write(workspace / "memory/trip.md", "# trip\n" + "paris\n" * 2000)
        fill_disk(small)
        shown = cli("history", "memory/trip.md", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "not recorded" in shown.stderr
    assert shown.stdout == "memory/trip.md has no recorded version.\n"


def test_retention_keeps_the_newest_versions_per_path_and_drops_their_objects(workspace, state_dir):
    configure(state_dir, keep_per_path=3)
    s = settings_for(workspace, state_dir)
    write(workspace / "MEMORY.md", "v0\n")
    LocalMemory(s).read("MEMORY.md")
    for i in range(1, 6):
        LocalMemory(s).write("MEMORY.md", content=f"v{i}\n")
    listed = [e["version"] for e in to_json(LocalMemory(s).history("MEMORY.md"))["versions"]]
    assert listed == [version_of(f"v{i}\n".encode()) for i in (5, 4, 3)]
    assert object_files(state_dir, workspace) == set(listed)


def test_a_version_shared_by_two_paths_outlives_retention_on_one(workspace, state_dir):
    configure(state_dir, keep_per_path=1)
    s = settings_for(workspace, state_dir)
    LocalMemory(s).write("memory/a.md", content="shared\n")
    LocalMemory(s).write("memory/b.md", content="shared\n")
    LocalMemory(s).write("memory/a.md", content="a moved on\n")
    assert version_of(b"shared\n") in object_files(state_dir, workspace)
    assert to_json(LocalMemory(s).history("memory/b.md"))["versions"][0]["available"] is True


def test_max_bytes_evicts_least_recently_used_objects(tmp_path):
    store = ObjectStore(Database(tmp_path), max_bytes=10_000)
    blobs = [os.urandom(4_000) for _ in range(3)]  # random bytes do not compress
    a, b, c = (store.put_bytes(blob) for blob in blobs)
    assert store.usage() > 10_000 and store.evict() == [a]  # the oldest use goes first
    with store.db.transaction() as conn:  # b and c last used at the same moment, long ago
        conn.execute("UPDATE objects SET used = 1")
    assert store.read_bytes(b) == blobs[1]  # reading b makes it the most recently used
    d = store.put_bytes(os.urandom(4_000))
    assert store.evict(keep=frozenset({d})) == [c]
    assert store.has(b) and store.has(d) and not store.has(c)
    assert store.usage() == sum(stored_size(store, v) for v in (b, d)) <= 10_000


def test_a_version_whose_bytes_a_rebuild_of_the_damaged_database_lost_is_said_so_never_evicted(cli, cli_process, workspace,
                                                                                                state_dir):
    """After ``doctor --fix`` rebuilt a damaged state database whose pages held a version's bytes,
    ``restore --last`` of a removed note said the version was "evicted from the version store to
    stay within [history] max_bytes", sending the user to raise a limit that was never reached (a
    removed note's version is never evicted): it names the rebuild, and where the damaged file is
    kept; for a version eviction could have taken too, both."""
    import sqlite3

    from openclaw_memory.database import forget_connections

    s = settings_for(workspace, state_dir)
    gone, kept = os.urandom(3000).hex(), os.urandom(3000).hex()
    write(workspace / "memory" / "a.md", gone)
    write(workspace / "memory" / "b.md", kept)
    for note in ("memory/a.md", "memory/b.md"):
        assert cli("read", note).returncode == 0
    assert cli("rm", "memory/a.md").returncode == 0
    first_b = version_of(kept.encode())
    LocalMemory(s).write("memory/b.md", content="b, later\n")  # its first version: stored, named by nothing
    forget_connections()  # this process's connections closed: everything is in the file
    db = s.data_dir / "state.db"
    conn = sqlite3.connect(db)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    leaves = [row[0] for row in conn.execute("SELECT pageno FROM dbstat WHERE name = 'object_parts' AND pagetype = 'leaf'")]
    conn.close()
    with open(db, "r+b") as fh:  # the table's rows, the stored bytes of every version, on a damaged page
        for page in leaves:
            fh.seek((page - 1) * page_size)
            fh.write(bytes(page_size))
    fixed = cli_process("doctor", "--fix", "--yes")
    assert fixed.returncode == 0 and "whose bytes no longer read back" in fixed.stdout, fixed.stdout + fixed.stderr
    (aside,) = (s.data_dir / "damaged").glob("*/state.db")

    restored = cli("restore", "memory/a.md", "--last")
    assert restored.returncode == 1 and "evicted" not in restored.stderr and "max_bytes" not in restored.stderr, restored.stderr
    assert ("is no longer stored: its bytes were lost with the damaged state database that `openclaw-memory doctor --fix` "
            "rebuilt on ") in restored.stderr and f"the damaged file is kept at {aside}" in restored.stderr, restored.stderr
    either = cli("restore", "memory/b.md", first_b[:12])
    assert either.returncode == 1 and "lost with the damaged state database" in either.stderr, either.stderr
    assert either.stderr.rstrip().endswith("or they were evicted from the version store to stay within [history] "
                                           "max_bytes before that"), either.stderr
    assert not (workspace / "memory" / "a.md").exists() and (workspace / "memory" / "b.md").read_text() == "b, later\n"


def test_a_version_too_large_to_keep_is_said_never_stored_not_evicted(cli, workspace, state_dir):
    configure(state_dir, max_bytes=8000)  # one version is kept up to 1000 bytes
    big = "x" * 2000 + "\n"
    write(workspace / "memory" / "big.md", big)
    assert cli("read", "memory/big.md").returncode == 0
    assert cli("write", "memory/big.md", "--append", "- one more").returncode == 0
    gone = cli("restore", "memory/big.md", version_of(big.encode())[:12])
    assert gone.returncode == 1 and "evicted" not in gone.stderr, gone.stderr
    assert ("is no longer stored: at 2001 bytes it is larger than the history keeps of one version (an eighth of "
            "[history] max_bytes), so its bytes were never stored") in gone.stderr, gone.stderr


def test_a_removed_notes_version_gone_with_no_rebuild_is_never_said_evicted(cli, workspace, state_dir):
    """A removal's version is never evicted: with its bytes gone and no rebuild on record (a state
    database copied back from an older backup), the message says so and points at doctor."""
    write(workspace / "memory" / "a.md", "note a\n")
    assert cli("read", "memory/a.md").returncode == 0 and cli("rm", "memory/a.md").returncode == 0
    s = settings_for(workspace, state_dir)
    with Database(s.data_dir).transaction() as conn:
        for table in ("objects", "object_parts"):
            conn.execute(f"DELETE FROM {table} WHERE version = ?", (version_of(b"note a\n"),))  # noqa: S608
    gone = cli("restore", "memory/a.md", "--last")
    assert gone.returncode == 1 and "evicted" not in gone.stderr, gone.stderr
    assert ("is no longer stored: its bytes are gone from the state database, which never evicts a version that a "
            "removal or a snapshot names (`openclaw-memory doctor` checks the state database)") in gone.stderr, gone.stderr


def test_evicted_versions_stay_listed_as_unavailable_and_cannot_be_restored(cli, workspace, state_dir):
    configure(state_dir, max_bytes=16_000)  # random bytes do not compress: about 8 versions of 1900 bytes fit
    s = settings_for(workspace, state_dir)
    for _ in range(12):
        content = incompressible(1900)
        LocalMemory(s).write("memory/blob.md", content=content, replace_unread=True)  # random bytes: not UTF-8
    versions = cli("history", "memory/blob.md", "--json").json()["versions"]
    assert len(versions) == 12
    available = [v["available"] for v in versions]
    assert available[0] is True and available[-1] is False
    assert available == sorted(available, reverse=True), "eviction must take the least recently used first"
    assert sum(stored_size(HistoryStore(s.data_dir).objects, v["version"]) for v in versions if v["available"]) <= 16_000
    gone = cli("restore", "memory/blob.md", versions[-1]["version"][:8])
    assert gone.returncode == 1 and "no longer stored: evicted from the version store" in gone.stderr, gone.stderr
    assert "damaged" not in gone.stderr
    assert (workspace / "memory/blob.md").read_bytes() == content


def test_a_version_too_big_for_the_store_is_logged_but_not_kept(cli, workspace, state_dir):
    configure(state_dir, max_bytes=8_000)  # versions above 1000 bytes are not kept
    write(workspace / "MEMORY.md", "x" * 1001)
    assert cli("read", "MEMORY.md", "--lines", "1").returncode == 0
    versions = cli("history", "MEMORY.md", "--json").json()["versions"]
    assert len(versions) == 1 and versions[0]["available"] is False and versions[0]["size"] == 1001
    assert object_files(state_dir, workspace) == set()


def test_history_settings_are_validated(cli, workspace, state_dir):
    configure(state_dir, keep_per_path=0)
    res = cli("history", "MEMORY.md", "--json")
    assert res.returncode == 2 and "keep_per_path" in res.json()["error"]


def test_read_diff_modes(cli, workspace):
    lines = [f"line {i}\n" for i in range(1, 201)]
    write(workspace / "MEMORY.md", "".join(lines))
    never = cli("read", "MEMORY.md", "--diff", "--json", "--lines", "2").json()
    assert never["mode"] == "full" and "has not read" in never["reason"]
    assert never["text"].startswith("line 1\nline 2\n") and never["nextFrom"] == 3

    unchanged = cli("read", "MEMORY.md", "--diff", "--json").json()
    now = version_of("".join(lines).encode())
    assert unchanged == {"mode": "unchanged", "path": "MEMORY.md", "version": now, "previousVersion": now}

    old = "".join(lines).encode()
    lines[149] = "line 150 edited\n"
    write(workspace / "MEMORY.md", "".join(lines))
    diff = cli("read", "MEMORY.md", "--diff", "--json", "--from", "1", "--lines", "1").json()
    assert diff["mode"] == "diff" and diff["fromVersion"] == version_of(old)
    assert diff["diff"].startswith(
        f"--- a/MEMORY.md (version {version_of(old)[:12]})\n+++ b/MEMORY.md (version {diff['toVersion'][:12]})\n@@ -147,7 +147,7 @@\n"
    )
    assert "-line 150\n+line 150 edited\n" in diff["diff"]
    # It counted as a read: the file is fresh and a write goes through.
    assert cli("state", "--json").json()["files"][0]["state"] == "read_fresh"
    assert cli("write", "MEMORY.md", "--append", "ok").returncode == 0

    text = cli("read", "MEMORY.md", "--diff")
    assert "unchanged since your last read" in text.stderr and text.stdout == ""

    os.unlink(workspace / "MEMORY.md")
    assert cli("read", "MEMORY.md", "--diff", "--json").json()["mode"] == "missing"


def test_read_diff_marks_a_missing_final_newline(workspace, state_dir):
    s = settings_for(workspace, state_dir)
    write(workspace / "memory/a.md", "a\nb")
    LocalMemory(s).read("memory/a.md")
    write(workspace / "memory/a.md", "a\nb\n")
    out = LocalMemory(s).read_diff("memory/a.md").diff
    assert out.endswith("-b\n\\ No newline at end of file\n+b\n")


def test_read_diff_numbers_lines_as_read_does_and_marks_only_the_last(workspace, state_dir):
    """A line ends at a line feed alone, as `read --from` counts: a form feed, a lone CR or U+2028
    inside a line made the diff's hunks count more lines than `read` has, and put git's "No newline
    at end of file" marker after each of them, in the middle of the diff (and `log` counted those
    lines too)."""
    s = settings_for(workspace, state_dir)
    write(workspace / "memory/a.md", "one\ntwo\n")
    LocalMemory(s).read("memory/a.md")
    write(workspace / "memory/a.md", "one\ntwo\u2028still two\x0cand\rstill\nthree\n")
    out = LocalMemory(s).read_diff("memory/a.md").diff
    assert "@@ -1,2 +1,3 @@" in out and "No newline" not in out
    assert out.endswith("-two\n+two\u2028still two\x0cand\rstill\n+three\n")
    assert changed_lines(b"one\ntwo\n", "one\ntwo\u2028still two\x0cand\rstill\nthree\n".encode()) == (2, 1)


def test_read_diff_shows_a_change_to_bytes_that_are_not_utf8(workspace, state_dir):
    """Every invalid byte was U+FFFD before the diff: `100\\xa3` edited to `100\\xa5` gave mode
    "diff" with an empty diff, recorded as read. Each such byte is shown as `\\xNN`, said in a warning."""
    s = settings_for(workspace, state_dir)
    write(workspace / "memory/a.md", b"price: 100\xa3\nsame\n")
    LocalMemory(s).read("memory/a.md")
    write(workspace / "memory/a.md", b"price: 100\xa5\nsame\n")
    only = LocalMemory(s).read_diff("memory/a.md")
    assert only.mode == "diff" and only.diff.endswith("@@ -1,2 +1,2 @@\n-price: 100\\xa3\n+price: 100\\xa5\n same\n")
    assert only.warnings == ("memory/a.md is not valid UTF-8; its invalid bytes are shown as \\xNN in the diff, and each "
                             "backslash of its text as \\\\ (a read shows each such byte as U+FFFD and a backslash as it is); the only changes are to such bytes, which a read shows alike",)
    write(workspace / "memory/a.md", b"price: 100\xa5\nsame\nnew\n")
    more = LocalMemory(s).read_diff("memory/a.md")
    assert more.diff.endswith(" price: 100\\xa5\n same\n+new\n")
    assert more.warnings == ("memory/a.md is not valid UTF-8; its invalid bytes are shown as \\xNN in the diff, and each "
                             "backslash of its text as \\\\ (a read shows each such byte as U+FFFD and a backslash as it is)",)


@pytest.mark.parametrize("before, after, old_line, new_line", [
    (b"price: 100\\xa3\nsame\n", b"price: 100\xa3\nsame\n", "-price: 100\\\\xa3", "+price: 100\\xa3"),
    (b"price: 100\xa3\nsame\n", b"price: 100\\xa3\nsame\n", "-price: 100\\xa3", "+price: 100\\\\xa3"),
], ids=["text-to-byte", "byte-to-text"])
def test_read_diff_tells_a_byte_not_utf8_from_its_escape_typed_as_text(workspace, state_dir, before, after, old_line,
                                                                        new_line):
    """The four characters `\\xa3` typed as text and the byte 0xA3 were both `\\xa3` in the diff: the
    one edited to the other gave mode "diff", an empty diff, and recorded the read. A backslash of the
    text is shown doubled where the diff shows invalid bytes, both ways."""
    s = settings_for(workspace, state_dir)
    write(workspace / "memory/a.md", before)
    LocalMemory(s).read("memory/a.md")
    write(workspace / "memory/a.md", after)
    done = LocalMemory(s).read_diff("memory/a.md")
    assert done.mode == "diff" and done.diff.endswith(f"@@ -1,2 +1,2 @@\n{old_line}\n{new_line}\n same\n")
    assert done.warnings == ("memory/a.md is not valid UTF-8; its invalid bytes are shown as \\xNN in the diff, and each "
                             "backslash of its text as \\\\ (a read shows each such byte as U+FFFD and a backslash as it is)",)


def test_read_diff_falls_back_to_the_full_read_when_the_old_version_was_evicted(workspace, state_dir):
    configure(state_dir, max_bytes=16_000)
    s = settings_for(workspace, state_dir)
    first = os.urandom(900).hex()
    write(workspace / "memory/a.md", first)
    LocalMemory(s).read("memory/a.md")
    for i in range(10):  # other files' versions push the old one out of the store
        LocalMemory(s).write(f"memory/other{i}.md", content=incompressible(1900))
    write(workspace / "memory/a.md", first + "\nedited\n")
    out = LocalMemory(s).read_diff("memory/a.md")
    assert out.mode == "full" and "no longer in the version store" in out.reason
    assert to_json(out)["previousVersion"] == version_of(first.encode())
    assert to_json(out)["text"].startswith(first[:100])


def test_a_damaged_stored_version_is_never_restored(cli, workspace, state_dir):
    import zlib

    write(workspace / "MEMORY.md", V1)
    assert cli("read", "MEMORY.md").returncode == 0
    assert cli("write", "MEMORY.md", "--stdin", "--replace-unread", input=V2.decode()).returncode == 0
    store = HistoryStore(settings_for(workspace, state_dir).data_dir)
    for damage in (zlib.compress(b"other bytes"), b"not zlib at all"):
        with store.db.transaction() as conn:
            conn.execute("UPDATE object_parts SET data = ? WHERE version = ?", (damage, version_of(V1)))
        res = cli("restore", "MEMORY.md", version_of(V1)[:8])
        assert res.returncode == 1 and "damaged" in res.stderr and "Traceback" not in res.stderr
        assert (workspace / "MEMORY.md").read_bytes() == V2
    assert store.objects.read_bytes(version_of(V1)) is None


PINNED_TOTAL = "SUM(stored), 0) FROM objects WHERE version NOT IN"  # the byte limit's look at what is not pinned


def test_a_write_within_the_byte_limit_never_sums_what_is_pinned(workspace, state_dir):
    """The store's whole total fits [history] max_bytes, so nothing can be evicted: the total of
    what is not pinned (subqueries over every snapshot's files: 42 ms a write at 30,000 notes) is
    not asked."""
    s = settings_for(workspace, state_dir)
    memory = LocalMemory(s)
    memory.write("memory/a.md", content="first\n")
    statements = sql_statements(s.data_dir, lambda: memory.write("memory/a.md", content="second\n", expect=memory.read("memory/a.md").version))
    assert any("INSERT" in st and "objects" in st for st in statements)  # a new version was stored
    assert not any(PINNED_TOTAL in st for st in statements)


def test_a_sync_of_many_new_files_looks_at_the_byte_limit_once_a_batch_and_ends_within_it(workspace, state_dir):
    """A watch's first sync records every file: the byte limit is applied once per batch of files
    (each look reads the whole store: once a file made the sync's cost grow with the square of
    the notes), one transaction a batch, and the store still ends within the limit, the newest
    sightings kept."""
    from openclaw_memory.watch.versions import BATCH, record_versions

    configure(state_dir, max_bytes=40_000)  # random bytes do not compress: about 20 of the versions fit
    s = settings_for(workspace, state_dir)
    paths = [f"memory/n{i:03d}.md" for i in range(BATCH + 44)]
    blobs = {}
    for path in paths:
        blobs[path] = os.urandom(1_900)
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_bytes(blobs[path])
    statements = sql_statements(s.data_dir, lambda: record_versions(s, paths))
    assert sum(PINNED_TOTAL in st for st in statements) == 2  # one a batch (the store is past its limit)
    assert sum(st.startswith("BEGIN") for st in statements) == 2
    store = HistoryStore(s.data_dir, s.history)
    assert 0 < store.objects.usage() <= 40_000
    assert store.objects.read_bytes(version_of(blobs[paths[-1]])) == blobs[paths[-1]]  # the newest is kept
    assert not store.objects.has(version_of(blobs[paths[0]]))
    assert len(store.log.entries(str(workspace / paths[0]))) == 1  # every sighting is logged, its bytes or not


def test_a_restarted_watch_opens_only_the_files_its_history_does_not_hold_as_they_are(workspace, state_dir, monkeypatch):
    """A watch's first sync after a restart records what the scan shows: a note whose sighting
    holds for its stat, whose newest history entry is that content and whose bytes are stored is
    only marked used (its object's last use); one edited in place since, one whose bytes were
    evicted and a new one are opened and recorded."""
    import time

    from conftest import wait_for
    from openclaw_memory.files.scan import scan_workspace
    from openclaw_memory.fsutil.fsclock import guard_ns
    from openclaw_memory.watch.versions import record_versions

    s = settings_for(workspace, state_dir)
    paths = [f"memory/n{i}.md" for i in range(5)]
    for path in paths:
        write(workspace / path, f"# {path}\nfirst\n")
    settled = time.time_ns() + guard_ns(workspace)  # past it, a sighting of these files is not racy
    wait_for(lambda: time.time_ns() > settled, 30)
    memory = LocalMemory(s)
    memory.index()  # the sightings
    record_versions(s, paths)
    store = HistoryStore(s.data_dir, s.history)
    used_before = store.db.one("SELECT used FROM objects WHERE version = ?", (version_of(b"# memory/n0.md\nfirst\n"),))[0]
    write(workspace / paths[1], "# memory/n1.md\nfixed\n")  # in place, the same size
    store.objects.remove([version_of(b"# memory/n2.md\nfirst\n")])  # evicted
    write(workspace / "memory/n5.md", "# new\n")
    opened: list[str] = []
    real_open = HistoryStore.open_file

    def counted(self, abs_path):
        opened.append(abs_path)
        return real_open(self, abs_path)

    monkeypatch.setattr(HistoryStore, "open_file", counted)
    files = [f for f in scan_workspace(s).files if f.kind == "markdown"]
    record_versions(s, [f.path for f in files], files)
    assert sorted(opened) == [str(workspace / p) for p in ("memory/n1.md", "memory/n2.md", "memory/n5.md")]
    assert store.log.latest(str(workspace / paths[1])).version == version_of(b"# memory/n1.md\nfixed\n")
    assert store.objects.read_bytes(version_of(b"# memory/n2.md\nfirst\n")) == b"# memory/n2.md\nfirst\n"  # stored again
    assert store.log.latest(str(workspace / "memory/n5.md")).version == version_of(b"# new\n")
    used_after = store.db.one("SELECT used FROM objects WHERE version = ?", (version_of(b"# memory/n0.md\nfirst\n"),))[0]
    assert used_after > used_before


def test_a_path_given_with_a_leading_double_slash_names_the_same_note(cli, workspace, tmp_path):
    """POSIX's normpath keeps a leading ``//`` (node's path.resolve folds it): ``//tmp/.../a.md`` was a
    second name with a history of its own, so `rm`'s printed undo found no removal, and a write
    through the plain name was blocked as unread after a read through the doubled one."""
    write(workspace / "memory/a.md", "precious note\n")
    doubled = "/" + str(workspace / "memory/a.md")
    assert doubled.startswith("//") and not doubled.startswith("///")
    assert cli("read", doubled).returncode == 0
    assert cli("write", "memory/a.md", "--append", "more", "--no-index").returncode == 0
    assert cli("rm", doubled, "--no-index").returncode == 0
    assert cli("restore", "memory/a.md", "--last", "--no-index").returncode == 0
    assert (workspace / "memory/a.md").read_text() == "precious note\nmore\n"
    assert {v["origin"] for v in cli("history", "memory/a.md", "--json").json()["versions"]} >= {"agent-write"}
    assert "//" not in repr(cli("log", "--json").json())
    extra = tmp_path / "notes"
    write(extra / "n.md", "extra note\n")
    listed = cli("files", "--json", "--extra", "/" + str(extra)).json()
    assert [f["path"] for f in listed["files"] if f["path"].endswith("n.md")] == [os.path.relpath(extra / "n.md", workspace)]
