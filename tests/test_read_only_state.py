"""A state dir mounted read-only (a bind mount, a read-only volume): the reading commands answer
from the index as it is, and nothing tries to write there (a real read-only bind mount; skipped
where this machine cannot make one: it needs root)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import write


@contextmanager
def read_only_view(source: Path, view: Path) -> Iterator[Path]:
    """``source`` bind-mounted read-only at ``view``."""
    view.mkdir()
    done = subprocess.run(["mount", "--bind", str(source), str(view)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {done.stderr.strip() or 'mount failed'}")
    try:
        remount = subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], capture_output=True, text=True)
        if remount.returncode != 0 or os.access(view, os.W_OK) and not _read_only(view):
            pytest.skip(f"cannot make a bind mount read-only here: {remount.stderr.strip() or 'still writable'}")
        yield view
    finally:
        subprocess.run(["umount", "-l", str(view)], check=False)


def _read_only(folder: Path) -> bool:
    return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)


def _copies(folder: Path | None = None) -> set[str]:
    return {n for n in os.listdir(folder or tempfile.gettempdir()) if n.startswith("openclaw-memory-memory-")}


def test_search_and_collections_answer_from_a_read_only_state_dir(cli, workspace, state_dir, tmp_path):
    """They failed, exit 2 (`cannot take the lock for index collection ... Read-only file system`),
    while the index was whole and status, log and read worked. A search now reads the index as it
    is, without its lock file's write or a sync, says once that it could not bring it up to date,
    and leaves no copy behind; a write is still refused before it changes anything."""
    write(workspace / "MEMORY.md", "# Memory\n\nGreen tea at four.\n")
    write(workspace / "memory" / "tea.md", "# Tea\n\nSencha, then genmaicha.\n")
    assert cli("index").returncode == 0
    before = _copies()
    with read_only_view(state_dir, tmp_path / "ro") as view:
        ro = ("--state-dir", str(view))
        fresh = cli("search", "genmaicha", *ro)
        assert fresh.returncode == 0 and "memory/tea.md#L1-L3" in fresh.stdout, fresh.stderr
        assert "could not be brought up to date" not in fresh.stderr  # nothing to bring up to date
        write(workspace / "memory" / "tea.md", "# Tea\n\nSencha, then genmaicha. Hojicha too.\n")
        stale = cli("search", "genmaicha", *ro)
        assert stale.returncode == 0 and "memory/tea.md" in stale.stdout, stale.stderr
        assert stale.stderr.count("the index could not be brought up to date: the state dir") == 1, stale.stderr
        assert "is mounted read-only" in stale.stderr
        done = cli("search", "genmaicha", "--json", *ro)
        assert done.returncode == 0 and done.json()["results"], done.stderr
        listed = cli("collections", "--json", *ro)
        assert listed.returncode == 0, listed.stderr
        assert cli("status", *ro).returncode == 0
        refused = cli("write", "memory/tea.md", "--append", "Oolong.", *ro)
        assert refused.returncode == 2 and "Read-only file system" in refused.stderr
        assert "Oolong" not in (workspace / "memory" / "tea.md").read_text()
    assert _copies() == before
    assert cli("search", "hojicha").returncode == 0  # the writable state dir syncs as before


def test_a_stale_search_on_a_read_only_state_dir_bids_remount_it_not_run_index(cli, workspace, state_dir, tmp_path):
    """Its JSON said `notes: [... mounted read-only ...]` beside `"action": "Run: `openclaw-memory ... index`"`,
    which fails there (cannot take the lock: Read-only file system); the text line bid the same."""
    write(workspace / "memory" / "tea.md", "# Tea\n\nSencha, then genmaicha.\n")
    assert cli("index").returncode == 0
    write(workspace / "memory" / "tea.md", "# Tea\n\nSencha, then genmaicha. Hojicha too.\n")
    with read_only_view(state_dir, tmp_path / "ro") as view:
        ro = ("--state-dir", str(view))
        for mode in ("hybrid", "text"):
            done = cli("search", "genmaicha", "--json", "--mode", mode, *ro)
            assert done.returncode == 0 and done.json()["stale"] is True, done.stderr
            action = done.json()["action"]
            assert action.startswith("Remount the state dir read-write, then run: `") and action.endswith(
                " index` (it is mounted read-only, where no index run can write)"), action
            said = cli("search", "genmaicha", "--mode", mode, *ro).stderr
            assert "(the state dir is mounted read-only: remount it read-write and run `" in said, said
            assert "(run `" not in said, said
    assert cli("search", "genmaicha", "--json", "--no-sync").json()["action"].startswith("Run: `")  # a writable one


def test_history_and_state_on_a_read_only_state_dir_warn_only_of_what_is_not_recorded(cli, workspace, state_dir, tmp_path):
    """`history` warned "the version MEMORY.md holds now is not recorded in the history" of the very
    version it listed as recorded, and `state` "new versions not recorded" where there were none."""
    assert cli("write", "MEMORY.md", "--append", "hello").returncode == 0
    with read_only_view(state_dir, tmp_path / "ro") as view:
        ro = ("--state-dir", str(view))
        listed = cli("history", "MEMORY.md", *ro)
        assert listed.returncode == 0 and "[current]" in listed.stdout, listed.stderr
        assert listed.stderr == "", listed.stderr
        states = cli("state", *ro)
        assert states.returncode == 0 and "not recorded" not in states.stderr + states.stdout, states.stderr
        write(workspace / "MEMORY.md", "hello\nedited by hand\n")
        edited = cli("history", "MEMORY.md", *ro)
        assert "is not recorded in the history" in edited.stderr, edited.stderr  # (true of this one)


def test_doctor_probes_a_copied_index_on_a_read_only_state_dir_as_a_search_loads_it(cli, workspace, state_dir, tmp_path,
                                                                                     monkeypatch):
    """A state dir copied (restored from a backup: new inodes, so the recorded probe no longer
    matches its files) and mounted read-only: doctor probed the shard in place, the engine's load
    failed to write there ("Read-only file system"), and a sound index, which search read, was
    reported damaged with `doctor --fix` to rebuild it. It now probes a private copy, as a search
    loads one: a sound shard is sound, a damaged one still damaged, and no copy is left behind."""
    write(workspace / "MEMORY.md", "# Memory\n\n- backups at 02:30\n")
    write(workspace / "memory" / "tea.md", "# Tea\n\nSencha, then genmaicha.\n")
    assert cli("index").returncode == 0
    copy = tmp_path / "copy"
    shutil.copytree(state_dir, copy, symlinks=True)
    temp = tmp_path / "temp"  # its own: another test's copies come and go in the shared one meanwhile
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    with read_only_view(copy, tmp_path / "ro") as view:
        ro = ("--state-dir", str(view))
        assert cli("search", "backups", *ro).returncode == 0
        plain = cli("doctor", *ro)
        assert "damaged" not in plain.stdout and "Read-only file system (os error" not in plain.stdout, plain.stdout
        found = cli("doctor", "--json", *ro)
        assert found.returncode == 1, found.stderr  # the state dir cannot be written: that is said
        assert [f["id"] for f in found.json()["findings"]] == ["state-dir-not-writable"], found.stdout
    assert _copies(temp) == set()
    changed = 0  # a start line rewritten in place (the payload pages hold no checksum): the probe's reading finds it
    for page in copy.glob("openclaw-memory/workspaces/*/index/edge/memory-*/segments/*/payload_storage/page_0.dat"):
        data = bytearray(page.read_bytes())
        for m in re.finditer(rb'"startLine":(1)\D', data):
            data[m.start(1)] = ord("3")
            changed += 1
        page.write_bytes(bytes(data))
    assert changed
    with read_only_view(copy, tmp_path / "ro2") as view:
        damaged = cli("doctor", "--json", "--state-dir", str(view))
        (finding,) = [f for f in damaged.json()["findings"] if f["id"] == "index-damaged"]
        assert "have a damaged vector or payload" in finding["message"], finding
        assert "Read-only file system" not in finding["message"], finding
    assert _copies(temp) == set()


@contextmanager
def small_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` at ``folder`` (skipped where this machine cannot mount one)."""
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or 'mount failed'}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _restored_older_index(cli, workspace: Path, state_dir: Path, tmp_path: Path) -> Path:
    """A copy of ``state_dir`` whose index folder is one taken before a note changed (a backup restored):
    the same number of points as the manifest lists, other ones."""
    write(workspace / "MEMORY.md", "# Memory\n\n- door codes in memory/\n")
    for i in range(1, 21):
        write(workspace / "memory" / f"n{i}.md", f"# Note {i}\n\nThe door code for room {i} is 30{i}.\n")
    assert cli("index").returncode == 0
    (data,) = (state_dir / "openclaw-memory" / "workspaces").iterdir()
    backup = tmp_path / "backup"
    shutil.copytree(data / "index", backup, symlinks=True)
    write(workspace / "memory" / "n5.md", "# Note 5\n\nThe door code for room 5 is 2222 now.\n")
    assert cli("index").returncode == 0
    copy = tmp_path / "copy"
    shutil.copytree(state_dir, copy, symlinks=True)
    restored = copy / "openclaw-memory" / "workspaces" / data.name / "index"
    shutil.rmtree(restored)
    shutil.copytree(backup, restored, symlinks=True)
    return copy


