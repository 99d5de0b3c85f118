"""``export`` and ``import``: an agent's memory files and their history moved to another workspace,
byte for byte and version for version; a damaged or hostile archive refused in one line with
nothing written (the target's tree and state dir compared before and after); ``--force`` keeps
what it replaces in the history."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import pytest
import xxhash
from test_json_keys import DOCUMENTED, keys_of

from conftest import fault, settings_for, write
from openclaw_memory.archive.manifest import MEMBER_LIMIT, TOTAL_LIMIT, ArchiveManifest, Member
from openclaw_memory.errors import ImportConflict, PathRefused, UsageError
from openclaw_memory.history.versions import iso_time
from openclaw_memory.memory.local import LocalMemory

HERON = "# Heron\n\nThe heron project keeps lighthouse keepers on the northern cape.\n"
HERON_2 = HERON + "\n## Budget\n\nThe heron budget was approved in November.\n"
KETTLE = "# Kettle\n\nThe kettle whistles when the tea water boils.\n"


def version_of(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def versions(memory: LocalMemory, path: str) -> list[tuple]:
    """What `history` shows of each version (newest first), the time and who included."""
    return [(v.version, v.time, v.size, v.origin, v.agent, v.available) for v in memory.history(path).versions]


def tree(*roots: Path) -> dict[str, tuple]:
    """Every entry under the roots: its type and permission bits, a file's bytes, a link's target."""
    found: dict[str, tuple] = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(folder, name)
                st = os.lstat(path)
                body = Path(path).read_bytes() if stat.S_ISREG(st.st_mode) else os.readlink(path) if stat.S_ISLNK(
                    st.st_mode) else None
                found[path] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), body)
    return found


@pytest.fixture
def source(tmp_path: Path) -> tuple[LocalMemory, Path]:
    """A memory with history: agent writes, an outside edit, a file in an extra path, a removed file."""
    ws, extra = tmp_path / "src" / "ws", tmp_path / "src" / "notes"
    write(ws / "MEMORY.md", "# Memory\n\n- the heron project\n")
    write(ws / "memory" / "2026-11-30.md", HERON)
    write(ws / "memory" / "people" / "ann.md", "# Ann\n")
    write(ws / "memory" / "kettle.md", KETTLE)
    write(extra / "ideas.md", "# Ideas\n\n- a tide clock\n")
    memory = LocalMemory(settings_for(ws, tmp_path / "src" / "state", extra=(str(extra),)))
    memory.read("memory/2026-11-30.md")
    memory.write("memory/2026-11-30.md", content=HERON_2)
    write(ws / "memory" / "people" / "ann.md", "# Ann\n\nAnn keeps the lighthouse log.\n")  # an outside edit
    memory.history("memory/people/ann.md")  # seen
    memory.read("memory/kettle.md")
    memory.remove("memory/kettle.md")  # its bytes stay in the history: restore --last
    memory.read(str(extra / "ideas.md"))
    memory.write(str(extra / "ideas.md"), append="- a rope bridge")
    return memory, tmp_path / "src" / "archive.tar.gz"


def target(tmp_path: Path, name: str = "dst") -> LocalMemory:
    ws, extra = tmp_path / name / "ws", tmp_path / name / "notes"
    ws.mkdir(parents=True)
    extra.mkdir()
    return LocalMemory(settings_for(ws, tmp_path / name / "state", extra=(str(extra),)))


def exported(source) -> Path:
    memory, archive = source
    memory.export_archive(str(archive))
    return archive


# -- the round trip --------------------------------------------------------------------------------


def _log_of(memory: LocalMemory, path: str) -> list[tuple[str, str | None, int, int]]:
    return [(e.version, e.previous, e.added, e.removed) for e in memory.activity(limit=100).entries
            if e.path == path]


def test_an_archive_of_the_first_format_counts_each_version_against_the_one_before(source, tmp_path):
    """Format 1 names no version's previous one: each was set to none, and `log` counted every imported
    version's lines against nothing (two one-line appends: 5 and 4 lines added)."""
    archive = rebuilt(exported(source), tmp_path / "first.tar.gz", as_format_1)
    dst = target(tmp_path)
    dst.import_archive(str(archive))
    assert _log_of(dst, "memory/2026-11-30.md") == _log_of(source[0], "memory/2026-11-30.md")


def test_a_rollback_to_before_an_import_of_a_trimmed_history_archives_the_note(tmp_path, cli):
    """The exporting side's retention had dropped a note's first versions: its first kept one names a
    previous version, which the import gave the path's first entry here, and a rollback to a moment
    before the import said "the history no longer knows what memory/a.md held then", refused."""
    src = target(tmp_path, "src")
    write(src.settings.state_dir / "openclaw-memory.toml", "[history]\nkeep_per_path = 3\n")
    src = LocalMemory(settings_for(src.settings.workspace, src.settings.state_dir))
    for i in range(5):
        src.write("memory/a.md", append=f"line {i}", update_index=False)
    archive = tmp_path / "trimmed.tar.gz"
    src.export_archive(str(archive))
    dst = target(tmp_path)
    write(dst.settings.workspace / "MEMORY.md", "own\n")
    dst.state()
    before_import = iso_time(time.time())
    dst.import_archive(str(archive))
    env = {"OPENCLAW_WORKSPACE": str(dst.settings.workspace), "OPENCLAW_STATE_DIR": str(dst.settings.state_dir)}
    plan = cli("rollback", "--to", before_import, "--dry-run", "--json", env=env)
    assert plan.returncode == 0, plan.stderr
    assert {f["path"]: f["fate"] for f in plan.json()["files"]}["memory/a.md"] == "archive", plan.stdout


def test_an_archive_of_the_first_format_imports_each_version_under_its_path(source, tmp_path):
    """0.1.0's backups (format 1) were refused once format 2 carried each version's name ("this release
    reads format 2 only"): read as they were made, each version filed under its path."""
    archive = rebuilt(exported(source), tmp_path / "first.tar.gz", as_format_1)
    dst = target(tmp_path)
    dst.import_archive(str(archive))
    ws = dst.settings.workspace
    assert (ws / "memory" / "2026-11-30.md").read_text() == HERON_2
    assert [v.version for v in dst.history("memory/2026-11-30.md").versions] == [
        v.version for v in source[0].history("memory/2026-11-30.md").versions]
    assert dst.restore("memory/kettle.md", last=True).version is not None
    assert (ws / "memory" / "kettle.md").read_text() == KETTLE


def test_an_export_imports_elsewhere_with_identical_files_and_the_same_history(source, tmp_path):
    memory, archive = source
    result = memory.export_archive(str(archive))
    assert set(result.files) == {"MEMORY.md", "memory/2026-11-30.md", "memory/people/ann.md", "../notes/ideas.md"}
    assert result.size == archive.stat().st_size
    assert not [p for p in archive.parent.iterdir() if p.name.endswith(".tmp")]

    dst = target(tmp_path)
    imported = dst.import_archive(str(archive))
    assert sorted(imported.files) == sorted(result.files) and imported.replaced == ()

    src_ws, dst_ws = memory.settings.workspace, dst.settings.workspace
    for rel in ("MEMORY.md", "memory/2026-11-30.md", "memory/people/ann.md"):
        assert (dst_ws / rel).read_bytes() == (src_ws / rel).read_bytes(), rel
        assert versions(dst, rel) == versions(memory, rel), rel
    src_extra, dst_extra = Path(memory.settings.extra_paths[0]), Path(dst.settings.extra_paths[0])
    assert (dst_extra / "ideas.md").read_bytes() == (src_extra / "ideas.md").read_bytes()
    assert versions(dst, str(dst_extra / "ideas.md")) == versions(memory, str(src_extra / "ideas.md"))
    assert [f.path for f in dst.files().files] == [f.path for f in memory.files().files]
    # Every version's bytes came along: the first version of the note, restored there.
    assert len(versions(dst, "memory/2026-11-30.md")) == 2
    dst.restore("memory/2026-11-30.md", version_of(HERON.encode()))
    assert (dst_ws / "memory" / "2026-11-30.md").read_text() == HERON
    # The removed file's history came too: `restore --last` brings it back there.
    assert not (dst_ws / "memory" / "kettle.md").exists()
    dst.restore("memory/kettle.md", last=True)
    assert (dst_ws / "memory" / "kettle.md").read_text() == KETTLE
    # The import leaves the index alone; the next `index` embeds the files it brought.
    assert dst.index().files_changed >= 4
    hits = dst.search("lighthouse keepers heron", mode="text")
    assert "memory/2026-11-30.md" in {h.path for h in hits.results}


def test_an_imported_move_onto_a_removed_notes_name_leaves_that_note_at_its_name_when_it_moves_on(source, tmp_path):
    """An imported move's entry named no move (versions.arrived_by), so it was taken for one logged before
    schema 14: the next move took the removed note's entries along, and `restore OLD --last` was refused."""
    memory, archive = source
    write(memory.settings.workspace / "memory" / "x.md", "# X\n")
    memory.read("memory/x.md")
    memory.move("memory/x.md", "memory/kettle.md")  # onto the name of the removed kettle note
    memory.export_archive(str(archive))
    here = target(tmp_path)
    here.import_archive(str(archive))
    here.read("memory/kettle.md")
    here.move("memory/kettle.md", "memory/pot.md")
    assert here.restore("memory/kettle.md", last=True).version == version_of(KETTLE.encode())
    assert version_of(KETTLE.encode()) not in [v.version for v in here.history("memory/pot.md").versions]


def _logged(memory: LocalMemory) -> list[dict]:
    """`log --json`'s entries, every field."""
    from openclaw_memory.wire import to_json

    return [to_json(e) for e in memory.activity(limit=1000).entries]


def _plan(memory: LocalMemory, moment: str) -> list[tuple]:
    return [(f.path, f.fate, f.version, f.previous) for f in memory.restore_all(moment, dry_run=True, force=True).files]