def test_search_on_a_read_only_state_dir_refuses_an_older_index_restored_there(cli, workspace, state_dir, tmp_path,
                                                                               monkeypatch):
    """Its copy was loaded unchecked: where doctor said index-damaged (its points are not the ones its
    manifest lists), search quoted the older shard ("The door code for room 5 is 305."), exit 0. The
    copy is now checked as the shard in place is (probed, digest and all, unless its files are those a
    process of ours recorded): the same one-line refusal naming doctor --fix, and no copy left behind."""
    copy = _restored_older_index(cli, workspace, state_dir, tmp_path)
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    from openclaw_memory.index.store.edge import EdgeStore

    probes: list[str] = []
    probe_at = EdgeStore._probe_at
    monkeypatch.setattr(EdgeStore, "_probe_at", lambda self, name, *a: probes.append(name) or probe_at(self, name, *a))
    with read_only_view(state_dir, tmp_path / "ro") as view:  # the files as written: their record vouches, no probe
        sound = cli("search", "door code for room 5", "--limit", "1", "--state-dir", str(view))
        assert sound.returncode == 0 and "2222" in sound.stdout, sound.stderr
        assert probes == []
    with read_only_view(copy, tmp_path / "ro2") as view:
        refused = cli("search", "door code for room 5", "--limit", "1", "--state-dir", str(view))
        assert refused.returncode != 0 and "305" not in refused.stdout, refused.stdout
        assert "its points are not the ones its manifest lists" in refused.stderr, refused.stderr
        assert "doctor --fix" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert str(view) in refused.stderr and str(temp) not in refused.stderr, refused.stderr
    assert probes and _copies(temp) == set()


def test_doctor_on_a_read_only_state_dir_says_a_shard_it_cannot_copy_is_unchecked(cli, workspace, state_dir, tmp_path,
                                                                                   monkeypatch):
    """With TMPDIR too small for the probe's copy, doctor dropped every index-damaged finding and said only
    state-dir-not-writable: the copy's "does not fit" error ended the whole index check. Each shard it
    cannot copy is now index-unchecked, naming TMPDIR, and no copy is left behind."""
    copy = _restored_older_index(cli, workspace, state_dir, tmp_path)
    with small_tmpfs(tmp_path / "tiny", "300k") as tiny, read_only_view(copy, tmp_path / "ro") as view:
        monkeypatch.setattr(tempfile, "tempdir", str(tiny))
        found = cli("doctor", "--json", "--state-dir", str(view))
        ids = [f["id"] for f in found.json()["findings"]]
        assert "index-unchecked" in ids, ids
        (finding,) = [f for f in found.json()["findings"] if f["id"] == "index-unchecked"]
        assert "set TMPDIR to a folder with room" in finding["message"] and str(tiny) in finding["message"], finding
        assert _copies(tiny) == set()


def test_doctor_keeps_the_damage_it_found_beside_a_shard_it_could_not_check(cli, workspace, state_dir, tmp_path,
                                                                            monkeypatch):
    """One shard that could not be checked (its check's error) took every other shard's index-damaged
    finding with it: doctor said nothing of the index. Both are said now."""
    copy = _restored_older_index(cli, workspace, state_dir, tmp_path)
    from openclaw_memory.errors import MemoryToolError
    from openclaw_memory.index.store.edge import EdgeStore

    check = EdgeStore.check

    def flaky(self, name, *a, **kw):
        if name.startswith("memory-root-"):
            raise MemoryToolError(f"index collection {name} cannot be checked: out of memory")
        return check(self, name, *a, **kw)

    monkeypatch.setattr(EdgeStore, "check", flaky)
    found = cli("doctor", "--json", "--state-dir", str(copy)).json()["findings"]
    by_id = {f["id"]: f["message"] for f in found}
    assert "its points are not the ones its manifest lists" in by_id.get("index-damaged", ""), found
    assert "cannot be checked: out of memory" in by_id.get("index-unchecked", ""), found


def test_search_on_a_read_only_state_dir_refuses_where_the_copy_leaves_no_room_to_load_it(cli_process, workspace,
                                                                                           state_dir, tmp_path):
    """With TMPDIR nearly full the copy fitted, then the engine's writes to its memory-mapped files
    overran it: `Bus error`, exit 135, and the copy was left in TMPDIR each time. The room a load needs
    beside the copy is asked first: one line naming TMPDIR, nothing left there."""
    write(workspace / "memory" / "tea.md", "# Tea\n\nSencha, then genmaicha.\n")
    assert cli_process("index").returncode == 0
    with small_tmpfs(tmp_path / "small", "8m") as small, read_only_view(state_dir, tmp_path / "ro") as view:
        done = cli_process("search", "genmaicha", "--state-dir", str(view), env={"TMPDIR": str(small)})
        assert done.returncode in (1, 2), (done.returncode, done.stderr)
        assert "set TMPDIR to a folder with room" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert _copies(small) == set()