def test_an_imported_history_shows_each_version_under_the_name_it_had_then(tmp_path):
    """Every version of a moved note was logged under the note's name now: after a -> b -> c (the last
    move forced onto a note it archived), `log` in the importing workspace showed a.md's and b.md's
    versions as c.md's and every line count against the version logged before it there, and its next
    `mv` left the note's earlier entries behind with the archived one (versions.arrived_by). Now
    `log`, `history`, `restore --last` and a rollback's plan give what they give where it was exported."""
    (tmp_path / "a" / "ws").mkdir(parents=True)
    src = LocalMemory(settings_for(tmp_path / "a" / "ws", tmp_path / "a" / "state"))
    src.write("memory/c.md", content=KETTLE)
    src.write("memory/a.md", content=HERON)
    src.read("memory/a.md")
    src.write("memory/a.md", content=HERON_2)
    src.move("memory/a.md", "memory/b.md")
    src.read("memory/c.md")
    src.move("memory/b.md", "memory/c.md", force=True)  # the kettle note archived: restore --last
    archive = tmp_path / "moved.tar.gz"
    src.export_archive(str(archive))
    (tmp_path / "b" / "ws").mkdir(parents=True)
    dst = LocalMemory(settings_for(tmp_path / "b" / "ws", tmp_path / "b" / "state"))
    dst.import_archive(str(archive))

    logged = _logged(src)
    assert [(e["path"], e["origin"]) for e in logged] == [
        ("memory/c.md", "move"), ("memory/c.md", "remove"), ("memory/b.md", "move"), ("memory/a.md", "agent-write"),
        ("memory/a.md", "agent-write"), ("memory/c.md", "agent-write")]
    assert _logged(dst) == logged
    assert versions(dst, "memory/c.md") == versions(src, "memory/c.md")
    after_import = _moment()
    for memory in (src, dst):  # the note moves on: its own entries go with it, the archived one's stay
        memory.read("memory/c.md")
        memory.move("memory/c.md", "memory/d.md")

    def undated(listed: list, time_of) -> list:  # (each workspace's own move has its own time)
        return [time_of(e) if time_of(e) < after_import else None for e in listed]

    assert undated(_logged(dst), lambda e: e["time"]) == undated(_logged(src), lambda e: e["time"])
    assert [{**e, "time": None} for e in _logged(dst)] == [{**e, "time": None} for e in _logged(src)]
    for old in ("memory/a.md", "memory/b.md", "memory/c.md", "memory/d.md"):
        assert undated(versions(dst, old), lambda v: v[1]) == undated(versions(src, old), lambda v: v[1]), old
        assert [v[:1] + v[2:] for v in versions(dst, old)] == [v[:1] + v[2:] for v in versions(src, old)], old
    planned = _plan(src, after_import)
    assert _plan(dst, after_import) == planned
    assert [f for f in planned if f[1] != "unchanged"] == [
        ("memory/c.md", "bring-back", version_of(HERON_2.encode()), None),
        ("memory/d.md", "archive", None, version_of(HERON_2.encode()))]
    for memory in (src, dst):
        assert memory.restore("memory/c.md", last=True).version == version_of(KETTLE.encode())
        for never_removed in ("memory/a.md", "memory/b.md"):
            with pytest.raises(UsageError, match="no removal of"):
                memory.restore(never_removed, last=True)


def test_importing_the_same_archive_again_writes_and_logs_nothing_more(source, tmp_path):
    archive = exported(source)
    dst = target(tmp_path)
    dst.import_archive(str(archive))
    before = versions(dst, "memory/2026-11-30.md")
    again = dst.import_archive(str(archive))  # the files hold the archive's bytes: no conflict
    assert again.versions == 0 and again.replaced == ()
    assert versions(dst, "memory/2026-11-30.md") == before


def test_export_and_import_print_documented_camel_case_json(source, tmp_path, cli):
    memory, archive = source
    env = {"OPENCLAW_WORKSPACE": str(memory.settings.workspace), "OPENCLAW_STATE_DIR": str(memory.settings.state_dir)}
    out = cli("export", str(archive), "--extra", str(memory.settings.extra_paths[0]), "--json", env=env)
    assert out.returncode == 0, out.stderr
    dst = target(tmp_path)
    env = {"OPENCLAW_WORKSPACE": str(dst.settings.workspace), "OPENCLAW_STATE_DIR": str(dst.settings.state_dir)}
    res = cli("import", str(archive), "--extra", str(dst.settings.extra_paths[0]), "--json", env=env)
    assert res.returncode == 0, res.stderr
    for printed in (out.json(), res.json()):
        assert not sorted(keys_of(printed, set()) - DOCUMENTED)
    plain = cli("import", str(archive), "--extra", str(dst.settings.extra_paths[0]), env=env)
    assert plain.returncode == 0 and "imported 4 memory files" in plain.stdout


# -- permission bits -------------------------------------------------------------------------------


@pytest.fixture
def open_base():
    """A folder every user can traverse, as a home folder is (pytest's tmp_path is under a 0700
    folder: another user reaches nothing there, whatever the modes)."""
    base = Path(tempfile.mkdtemp(prefix="ocm-modes-"))
    os.chmod(base, 0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _private_source(base: Path) -> tuple[LocalMemory, Path]:
    """A 0600 note, a 0644 one, and a 0600 note removed (its bits in the history)."""
    ws = base / "src" / "ws"
    for name, mode in (("private.md", 0o600), ("public.md", 0o644), ("gone.md", 0o600)):
        os.chmod(write(ws / "memory" / name, f"# {name}\n\nThe vault code is 4-8-15-16.\n"), mode)
    for folder in (base / "src", ws, ws / "memory"):
        os.chmod(folder, 0o755)
    memory = LocalMemory(settings_for(ws, base / "src" / "state"))
    memory.read("memory/gone.md")
    memory.remove("memory/gone.md")
    return memory, base


def test_a_private_note_is_imported_as_private_as_it_was_exported(open_base):
    """The archive carried no permission bits: a 0600 note came back 0644 (the importing umask's),
    readable by every user. Each file's bits are in the manifest, and each version's the history saw;
    import gives them back (a removed note's too, as `restore --last` brings it back)."""
    memory, base = _private_source(open_base)
    archive = base / "archive.tar.gz"
    memory.export_archive(str(archive))
    with tarfile.open(archive) as tar:
        listed = json.loads(tar.extractfile("manifest.json").read())
    assert {f["path"]: f["mode"] for f in listed["files"]} == {"memory/private.md": 0o600, "memory/public.md": 0o644}
    assert {h["path"]: h["versions"][-1]["mode"] for h in listed["history"]}["memory/gone.md"] == 0o600

    ws = base / "dst" / "ws"
    ws.mkdir(parents=True)
    dst = LocalMemory(settings_for(ws, base / "dst" / "state"))
    old = os.umask(0o022)
    try:
        dst.import_archive(str(archive))
        assert stat.S_IMODE((ws / "memory" / "private.md").stat().st_mode) == 0o600
        assert stat.S_IMODE((ws / "memory" / "public.md").stat().st_mode) == 0o644
        dst.restore("memory/gone.md", last=True)
        assert stat.S_IMODE((ws / "memory" / "gone.md").stat().st_mode) == 0o600
    finally:
        os.umask(old)


@pytest.mark.skipif(os.geteuid() != 0, reason="acting as another user (uid 65534) needs root")
def test_another_user_cannot_read_an_imported_private_note(open_base):
    """The leak itself, with a real other user (nobody): the imported 0600 note is refused to them;
    the control, the 0644 note beside it, is read."""
    from test_private_state import as_nobody

    memory, base = _private_source(open_base)
    archive = base / "archive.tar.gz"
    memory.export_archive(str(archive))
    ws = base / "dst" / "ws"
    ws.mkdir(parents=True)
    os.chmod(base / "dst", 0o755)
    os.chmod(ws, 0o755)
    LocalMemory(settings_for(ws, base / "dst" / "state")).import_archive(str(archive))

    def readable(paths: list[str]) -> list[bool]:
        can = []
        for path in paths:
            try:
                os.close(os.open(path, os.O_RDONLY))
                can.append(True)
            except OSError:
                can.append(False)
        return can

    assert as_nobody(readable, [str(ws / "memory" / "private.md"), str(ws / "memory" / "public.md")]) == [False, True]


def test_an_imported_file_is_never_more_open_than_the_archive_or_the_file_it_replaces(open_base):
    """--force: a 0644 file here replaced by the archive's 0600 note becomes 0600; a 0600 file here
    replaced by the archive's 0644 note stays 0600 (the bits narrow, never widen)."""
    memory, base = _private_source(open_base)
    archive = base / "archive.tar.gz"
    memory.export_archive(str(archive))
    ws = base / "dst" / "ws"
    os.chmod(write(ws / "memory" / "private.md", "# mine\n"), 0o644)
    os.chmod(write(ws / "memory" / "public.md", "# mine\n"), 0o600)
    LocalMemory(settings_for(ws, base / "dst" / "state")).import_archive(str(archive), force=True)
    assert stat.S_IMODE((ws / "memory" / "private.md").stat().st_mode) == 0o600
    assert stat.S_IMODE((ws / "memory" / "public.md").stat().st_mode) == 0o600
    assert (ws / "memory" / "public.md").read_text().startswith("# public.md")


def test_a_folder_import_makes_gets_the_bits_it_was_exported_with(open_base):
    """A private folder (memory/priv/, 0700) was made with the umask's 0755: its 0600 file's name
    was listed to every user. Each folder on the way to an exported file is in the manifest with its
    bits, and a folder import makes gets them (the owner keeps rwx: a read-only folder is made 0700,
    the import writes its file there); a folder that exists here is left as it is."""
    src = open_base / "src" / "ws"
    write(src / "MEMORY.md", "# M\n")
    for folder, mode in (("memory/priv", 0o700), ("memory/team", 0o750), ("memory/team/ro", 0o550), ("memory/here", 0o700)):
        os.chmod(write(src / folder / "p.md", f"# {folder}\n").parent, mode)
        os.chmod(src / folder / "p.md", 0o600)
    os.chmod(src / "memory", 0o711)
    archive = open_base / "archive.tar.gz"
    LocalMemory(settings_for(src, open_base / "src" / "state")).export_archive(str(archive))
    with tarfile.open(archive) as tar:
        listed = json.loads(tar.extractfile("manifest.json").read())
    assert {d["path"]: d["mode"] for d in listed["folders"]} == {
        "memory": 0o711, "memory/priv": 0o700, "memory/team": 0o750, "memory/team/ro": 0o550, "memory/here": 0o700}

    ws = open_base / "dst" / "ws"
    (ws / "memory" / "here").mkdir(parents=True)
    os.chmod(ws / "memory", 0o755)
    os.chmod(ws / "memory" / "here", 0o775)
    old = os.umask(0o022)
    try:
        LocalMemory(settings_for(ws, open_base / "dst" / "state")).import_archive(str(archive))
    finally:
        os.umask(old)
    modes = {name: stat.S_IMODE((ws / "memory" / name).stat().st_mode) for name in ("", "priv", "team", "team/ro", "here")}
    assert modes == {"": 0o755, "priv": 0o700, "team": 0o750, "team/ro": 0o750, "here": 0o775}
    assert (ws / "memory" / "team" / "ro" / "p.md").read_text() == "# memory/team/ro\n"


def test_an_archive_without_folder_modes_still_imports(source, tmp_path):
    """An older export's manifest has no `folders`: its folders are made as a write makes them."""
    archive = exported(source)
    with tarfile.open(archive) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
    body = json.loads(members["manifest.json"])
    del body["folders"]
    members["manifest.json"] = json.dumps(body).encode()
    old_archive = tmp_path / "old.tar.gz"
    with tarfile.open(old_archive, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    ws = tmp_path / "old" / "ws"
    ws.mkdir(parents=True)
    extra = tmp_path / "old" / "notes"
    extra.mkdir()
    LocalMemory(settings_for(ws, tmp_path / "old" / "state", extra=(str(extra),))).import_archive(str(old_archive))
    assert (ws / "memory" / "people" / "ann.md").read_text() == "# Ann\n\nAnn keeps the lighthouse log.\n"
    assert stat.S_IMODE((ws / "memory" / "people").stat().st_mode) == 0o755 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# -- --force ---------------------------------------------------------------------------------------


def test_a_file_here_is_replaced_only_with_force_and_what_it_held_stays_in_the_history(source, tmp_path):
    archive = exported(source)
    dst = target(tmp_path)
    mine = b"# Memory\n\nWhat this machine's agent wrote, never read by the other.\n"
    write(dst.settings.workspace / "MEMORY.md", mine)
    snapshot = tree(dst.settings.workspace, dst.settings.state_dir)
    with pytest.raises(ImportConflict, match="MEMORY.md"):
        dst.import_archive(str(archive))
    assert tree(dst.settings.workspace, dst.settings.state_dir) == snapshot

    result = dst.import_archive(str(archive), force=True)
    assert result.replaced == ("MEMORY.md",)
    src_ws = source[0].settings.workspace
    assert (dst.settings.workspace / "MEMORY.md").read_bytes() == (src_ws / "MEMORY.md").read_bytes()
    listed = dst.history("MEMORY.md").versions
    kept = [v for v in listed if v.version == version_of(mine)]
    assert kept and kept[0].available
    dst.restore("MEMORY.md", version_of(mine))
    assert (dst.settings.workspace / "MEMORY.md").read_bytes() == mine


def test_the_history_of_a_removed_note_comes_in_beside_the_note_of_that_name_here(source, tmp_path):
    """The archive's history of a note its `rm` removed was left out where a note of that name is here
    ("the history of memory/kettle.md was not imported"), and `restore memory/kettle.md --last` found no
    removal. It comes in beside the note here, as a name keeps the entries of the notes removed from it:
    the note here keeps its own (a move takes them along, not the archive's), a rollback to now leaves
    it as it is (the archive's removal is dated after its entries), and `restore --last` brings back
    what the archive's `rm` removed."""
    memory, archive = source
    dst = target(tmp_path)
    ours = dst.settings.workspace / "memory" / "kettle.md"
    write(ours, "# Another kettle\n")
    dst.read("memory/kettle.md")
    dst.write("memory/kettle.md", append="- ours")
    own = {v.version for v in dst.history("memory/kettle.md").versions}
    held = ours.read_bytes()
    memory.restore("memory/kettle.md", last=True)  # removed again, after the note here was written
    memory.read("memory/kettle.md")
    memory.remove("memory/kettle.md")
    memory.export_archive(str(archive))
    result = dst.import_archive(str(archive), force=True)
    assert result.skipped == ()
    assert ours.read_bytes() == held
    from openclaw_memory.history.store import HistoryStore

    log = HistoryStore.for_settings(dst.settings).log  # before any look here logs what the note holds
    assert [e.version for e in (log.latest(str(ours)), log.latest_in_time(str(ours)))] == [version_of(held)] * 2
    assert "remove" in [v.origin for v in dst.history("memory/kettle.md").versions]
    dst.restore_all(_moment(), force=True)
    assert ours.read_bytes() == held
    dst.read("memory/kettle.md")
    dst.move("memory/kettle.md", "memory/ours.md")
    moved = {v.version for v in dst.history("memory/ours.md").versions}
    assert own <= moved and version_of(KETTLE.encode()) not in moved
    assert dst.restore("memory/kettle.md", last=True).version == version_of(KETTLE.encode())
    assert ours.read_text() == KETTLE


def test_the_history_of_a_note_deleted_by_hand_is_still_left_out_where_a_file_of_that_name_is(source, tmp_path):
    """A history that does not end with a removal (a note deleted by hand, unseen; a move's) cannot be
    told from the note's here: it is left out, named in `skipped`, the note here and its history as they were."""
    memory, archive = source
    gone = memory.settings.workspace / "memory" / "gone.md"
    write(gone, "# Gone\n")
    memory.read("memory/gone.md")
    gone.unlink()
    memory.export_archive(str(archive))
    dst = target(tmp_path)
    write(dst.settings.workspace / "memory" / "gone.md", "# Here\n")
    own = versions(dst, "memory/gone.md")
    result = dst.import_archive(str(archive), force=True)
    assert result.skipped == ("memory/gone.md",)
    assert ("the history of memory/gone.md was not imported: a file of that name is here, and the archive's entries "
            "(of a file moved or deleted there) cannot be told from its own") in result.warnings
    assert versions(dst, "memory/gone.md") == own
    assert (dst.settings.workspace / "memory" / "gone.md").read_text() == "# Here\n"


def test_a_persons_note_beside_an_archives_removed_note_keeps_its_bytes_in_the_history(source, tmp_path):
    """A person's note, never seen here, at the name of a note the archive's `rm` removed: the import
    logged what it held (the history ending with what the note holds) as an outside edit without its
    bytes. The person's next save lost them: `history` showed the version `[evicted]` (max_bytes nowhere
    near full) and a rollback to a moment that held it was refused. Its bytes are kept, as every
    sighting keeps them."""
    archive = exported(source)
    dst = target(tmp_path)
    note = dst.settings.workspace / "memory" / "kettle.md"
    typed = b"# My kettle\n\nTyped by hand.\n"
    write(note, typed)
    assert dst.import_archive(str(archive)).skipped == ()
    moment = _moment()
    write(note, "# My kettle\n\nTyped again.\n")
    assert [v[5] for v in versions(dst, "memory/kettle.md") if v[0] == version_of(typed)] == [True]
    dst.restore_all(moment, force=True)
    assert note.read_bytes() == typed


def test_an_imported_note_whose_bytes_the_archives_history_lacked_keeps_them_here(tmp_path):
    """An archive from a history that did not keep a note's version (past its own max_bytes / 8)
    lists no object of it: the import placed the note and logged its version without its bytes,
    and the next save here lost it (`history` showing it `[evicted]`, this history nowhere near full)."""
    state = tmp_path / "src" / "state"
    write(state / "openclaw-memory.toml", "[history]\nmax_bytes = 80\n")
    (tmp_path / "src" / "ws").mkdir()
    src = LocalMemory(settings_for(tmp_path / "src" / "ws", state))
    body = b"# Heron\n\nMore than a tenth of eighty bytes.\n"
    src.write("memory/heron.md", content=body.decode())
    archive = tmp_path / "small.tar.gz"
    assert src.export_archive(str(archive)).objects == 0
    dst = target(tmp_path)
    dst.import_archive(str(archive))
    write(dst.settings.workspace / "memory" / "heron.md", "# Heron\n\nEdited here.\n")
    assert [v[5] for v in versions(dst, "memory/heron.md") if v[0] == version_of(body)] == [True]
    dst.restore("memory/heron.md", version_of(body))
    assert (dst.settings.workspace / "memory" / "heron.md").read_bytes() == body


def test_a_history_of_a_path_that_is_no_memory_path_here_is_left_out_saying_so(source, tmp_path, cli_process):
    """The history of the removed memory/kettle.md, named AGENTS.md in the manifest, imported into an
    empty workspace: "the history of AGENTS.md was not imported: a file of that name is here, or its
    extra path is not configured" (neither was true). Now the reason itself, once."""

    def rename(manifest, members):
        (kettle,) = [h for h in manifest["history"] if h["path"] == "memory/kettle.md"]
        kettle["path"] = "AGENTS.md"

    archive = rebuilt(exported(source), tmp_path / "agents.tar.gz", rename)
    dst = target(tmp_path)
    env = {"OPENCLAW_WORKSPACE": str(dst.settings.workspace), "OPENCLAW_STATE_DIR": str(dst.settings.state_dir)}
    done = cli_process("import", str(archive), "--extra", str(dst.settings.extra_paths[0]), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"warning: the history of AGENTS.md was not imported: {dst.settings.workspace / 'AGENTS.md'} is not a memory "
        "path (MEMORY.md, USER.md, DREAMS.md, memory/**/*.md or a file in an existing configured extra path)"]
    assert not (dst.settings.workspace / "AGENTS.md").exists()


def test_files_of_an_extra_path_need_one_configured_here(source, tmp_path):
    archive = exported(source)
    ws = tmp_path / "bare" / "ws"
    ws.mkdir(parents=True)
    bare = LocalMemory(settings_for(ws, tmp_path / "bare" / "state"))
    with pytest.raises(PathRefused, match=r"notes matches none of this workspace's .*this workspace's: none\)"):
        bare.import_archive(str(archive))
    assert list(ws.iterdir()) == []


def _two_extra_paths(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A memory whose extra paths are `personal` (a private diary) and `work`, exported."""
    src = tmp_path / "src"
    write(src / "personal" / "diary.md", "# Diary\n\nPrivate.\n")
    write(src / "work" / "plan.md", "# Plan\n")
    (src / "ws").mkdir()
    memory = LocalMemory(settings_for(src / "ws", src / "state", extra=(str(src / "personal"), str(src / "work"))))
    memory.export_archive(str(tmp_path / "two.tar.gz"))
    return tmp_path / "two.tar.gz", src / "personal", src / "work"


def _importer(tmp_path: Path, *extras: Path) -> LocalMemory:
    ws = tmp_path / "dst" / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    for extra in extras:
        extra.mkdir(parents=True, exist_ok=True)
    return LocalMemory(settings_for(ws, tmp_path / "dst" / "state", extra=tuple(str(e) for e in extras)))


@pytest.mark.parametrize("order", ["same", "reversed"])
def test_extra_paths_are_matched_by_their_folder_name_never_by_position(order, tmp_path):
    """Files of the archive's `personal` extra path go to this machine's `personal`, whichever
    position each is configured at (it was the N-th: in the other order, the diary landed in `work`)."""
    archive, _, _ = _two_extra_paths(tmp_path)
    personal, work = tmp_path / "dst" / "personal", tmp_path / "dst" / "work"
    dst = _importer(tmp_path, *((personal, work) if order == "same" else (work, personal)))
    dst.import_archive(str(archive))
    assert sorted(p.name for p in personal.iterdir()) == ["diary.md"]
    assert sorted(p.name for p in work.iterdir()) == ["plan.md"]


def test_extra_paths_of_the_same_name_are_matched_by_their_path_first(tmp_path):
    """Two extra paths named alike (`a/notes`, `b/notes`), configured here in the other order at the
    same paths (another workspace of this machine): each file goes back to its own."""
    a, b = tmp_path / "a" / "notes", tmp_path / "b" / "notes"
    write(a / "x.md", "# X\n")
    write(b / "y.md", "# Y\n")
    (tmp_path / "src").mkdir()
    memory = LocalMemory(settings_for(tmp_path / "src", tmp_path / "src-state", extra=(str(a), str(b))))
    memory.export_archive(str(tmp_path / "notes.tar.gz"))
    (a / "x.md").unlink()
    (b / "y.md").unlink()
    _importer(tmp_path, b, a).import_archive(str(tmp_path / "notes.tar.gz"))
    assert [p.name for p in a.iterdir()] == ["x.md"] and [p.name for p in b.iterdir()] == ["y.md"]


def _notes_exported(tmp_path: Path) -> Path:
    """The reviewer's archive: two extra paths of one folder name, `p/notes` and `q/notes`."""
    write(tmp_path / "a" / "MEMORY.md", "# M\n")
    write(tmp_path / "p" / "notes" / "p1.md", "p1\n")
    write(tmp_path / "q" / "notes" / "q1.md", "q1\n")
    memory = LocalMemory(settings_for(tmp_path / "a", tmp_path / "st1",
                                      extra=(str(tmp_path / "p" / "notes"), str(tmp_path / "q" / "notes"))))
    memory.export_archive(str(tmp_path / "e.tgz"))
    return tmp_path / "e.tgz"


def test_extra_paths_sharing_a_folder_name_pair_in_order_with_as_many_here(tmp_path, cli):
    """`p/notes` and `q/notes` exported, `r/notes` and `s/notes` here: it was refused ('matches 2 by
    folder name'), and nothing could make it go. As many of one name here as in the archive are
    paired in the order each configuration lists them, said in a warning."""
    archive = _notes_exported(tmp_path)
    r, s = tmp_path / "r" / "notes", tmp_path / "s" / "notes"
    r.mkdir(parents=True)
    s.mkdir(parents=True)
    write(tmp_path / "b" / "MEMORY.md", "# M\n")
    done = cli("-w", tmp_path / "b", "--state-dir", tmp_path / "st2", "--extra", r, "--extra", s, "import", archive)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in r.iterdir()] == ["p1.md"] and [p.name for p in s.iterdir()] == ["q1.md"]
    assert (f"share the folder name notes: paired in the order each configuration lists them "
            f"({tmp_path}/p/notes -> {r}; {tmp_path}/q/notes -> {s})") in done.stderr


@pytest.mark.parametrize("here", [("r/notes",), (), ("r/notes", "s/notes", "t/notes")], ids=["fewer", "none", "more"])
def test_the_refusal_of_extra_paths_gives_a_command_that_imports_them(here, tmp_path, cli):
    """`p/notes` and `q/notes` exported, one `notes` here (or none, or three): refused, and its
    advice ('configure one') could not work. The refusal gives the command that imports them at the
    archive's own paths; run as printed, on a machine without them, it does."""
    archive = _notes_exported(tmp_path)
    shutil.rmtree(tmp_path / "p")
    shutil.rmtree(tmp_path / "q")  # another machine: neither is here
    extras = [tmp_path / name for name in here]
    for extra in extras:
        extra.mkdir(parents=True)
    ws = tmp_path / "b"
    write(ws / "MEMORY.md", "# M\n")
    flags = [a for e in extras for a in ("--extra", e)]
    refused = cli("-w", ws, "--state-dir", tmp_path / "st2", *flags, "import", archive)
    assert refused.returncode == 2 and "nothing was written" in refused.stderr
    command = refused.stderr.split("`")[-2]
    assert command.startswith(f"mkdir -p {tmp_path}/p/notes {tmp_path}/q/notes && openclaw-memory -w {ws} ")
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    ran = subprocess.run(["sh", "-c", command], capture_output=True, text=True,
                         env={**{k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")},
                              "PATH": path, "OPENCLAW_MEMORY_EMBEDDING_BACKEND": "hash"})
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "p" / "notes" / "p1.md").read_text() == "p1\n"
    assert (tmp_path / "q" / "notes" / "q1.md").read_text() == "q1\n"
    assert all(not any(extra.iterdir()) for extra in extras)


@pytest.mark.parametrize("here", [("work2", "personal2"), ("a/personal", "b/personal", "work")])
def test_an_extra_path_matching_none_or_several_here_refuses_the_import_naming_both_lists(here, tmp_path):
    """Other names (`work2`, `personal2`: the diary went to `work2`, exit 0), or two folders here of
    the diary's folder's name: refused, one line naming both lists; nothing written."""
    archive, personal, work = _two_extra_paths(tmp_path)
    extras = [tmp_path / "dst" / name for name in here]
    dst = _importer(tmp_path, *extras)
    before = tree(tmp_path / "dst")
    with pytest.raises(PathRefused) as refused:
        dst.import_archive(str(archive))
    message = refused.value.message
    assert "\n" not in message and "never by position" in message and "nothing was written" in message
    assert f"the archive's extra paths: {personal}, {work}; this workspace's: {', '.join(map(str, extras))})" in message
    assert ("matches none of" if len(here) == 2 else "matches 2 of this workspace's by its folder name (personal)") in message
    assert tree(tmp_path / "dst") == before


def test_a_symlink_on_the_way_here_is_refused_and_nothing_is_written(source, tmp_path):
    archive = exported(source)
    dst = target(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (dst.settings.workspace / "memory").symlink_to(outside)
    with pytest.raises(PathRefused, match="cannot be imported here"):
        dst.import_archive(str(archive))
    assert list(outside.iterdir()) == [] and sorted(p.name for p in dst.settings.workspace.iterdir()) == ["memory"]


@pytest.mark.parametrize("step", ["import:staged", "import:placed"])
def test_an_import_killed_at_any_step_loses_nothing_and_running_it_again_finishes(step, source, tmp_path, cli_process):
    archive = exported(source)
    dst = target(tmp_path)
    mine = b"# Memory\n\nThis machine's own root file.\n"
    write(dst.settings.workspace / "MEMORY.md", mine)
    env = {"OPENCLAW_WORKSPACE": str(dst.settings.workspace), "OPENCLAW_STATE_DIR": str(dst.settings.state_dir)}
    extra = ("--extra", str(dst.settings.extra_paths[0]))
    killed = cli_process("import", str(archive), "--force", *extra, env=fault(f"{step}=kill", env=env))
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    # What --force replaces is in the history before anything is replaced.
    held = (dst.settings.workspace / "MEMORY.md").read_bytes()
    assert held == mine or any(v.version == version_of(mine) and v.available for v in dst.history("MEMORY.md").versions)

    again = cli_process("import", str(archive), "--force", *extra, env=env)
    assert again.returncode == 0, again.stderr
    memory = source[0]
    for rel in ("MEMORY.md", "memory/2026-11-30.md", "memory/people/ann.md"):
        assert (dst.settings.workspace / rel).read_bytes() == (memory.settings.workspace / rel).read_bytes(), rel
    for rel in ("memory/2026-11-30.md", "memory/people/ann.md"):
        assert versions(dst, rel) == versions(memory, rel), rel
    assert [v for v in versions(dst, "MEMORY.md") if v[0] == version_of(mine)]
    dst.restore("memory/kettle.md", last=True)


@pytest.mark.parametrize("step", ["import:staged", "import:placed"])
def test_a_killed_import_is_named_by_doctor_and_finished_by_its_fix(step, source, tmp_path, cli_process):
    """Killed with some files placed and others not, the import is journaled: plain doctor names it
    and doctor --fix runs it again, ending with every file as the archive has it and its history
    (before: doctor said nothing, and the workspace stayed half imported until someone thought of
    running the same import again)."""
    archive = exported(source)
    dst = target(tmp_path)
    write(dst.settings.workspace / "MEMORY.md", b"# Memory\n\nThis machine's own root file.\n")
    env = {"OPENCLAW_WORKSPACE": str(dst.settings.workspace), "OPENCLAW_STATE_DIR": str(dst.settings.state_dir)}
    extra = ("--extra", str(dst.settings.extra_paths[0]))
    killed = cli_process("import", str(archive), "--force", *extra, env=fault(f"{step}=kill", env=env))
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    plain = cli_process(*extra, "doctor", "--json", env=env)
    (found,) = [f for f in json.loads(plain.stdout)["findings"] if f["id"] == "interrupted-move"]
    assert f"import of {archive} --force" in found["message"]
    fixed = cli_process(*extra, "doctor", "--fix", "--json", env=env)
    (repair,) = [r for r in json.loads(fixed.stdout)["repairs"] if r["id"] == "interrupted-move"]
    assert repair["status"] == "completed", repair
    memory = source[0]
    for rel in ("MEMORY.md", "memory/2026-11-30.md", "memory/people/ann.md"):
        assert (dst.settings.workspace / rel).read_bytes() == (memory.settings.workspace / rel).read_bytes(), rel
    for rel in ("memory/2026-11-30.md", "memory/people/ann.md"):
        assert versions(dst, rel) == versions(memory, rel), rel
    assert "interrupted-move" not in {f["id"] for f in json.loads(cli_process(*extra, "doctor", "--json", env=env).stdout)["findings"]}


def test_a_killed_import_whose_archive_is_gone_is_dropped_saying_so_and_blocks_nothing(source, tmp_path, cli_process):
    archive = exported(source)
    dst = target(tmp_path)
    env = {"OPENCLAW_WORKSPACE": str(dst.settings.workspace), "OPENCLAW_STATE_DIR": str(dst.settings.state_dir)}
    extra = ("--extra", str(dst.settings.extra_paths[0]))
    killed = cli_process("import", str(archive), *extra, env=fault("import:placed=kill", env=env))
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    archive.unlink()
    write(dst.settings.workspace / "memory" / "mine.md", "# Mine\n")
    assert cli_process(*extra, "read", "memory/mine.md", env=env).returncode == 0
    moved = cli_process(*extra, "mv", "memory/mine.md", "memory/ours.md", env=env)  # finishes what it can first
    assert moved.returncode == 0, moved.stderr
    assert f"the interrupted import of {archive}" in moved.stderr and "could not be run again" in moved.stderr
    assert "interrupted-move" not in {f["id"] for f in json.loads(cli_process(*extra, "doctor", "--json", env=env).stdout)["findings"]}


# -- damaged and hostile archives ------------------------------------------------------------------


def rebuilt(archive: Path, out: Path, edit) -> Path:
    """The archive's manifest and members, changed by ``edit(manifest, members)`` (members: a list of
    [TarInfo, bytes]; an edit returning bytes gives the manifest's bytes), written again as a tar.gz."""
    members = []
    with tarfile.open(archive, "r:gz") as tar:
        for info in tar:
            members.append([info, tar.extractfile(info).read()])
    manifest = json.loads(members[0][1])
    raw = edit(manifest, members)  # the manifest's bytes themselves, where an edit returns them
    body = raw if isinstance(raw, bytes) else json.dumps(manifest).encode()
    if members and members[0][0].name == "manifest.json":
        members[0][1] = body
    with tarfile.open(out, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for info, data, *header_only in members:
            if header_only:  # the header alone, declaring its own size: no data follows it
                # (written by hand: Python 3.13's addfile refuses a sized member without its data)
                header = info.tobuf(tar.format, tar.encoding, tar.errors)
                tar.fileobj.write(header)
                tar.offset += len(header)
                continue
            if info.isreg():
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return out


def _entry(name: str, data: bytes, kind=tarfile.REGTYPE, **fields) -> list:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mode = kind, len(data) if kind == tarfile.REGTYPE else 0, 0o600
    for k, v in fields.items():
        setattr(info, k, v)
    return [info, data]


def _listed(manifest: dict, name: str, data: bytes) -> None:
    manifest["members"].append({"name": name, "size": len(data), "hash": version_of(data)})


def _traversal(manifest, members):
    evil = b"# escaped\n"
    name = "files/../../escaped.md"
    manifest["files"].append({"root": "workspace", "path": "../escaped.md", "member": name, "mode": 0o644})
    _listed(manifest, name, evil)
    members.append(_entry(name, evil))


def _absolute(manifest, members):
    evil = b"# escaped\n"
    name = "/tmp/openclaw-export-escaped.md"
    _listed(manifest, name, evil)
    members.append(_entry(name, evil))


def _symlink(manifest, members):
    members.insert(1, _entry("files/memory/link.md", b"", tarfile.SYMTYPE, linkname="/etc/passwd"))


def _hardlink(manifest, members):
    members.insert(1, _entry("files/memory/hard.md", b"", tarfile.LNKTYPE, linkname="files/MEMORY.md"))


def _device(manifest, members):
    members.insert(1, _entry("files/memory/dev.md", b"", tarfile.CHRTYPE, devmajor=1, devminor=3))


def _folder(manifest, members):
    members.insert(1, _entry("files/memory/sub", b"", tarfile.DIRTYPE))


def _member_past_the_cap(manifest, members):
    first = next(m for m in manifest["members"] if m["name"].startswith("files/"))
    first["size"] = MEMBER_LIMIT + 1


def _header_past_the_manifest(manifest, members):
    member = next(m for m in members if m[0].name.startswith("files/"))
    member[0].size = MEMBER_LIMIT + 1
    member.append("header only")


def _total_past_the_cap(manifest, members):
    for n in range(TOTAL_LIMIT // MEMBER_LIMIT + 1):
        manifest["members"].append({"name": f"objects/{n:032x}", "size": MEMBER_LIMIT, "hash": f"{n:032x}"})


def _wrong_hash_in_the_last_member(manifest, members):
    info, data = members[-1]
    members[-1][1] = data[:-1] + bytes([data[-1] ^ 1])


def _wrong_hash_in_a_file(manifest, members):
    member = next(m for m in members if m[0].name == "files/MEMORY.md")
    member[1] = member[1].replace(b"heron", b"HERON")


def _manifest_lists_a_missing_member(manifest, members):
    del members[-1]


def _manifest_object_named_by_another_hash(manifest, members):
    listed = next(m for m in manifest["members"] if m["name"].startswith("objects/"))
    listed["hash"] = "0" * 32
    member = next(m for m in members if m[0].name == listed["name"])
    member[1] = b""  # whatever: the manifest is refused first
    listed["size"] = 0


def _object_no_history_lists(manifest, members):
    stray = b"# a version no history lists\n"
    _listed(manifest, f"objects/{version_of(stray)}", stray)
    members.append(_entry(f"objects/{version_of(stray)}", stray))


def _manifest_file_without_member(manifest, members):
    manifest["files"][0]["member"] = "files/nothing.md"


def _unlisted_member(manifest, members):
    members.append(_entry("files/memory/smuggled.md", b"# smuggled\n"))


def _manifest_not_first(manifest, members):
    members.append(members.pop(0))


def _newer_format(manifest, members):
    manifest["formatVersion"] = 3


def _a_format_not_a_number(manifest, members):
    manifest["formatVersion"] = "2"


def as_format_1(manifest, members):
    """What 0.1.0 exported: format 1, no version's name, movedFrom, previous or arrivedBy."""
    manifest["formatVersion"] = 1
    for path in manifest["history"]:
        for version in path["versions"]:
            for key in ("name", "movedFrom", "previous", "arrivedBy"):
                version.pop(key, None)


def _a_versions_name_in_an_undeclared_root(manifest, members):
    manifest["history"][0]["versions"][0]["name"] = {"root": "extra/7", "path": "a.md"}


def _a_versions_name_out_of_its_root(manifest, members):
    manifest["history"][0]["versions"][0]["movedFrom"] = {"root": "workspace", "path": "../escaped.md"}


def _a_previous_version_not_a_hash(manifest, members):
    manifest["history"][0]["versions"][0]["previous"] = "HEAD~1"


def _arrived_by_past_the_versions(manifest, members):
    manifest["history"][0]["versions"][0]["arrivedBy"] = 99


def _odd_origin(manifest, members):
    manifest["history"][0]["versions"][0]["origin"] = "rm -rf"


def _escapes_in_an_agent(manifest, members):
    """Written to the terminal by `log` and `history` as they are: a forged line, a colour, a title."""
    manifest["history"][0]["versions"][0]["agent"] = "\x1b[31mmain\x1b[0m\n5f0c8a1e2b7d  forged entry"


def _escapes_in_a_session(manifest, members):
    manifest["history"][0]["versions"][0]["session"] = "\x1b]0;a window title\x07"


def _line_break_in_the_exporting_agent(manifest, members):
    manifest["agent"] = "main\nimported nothing"


def _a_version_from_the_future(manifest, members):
    """Imported, it was logged as written in 3000: `log` listed it first, and a rollback to a moment
    after the import took the file for holding the version before it (the log's order and its times
    disagreed), rewriting what it held then."""
    manifest["history"][0]["versions"][-1]["time"] = 32503680000.0  # 3000-01-01


def _manifest_nested_too_deeply(manifest, members):
    """A manifest Python's parser gives up on: it was a RecursionError traceback, exit 1."""
    return b"[" * 100_000 + b"]" * 100_000


def _added_file(manifest, members, path: str, data: bytes) -> None:
    name = f"files/{path}"
    manifest["files"].append({"root": "workspace", "path": path, "member": name, "mode": 0o644})
    _listed(manifest, name, data)
    members.append(_entry(name, data))


def _a_file_and_a_folder_of_one_name(manifest, members):
    """Both could not be placed: it stopped half way, exit 1, "changed while it was imported", bidding
    a run again with --force that could never finish."""
    _added_file(manifest, members, "memory/kite.md", b"# Kite\n")
    _added_file(manifest, members, "memory/kite.md/tail.md", b"# Tail\n")


def _the_dream_diary_in_another_letter_case(manifest, members):
    """Imported, exit 0, as a file no scan lists, indexes or searches (a write there is refused)."""
    _added_file(manifest, members, "Dreams.md", b"# Dreams\n")


def _the_dream_diary_and_its_twin(manifest, members):
    _added_file(manifest, members, "DREAMS.md", b"# Dreams\n")
    _added_file(manifest, members, "dreams.md", b"# dreams\n")


def _a_set_id_mode(manifest, members):
    """Set-id and sticky bits: an export never writes them (nor would an import give them)."""
    manifest["files"][0]["mode"] = 0o4755


def _no_mode(manifest, members):
    """Every file's permission bits are carried: none is no export's."""
    del manifest["files"][0]["mode"]


def _a_versions_mode_not_bits(manifest, members):
    manifest["history"][0]["versions"][0]["mode"] = "rw-------"


def _a_folders_set_id_mode(manifest, members):
    manifest["folders"][0]["mode"] = 0o2755


def _a_folder_out_of_its_root(manifest, members):
    manifest["folders"].append({"root": "workspace", "path": "../outside", "mode": 0o700})


def _a_folder_in_an_undeclared_root(manifest, members):
    manifest["folders"].append({"root": "extra/7", "path": "x", "mode": 0o700})


def _a_folder_twice(manifest, members):
    manifest["folders"].append(dict(manifest["folders"][0]))


HOSTILE = {
    "a folder's set-id mode": (_a_folders_set_id_mode, "is not permission bits"),
    "a folder out of its root": (_a_folder_out_of_its_root, "not a plain relative path"),
    "a folder in an undeclared root": (_a_folder_in_an_undeclared_root, "an undeclared root"),
    "a folder twice": (_a_folder_twice, "lists a folder twice"),
    "set-id mode": (_a_set_id_mode, "is not permission bits"),
    "no mode": (_no_mode, "mode null is not permission bits"),
    "a version's mode not bits": (_a_versions_mode_not_bits, "is not permission bits"),
    "path traversal": (_traversal, "not a plain relative path"),
    "absolute name": (_absolute, "none an export writes"),
    "symlink member": (_symlink, "symbolic link"),
    "hardlink member": (_hardlink, "hard link"),
    "device member": (_device, "device"),
    "folder member": (_folder, "folder"),
    "member past the cap": (_member_past_the_cap, "past the limit"),
    "header past the manifest": (_header_past_the_manifest, "its header says"),
    "total past the cap": (_total_past_the_cap, "past the limit"),
    "wrong hash, last member": (_wrong_hash_in_the_last_member, "do not hash"),
    "wrong hash, a file": (_wrong_hash_in_a_file, "do not hash"),
    "manifest lists a missing member": (_manifest_lists_a_missing_member, "missing"),
    "manifest names an object by another hash": (_manifest_object_named_by_another_hash, "another hash"),
    "manifest file without its member": (_manifest_file_without_member, "member of its own"),
    "object no history lists": (_object_no_history_lists, "no history lists it"),
    "unlisted member": (_unlisted_member, "does not list"),
    "manifest not first": (_manifest_not_first, "first member"),
    "newer format": (_newer_format, "it is export format 3; this release reads formats 1 and 2 only"),
    "a format not a number": (_a_format_not_a_number, 'it is export format "2"; this release reads formats 1 and 2 only'),
    "a version's name in an undeclared root": (_a_versions_name_in_an_undeclared_root, "in an undeclared root"),
    "a version's name out of its root": (_a_versions_name_out_of_its_root, "not a plain relative path"),
    "a previous version not a hash": (_a_previous_version_not_a_hash, "is not an xxh3_128 hash"),
    "arrivedBy past the versions": (_arrived_by_past_the_versions, "arrivedBy 99 is past the"),
    "bad origin": (_odd_origin, "origin"),
    "escapes in an agent": (_escapes_in_an_agent, "manifest's agent"),
    "escapes in a session": (_escapes_in_a_session, "manifest's session"),
    "line break in the exporting agent": (_line_break_in_the_exporting_agent, "manifest's agent"),
    "a version from the future": (_a_version_from_the_future, "3000-01-01T00:00:00.000Z, later than now"),
    "manifest nested too deeply": (_manifest_nested_too_deeply, "nested too deeply"),
    "a file and a folder of one name": (_a_file_and_a_folder_of_one_name, "the one is a folder of the other"),
    "the dream diary in another letter case": (_the_dream_diary_in_another_letter_case, "not the dream diary's name"),
    "the dream diary and its twin": (_the_dream_diary_and_its_twin, "both DREAMS.md and dreams.md"),
}


@pytest.fixture
def used_target(tmp_path):
    """A target with files, a history and a state database, so that 'nothing written' covers them."""
    dst = target(tmp_path)
    write(dst.settings.workspace / "memory" / "own.md", "# Own\n")
    dst.history("memory/own.md")
    return dst


def _refused(cli, dst: LocalMemory, archive: Path, match: str) -> None:
    before = tree(dst.settings.workspace, dst.settings.state_dir, Path(dst.settings.extra_paths[0]))
    env = {"OPENCLAW_WORKSPACE": str(dst.settings.workspace), "OPENCLAW_STATE_DIR": str(dst.settings.state_dir)}
    res = cli("import", str(archive), "--extra", str(dst.settings.extra_paths[0]), env=env)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert match in res.stderr and "nothing was written" in res.stderr, res.stderr
    assert tree(dst.settings.workspace, dst.settings.state_dir, Path(dst.settings.extra_paths[0])) == before
    assert not Path("/tmp/openclaw-export-escaped.md").exists()
    assert not (dst.settings.workspace.parent / "escaped.md").exists()


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_archive_is_refused_in_one_line_and_writes_nothing(kind, source, used_target, cli, tmp_path):
    edit, match = HOSTILE[kind]
    archive = rebuilt(exported(source), tmp_path / "hostile.tar.gz", edit)
    _refused(cli, used_target, archive, match)


def test_a_file_where_a_folder_of_the_archive_should_be_is_refused_in_one_line(source, tmp_path, cli):
    """`memory` a file here: import said "not a folder (…/memory)", exit 1, naming no file and not
    saying whether anything was written; `write` refuses the same path in its words, exit 2."""
    dst = target(tmp_path)
    write(dst.settings.workspace / "memory", "a file where the folder should be\n")
    _refused(cli, dst, exported(source), "a folder on its path is a file")


def test_the_untouched_rebuild_imports(source, used_target, tmp_path):
    """The control for the hostile archives: the same rebuild without a change is taken."""
    archive = rebuilt(exported(source), tmp_path / "same.tar.gz", lambda manifest, members: None)
    assert len(used_target.import_archive(str(archive)).files) == 4


@pytest.mark.parametrize("damage", ["not a tar", "cut short", "garbled", "empty", "plain tar without a manifest"])
def test_a_damaged_archive_is_refused_in_one_line_and_writes_nothing(damage, source, used_target, cli, tmp_path):
    data = exported(source).read_bytes()
    bad = tmp_path / "bad.tar.gz"
    if damage == "not a tar":
        bad.write_bytes(b"# just some notes\n" * 100)
    elif damage == "cut short":
        bad.write_bytes(data[: len(data) // 2])
    elif damage == "garbled":
        bad.write_bytes(data[:40] + bytes(b ^ 0x5A for b in data[40:80]) + data[80:])
    elif damage == "empty":
        bad.write_bytes(b"")
    else:
        with tarfile.open(bad, "w") as tar:
            info = tarfile.TarInfo("files/MEMORY.md")
            info.size = 4
            tar.addfile(info, io.BytesIO(b"# x\n"))
    _refused(cli, used_target, bad, "")


# -- bad input ---------------------------------------------------------------------------------------


def test_bad_archive_arguments_are_one_line_exit_2(source, tmp_path, cli):
    memory, archive = source
    env = {"OPENCLAW_WORKSPACE": str(memory.settings.workspace), "OPENCLAW_STATE_DIR": str(memory.settings.state_dir)}
    cases = [
        (("import", str(tmp_path / "missing.tar.gz")), "no such file"),
        (("import", str(tmp_path)), "folder"),
        (("import", "/dev/null"), "not a plain file"),
        (("export", str(tmp_path)), "folder"),
        (("export", str(tmp_path / "no-such-folder" / "a.tar.gz")), "does not exist"),
    ]
    archive.write_bytes(b"someone's file")
    cases.append((("export", str(archive)), "--force"))
    for args, match in cases:
        res = cli(*args, env=env)
        assert res.returncode == 2, (args, res.stdout, res.stderr)
        assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert match in res.stderr, (args, res.stderr)
    assert archive.read_bytes() == b"someone's file"
    assert cli("export", str(archive), "--force", env=env).returncode == 0
    assert tarfile.is_tarfile(archive)
    assert not [p for p in tmp_path.rglob("*.tmp")]


def test_export_force_replaces_only_a_plain_file_outside_the_memory(source, tmp_path, cli):
    """--force renamed the archive over whatever was at ARCHIVE: a device node (root replaced
    /dev/full with a tar), a FIFO, the symbolic link itself; and into the workspace and the state
    dir: MEMORY.md or AGENTS.md replaced with no version recorded, state.db (the whole history) gone."""
    memory, archive = source
    settings = memory.settings
    env = {"OPENCLAW_WORKSPACE": str(settings.workspace), "OPENCLAW_STATE_DIR": str(settings.state_dir)}
    extra = Path(str(settings.extra_paths[0]))
    extra_args = ("--extra", str(extra))
    odd = tmp_path / "odd"
    odd.mkdir()
    os.mkfifo(odd / "fifo")
    (odd / "link").symlink_to(tmp_path / "elsewhere.tar.gz")
    (odd / "to-memory").symlink_to(settings.workspace)  # a folder that is the workspace, by another name
    write(settings.workspace / "AGENTS.md", "# Agents\n\nnot memory, and in no history\n")
    cases = [(odd / "fifo", "a FIFO"), (odd / "link", "a symbolic link"),
             (settings.workspace / "MEMORY.md", "inside the workspace"), (settings.workspace / "AGENTS.md", "inside the workspace"),
             (odd / "to-memory" / "MEMORY.md", "inside the workspace"),
             (extra / "ideas.md", "inside an extra path"),
             (settings.data_dir / "state.db", "inside openclaw-memory's data")]
    if os.geteuid() == 0:
        os.mknod(odd / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
        cases.append((odd / "null", "a device"))
    before = {p: (os.lstat(p).st_mode, p.read_bytes() if p.is_file() and not p.is_symlink() else None) for p, _ in cases}
    for place, words in cases:
        res = cli("export", str(place), "--force", *extra_args, env=env)
        assert res.returncode == 2 and "Traceback" not in res.stderr, (place, res.stdout, res.stderr)
        assert len(res.stderr.strip().splitlines()) == 1 and words in res.stderr, (place, res.stderr)
    assert {p: (os.lstat(p).st_mode, p.read_bytes() if p.is_file() and not p.is_symlink() else None) for p, _ in cases} == before
    assert not (tmp_path / "elsewhere.tar.gz").exists()
    assert memory.history("MEMORY.md").versions  # the history is readable: state.db was not replaced
    # The control: a plain file outside the memory is replaced with --force.
    archive.write_bytes(b"an older export")
    assert cli("export", str(archive), "--force", *extra_args, env=env).returncode == 0 and tarfile.is_tarfile(archive)


@pytest.mark.skipif(os.geteuid() != 0, reason="a bind mount needs root")
def test_export_force_never_writes_over_the_data_through_a_second_name_of_its_folder(source, tmp_path, cli):
    """A bind mount (a container's volume) names the state dir's folder by another path: the check
    compared paths only, and `export --force` wrote the archive over state.db, the history gone."""
    memory, _ = source
    settings = memory.settings
    env = {"OPENCLAW_WORKSPACE": str(settings.workspace), "OPENCLAW_STATE_DIR": str(settings.state_dir)}
    extra_args = ("--extra", str(settings.extra_paths[0]))
    for place, words in ((settings.state_dir, "inside openclaw-memory's data"), (settings.workspace, "inside the workspace")):
        second = tmp_path / f"second-{place.name}"
        second.mkdir()
        if subprocess.run(["mount", "--bind", str(place), str(second)], capture_output=True).returncode != 0:
            pytest.skip("cannot bind-mount here")
        try:
            inside = second / Path(settings.data_dir / "state.db").relative_to(settings.state_dir) if place == settings.state_dir \
                else second / "MEMORY.md"
            before = inside.read_bytes()
            res = cli("export", str(inside), "--force", *extra_args, env=env)
            assert res.returncode == 2 and words in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
            assert inside.read_bytes() == before
        finally:
            subprocess.run(["umount", "-l", str(second)], check=False)
    assert memory.history("MEMORY.md").versions  # state.db was not replaced


def test_an_archive_this_user_cannot_read_is_refused_with_the_reason():
    """As another user (root drops to nobody in a forked child): a 0600 archive of root's is refused,
    exit 2's UsageError with the system's reason; the control, a 0644 one beside it, opens."""
    from openclaw_memory.archive.importer import _open_archive

    base = Path(tempfile.mkdtemp(prefix="ocm-archive-"))  # not under pytest's 0700 tmp_path
    try:
        os.chmod(base, 0o755)
        locked, readable = base / "locked.tar.gz", base / "readable.tar.gz"
        for path, mode in ((locked, 0o600), (readable, 0o644)):
            path.write_bytes(b"archive")
            os.chmod(path, mode)
        if os.geteuid() != 0:
            os.chmod(locked, 0)
        pid = os.fork()
        if pid == 0:  # the child: report by exit status, never return into pytest
            code = 3
            try:
                if os.geteuid() == 0:
                    os.setgid(65534)
                    os.setuid(65534)
                os.close(_open_archive(str(readable)))
                try:
                    _open_archive(str(locked))
                    code = 1
                except UsageError as exc:
                    code = 0 if "Permission denied" in exc.message and exc.exit_code == 2 else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        shutil.rmtree(base)


def test_export_stops_when_a_file_changes_while_it_is_copied(source, monkeypatch):
    """A file rewritten between its sighting and its copy: the export says so and leaves nothing."""
    memory, archive = source
    from openclaw_memory.archive import export

    real = export._add_file

    def rewrite_first(tar, resolved, member):
        if resolved.display == "MEMORY.md":
            write(memory.settings.workspace / "MEMORY.md", "# Memory\n\n- changed meanwhile\n")
        return real(tar, resolved, member)

    monkeypatch.setattr(export, "_add_file", rewrite_first)
    with pytest.raises(Exception, match="MEMORY.md changed while it was exported; nothing was written"):
        memory.export_archive(str(archive))
    assert not archive.exists()
    assert not [p for p in archive.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_files_member_is_found_without_going_through_every_member():
    """The plan looked each file's member up by walking the manifest's list: quadratic in the files
    (20,000 took 2.4 s; a 64 MiB manifest lists some 300,000, hours before a refusal or a byte
    written). Each look-up now goes through the list at most once in all."""
    class Counted(tuple):
        walks = 0

        def __iter__(self):
            Counted.walks += 1
            return super().__iter__()

    members = Counted(Member(f"files/memory/n{i}.md", 1, "0" * 32) for i in range(100))
    manifest = ArchiveManifest("p", "main", "c", (), members, (), ())
    assert [manifest.member(m.name) for m in tuple.__iter__(members)] == list(tuple.__iter__(members))
    assert Counted.walks <= 1


# -- a rollback across an import ------------------------------------------------------------------


def _moment() -> str:
    """Now, as `rollback --to` takes it, once the clock has moved past it."""
    from openclaw_memory.rollback.plan import iso_moment

    now = time.time()
    while time.time() <= now + 0.001:
        time.sleep(0.001)
    return iso_moment(now)


def test_a_rollback_across_an_import_of_the_workspaces_own_export_puts_each_moment_back(source, tmp_path):
    """Export, then edits (an append, a removal, a move, an outside edit in the extra path), then the
    export imported back with --force. The import logged nothing for the removed note (its versions
    were logged already) though it brought it back, and logged the moved note's versions again under
    its old name: a rollback to after the import took the note brought back for removed (archived
    it), and one to a time between the edits and the import brought the moved note back at its old
    name as well."""
    memory, archive = source
    ws, extra = memory.settings.workspace, Path(memory.settings.extra_paths[0])
    memory.export_archive(str(archive))

    def files() -> dict[str, bytes]:
        return {str(p): p.read_bytes() for root in (ws, extra) for p in sorted(root.rglob("*")) if p.is_file()}

    exported, after_export = files(), _moment()
    memory.read("memory/2026-11-30.md")
    memory.write("memory/2026-11-30.md", append="- edited after the export")
    memory.read("memory/people/ann.md")
    memory.remove("memory/people/ann.md")
    memory.read("MEMORY.md")
    memory.move("MEMORY.md", "memory/root-copy.md", force=True)
    write(extra / "ideas.md", "# Ideas\n\n- edited by hand\n")
    memory.history(str(extra / "ideas.md"))
    edited, after_edits = files(), _moment()
    memory.import_archive(str(archive), force=True)
    imported, after_import = files(), _moment()
    assert imported != edited and imported != exported

    for moment, expected in ((after_edits, edited), (after_import, imported), (after_export, exported),
                             (after_import, imported), (after_edits, edited)):
        memory.restore_all(moment, force=True)
        assert files() == expected, moment


def test_a_rollback_across_an_import_of_older_versions_keeps_what_was_here_before_it(source, tmp_path):
    """Another workspace's export, its versions older than this workspace's own, imported over them
    (--force): logged after them, in the log's order they came last, and a rollback to a time between
    this workspace's write and the import put the archive's version back, which arrived only later."""
    memory, archive = source
    memory.export_archive(str(archive))
    dst = target(tmp_path)
    note = dst.settings.workspace / "memory" / "2026-11-30.md"
    write(note, "# Here\n\nwritten here, after the export\n")
    dst.history("memory/2026-11-30.md")
    before_import = _moment()
    dst.import_archive(str(archive), force=True)
    after_import = _moment()
    assert note.read_text() == HERON_2

    dst.restore_all(before_import, force=True)
    assert note.read_text() == "# Here\n\nwritten here, after the export\n"
    dst.restore_all(after_import, force=True)
    assert note.read_text() == HERON_2


def _elsewhere(tmp_path: Path, cli, notes: dict[str, str]) -> dict[str, str]:
    """Another workspace holding ``notes``, each seen by its history; the environment that names it."""
    ws = tmp_path / "elsewhere" / "ws"
    env = {"OPENCLAW_WORKSPACE": str(ws), "OPENCLAW_STATE_DIR": str(tmp_path / "elsewhere" / "state")}
    for rel, text in notes.items():
        write(ws / rel, text)
        assert cli("read", rel, env=env).returncode == 0
    return env


def test_a_rollback_to_before_an_import_archives_a_note_the_import_brought(workspace, tmp_path, cli):
    """Another workspace's note, its versions dated before the moment: a rollback to that moment
    (before the import) said "unchanged memory/n.md" and kept it, the imported versions taken for what
    was here then."""
    elsewhere = _elsewhere(tmp_path, cli, {"memory/n.md": "from elsewhere\n"})
    archive = tmp_path / "n.tar.gz"
    assert cli("export", str(archive), env=elsewhere).returncode == 0
    write(workspace / "memory" / "h.md", "here\n")
    assert cli("read", "memory/h.md").returncode == 0
    before_import = _moment()
    assert cli("import", str(archive)).returncode == 0
    after_import = _moment()

    dry = cli("rollback", "--to", before_import, "--dry-run", "--json").json()
    assert {f["path"]: f["fate"] for f in dry["files"]} == {"memory/h.md": "unchanged", "memory/n.md": "archive"}
    assert cli("rollback", "--to", before_import, "--force").returncode == 0
    assert sorted(os.listdir(workspace / "memory")) == ["h.md"]
    assert cli("rollback", "--to", after_import, "--force").returncode == 0
    assert (workspace / "memory" / "n.md").read_text() == "from elsewhere\n"


def test_a_rollback_to_before_an_import_puts_back_what_was_here_not_the_archives_version(workspace, tmp_path, cli):
    """a.md held LOCAL-1 here at T; another workspace's SOURCE-1, logged there between LOCAL-1 and T,
    imported with --force after LOCAL-2: a rollback to T said "unchanged" and left SOURCE-1, a version
    that was never here then. And `history`, newest first, listed SOURCE-1 above LOCAL-2, written later."""
    note = write(workspace / "memory" / "a.md", "LOCAL-1\n")
    assert cli("read", "memory/a.md").returncode == 0
    elsewhere = _elsewhere(tmp_path, cli, {"memory/a.md": "SOURCE-1\n"})
    at_t = _moment()
    archive = tmp_path / "a.tar.gz"
    assert cli("export", str(archive), env=elsewhere).returncode == 0
    write(note, "LOCAL-2\n")
    assert cli("read", "memory/a.md").returncode == 0
    assert cli("import", str(archive), "--force").returncode == 0
    after_import = _moment()

    listed = cli("history", "memory/a.md", "--json").json()["versions"]
    assert [v["time"] for v in listed] == sorted((v["time"] for v in listed), reverse=True)
    assert [(v["version"], v["origin"]) for v in listed] == [
        (version_of(b"SOURCE-1\n"), "restore"), (version_of(b"LOCAL-2\n"), "external-edit"),
        (version_of(b"SOURCE-1\n"), "external-edit"), (version_of(b"LOCAL-1\n"), "external-edit")]
    assert listed[0]["current"] and not any(v["current"] for v in listed[1:])

    dry = cli("rollback", "--to", at_t, "--dry-run", "--json").json()
    assert [(f["path"], f["fate"], f["version"]) for f in dry["files"]] == [
        ("memory/a.md", "rewrite", version_of(b"LOCAL-1\n"))]
    assert cli("rollback", "--to", at_t, "--force").returncode == 0
    assert note.read_text() == "LOCAL-1\n"
    assert cli("rollback", "--to", after_import, "--force").returncode == 0
    assert note.read_text() == "SOURCE-1\n"


def test_the_time_history_prints_for_a_version_an_import_placed_rolls_back_to_it(workspace, tmp_path, cli):
    """n.md written here, then elsewhere 0.1 s later, that export imported here with --force: `history`
    listed the archive's version `[current]` at its own time, and `rollback --to` that time planned
    this workspace's own version back (it held it then), though `rollback --to` the time `history`
    prints goes back to that version. The import is listed too, at its moment: the current version."""
    note = write(workspace / "memory" / "n.md", "mine\n")
    assert cli("read", "memory/n.md").returncode == 0
    time.sleep(0.1)
    elsewhere = _elsewhere(tmp_path, cli, {"memory/n.md": "theirs\n"})
    archive = tmp_path / "n.tar.gz"
    assert cli("export", str(archive), env=elsewhere).returncode == 0
    before_import = _moment()
    assert cli("import", str(archive), "--force").returncode == 0

    listed = cli("history", "memory/n.md", "--json").json()["versions"]
    assert [(v["version"], v["origin"], v["current"]) for v in listed] == [
        (version_of(b"theirs\n"), "restore", True), (version_of(b"theirs\n"), "external-edit", False),
        (version_of(b"mine\n"), "external-edit", False)]
    assert listed[0]["time"] > before_import > listed[1]["time"]
    assert listed[0]["time"] == cli("log", "--json").json()["entries"][0]["time"]
    dry = cli("rollback", "--to", listed[0]["time"], "--dry-run", "--json").json()
    assert [(f["path"], f["fate"]) for f in dry["files"]] == [("memory/n.md", "unchanged")]
    # The archive's own entry keeps its time there: this workspace held its own version then.
    dry = cli("rollback", "--to", listed[1]["time"], "--dry-run", "--json").json()
    assert [(f["path"], f["fate"], f["version"]) for f in dry["files"]] == [
        ("memory/n.md", "rewrite", version_of(b"mine\n"))]
    assert note.read_text() == "theirs\n"


def test_an_import_onto_a_full_disk_names_the_folder_it_could_not_write(source, tmp_path, cli):
    """An extra path on a full disk: "no space left to write in the workspace or the state dir", no
    folder named, so the user could not tell which disk to free."""
    from conftest import fill_disk, tmpfs

    archive = exported(source)
    ws = tmp_path / "dst" / "ws"
    ws.mkdir(parents=True)
    with tmpfs(tmp_path / "dst" / "notes", "1m") as extra:
        fill_disk(extra)
        env = {"OPENCLAW_WORKSPACE": str(ws), "OPENCLAW_STATE_DIR": str(tmp_path / "dst" / "state")}
        done = cli("import", str(archive), "--extra", str(extra), env=env)
        assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert f"the disk is full: no space left to write in the workspace ({extra})" in done.stderr, done.stderr
        assert "nothing was written" in done.stderr
        assert sorted(os.listdir(extra)) == ["filler"] and not (ws / "MEMORY.md").exists()


def test_export_to_a_dash_is_refused_saying_it_writes_a_file(workspace, cli):
    # `export -` wrote an archive named "-" in the current folder, where a shell user meant stdout.
    write(workspace / "MEMORY.md", "# Memory\n")
    refused = cli("export", "-", cwd=workspace.parent)
    assert refused.returncode == 2 and refused.stderr == (
        "error: export writes a file, not standard output: give the archive a file name (./- for a file named -)\n")
    assert not (workspace.parent / "-").exists()


def test_import_from_a_dash_is_refused_as_export_to_one_is(workspace, cli):
    # `import -` read a file named "-" in the current folder ("no such file" where a shell user meant
    # stdin), while `export -` is refused: the same word for both, ./- naming the file.
    write(workspace / "MEMORY.md", "# Memory\n")
    assert cli("export", str(workspace.parent / "-")).returncode == 0
    refused = cli("import", "-", cwd=workspace.parent)
    assert refused.returncode == 2 and refused.stderr == (
        "error: import reads a file, not standard input: give the archive's file name (./- for a file named -)\n")
    assert cli("import", "./-", "--force", cwd=workspace.parent).returncode == 0  # the file named -


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_note_root_imports_into_a_users_workspace_is_the_users(open_base):
    """Root's import made each new note root's (a write's new note is the folder owner's): the user's
    own agent was then refused writing it, "read-only (owned by uid 0)"."""
    from conftest import NOBODY

    memory, base = _private_source(open_base)
    archive = base / "archive.tar.gz"
    memory.export_archive(str(archive))
    ws = base / "dst" / "ws"
    ws.mkdir(parents=True)
    os.chown(ws, NOBODY, NOBODY + 1)
    LocalMemory(settings_for(ws, base / "dst" / "state")).import_archive(str(archive))
    for made in ("memory", "memory/private.md", "memory/public.md"):
        st = os.stat(ws / made)
        assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY + 1), made
    assert stat.S_IMODE((ws / "memory" / "private.md").stat().st_mode) == 0o600  # still private: the user's alone


def test_a_note_deeper_than_a_path_may_name_is_left_out_of_an_export_and_named(source, tmp_path):
    """A note below folders deeper than PATH_MAX (the scan reaches it one folder at a time) made the
    whole export refused, "the path is longer than the system allows", naming no note: no backup at all."""
    from openclaw_memory.files.paths import PATH_MAX

    memory, archive = source
    fd = os.open(memory.settings.workspace / "memory", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(PATH_MAX // 250 + 1):
            os.mkdir("d" * 250, dir_fd=fd)
            fd, parent = os.open("d" * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), fd
            os.close(parent)
        note = os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(note, b"- deep fact\n")
        os.close(note)
    finally:
        os.close(fd)
    result = memory.export_archive(str(archive))
    assert "MEMORY.md" in result.files and not [f for f in result.files if f.endswith("deep.md")]
    [said] = [w for w in result.warnings if "deep.md" in w]
    assert "was left out of the archive: its path is" in said and "move it to a shallower folder" in said
    assert tarfile.is_tarfile(archive)
