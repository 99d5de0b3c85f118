"""A note this user may not write in place is neither replaced nor removed (history.placing.is_read_only),
and what a rollback may still do with one: move it back, undo its own bring-back. The rule asked
as another user (uid 65534, in a forked child, under a ``mkdtemp`` folder made 0755: pytest's own
are 0700, where that user reaches nothing), and the refusals of commands that finished an
interrupted operation first."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_private_state import NOBODY, as_nobody
from test_rollback import run_killed
from test_serve import Serve

from conftest import env_for, run_in_process, run_paused, write

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user (uid 65534)")


def _mode(path: Path) -> str:
    return oct(path.stat().st_mode & 0o777)


def _read_all(cli, *rels: str) -> None:
    for rel in rels:
        assert cli("read", rel).returncode == 0, rel


# -- another user ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def warm(tmp_path_factory) -> None:
    """Every module the commands import, imported here first: the child acting as uid 65534 may not
    reach the interpreter's own library folder (under /root) to import one."""
    folder = tmp_path_factory.mktemp("warm")
    ws, sd = folder / "ws", folder / "state"
    write(ws / "memory" / "a.md", "# A\n")
    write(ws / "memory" / "b.md", "# B\n")
    for args in (("read", "memory/a.md"), ("read", "memory/b.md"), ("write", "memory/a.md", "--append", "x", "--no-index"),
                 ("restore", "memory/a.md", "--last"), ("mv", "memory/b.md", "memory/a.md", "--force", "--no-index"),
                 ("rm", "memory/a.md", "--no-index"), ("doctor", "--json"), ("doctor", "--fix", "--json")):
        run_in_process(args, env=env_for(ws, sd), cwd=ws)


def _nobody(base: Path, *args: str) -> dict:
    """``openclaw-memory ARGS`` in this process, as uid 65534, in its workspace under ``base``."""
    ws, sd = base / "ws", base / "state"
    return as_nobody(lambda: dataclasses.asdict(run_in_process(args, env=env_for(ws, sd), cwd=ws)))


def _nobodys_workspace(base: Path) -> Path:
    ws = base / "ws"
    (ws / "memory").mkdir(parents=True)
    (base / "state").mkdir(mode=0o700)
    for folder in (ws, ws / "memory", base / "state"):
        os.chown(folder, NOBODY, NOBODY)
    return ws


@as_root
def test_another_users_note_this_user_may_not_write_is_neither_replaced_nor_removed(base, warm):
    """The rule asked only the owner's bit of this user's own notes: uid 65534 replaced a root-owned
    0644 note in its workspace with write (which then belonged to 65534), removed it with rm and
    replaced it with mv --force, where the shell says Permission denied."""
    ws = _nobodys_workspace(base)
    roots = write(ws / "memory" / "roots.md", "# Root's\n")  # root's, 0644: nobody may read it, not write it
    write(ws / "memory" / "mine.md", "# Mine\n")
    os.chown(ws / "memory" / "mine.md", NOBODY, NOBODY)
    for rel in ("memory/roots.md", "memory/mine.md"):
        assert _nobody(base, "read", rel)["returncode"] == 0
    said = ("refused: memory/roots.md is read-only (owned by uid 0, mode 644); nothing was {} (only its owner can let "
            "writes through: `chmod`, or `chown` to this user)")
    for args, done in ((("write", "memory/roots.md", "--append", "- x", "--no-index"), "written"),
                       (("rm", "memory/roots.md", "--no-index"), "removed"),
                       (("mv", "memory/mine.md", "memory/roots.md", "--force", "--no-index"), "moved")):
        refused = _nobody(base, *args, "--json")
        assert refused["returncode"] == 2, refused
        assert json.loads(refused["stdout"])["error"] == said.format(done)
    assert roots.read_text() == "# Root's\n" and roots.stat().st_uid == 0 and _mode(roots) == "0o644"
    assert (ws / "memory" / "mine.md").read_text() == "# Mine\n"
    # The control: its own note it writes.
    assert _nobody(base, "write", "memory/mine.md", "--append", "- x", "--no-index")["returncode"] == 0


@as_root
def test_a_read_only_note_in_a_read_only_folder_names_both(base, warm):
    """Told only `chmod u+w` the note, the user met the folder's refusal next."""
    ws = _nobodys_workspace(base)
    note = write(ws / "memory" / "kept.md", "# Kept\n")
    os.chown(note, NOBODY, NOBODY)
    assert _nobody(base, "read", "memory/kept.md")["returncode"] == 0
    note.chmod(0o444)
    (ws / "memory").chmod(0o555)
    refused = _nobody(base, "write", "memory/kept.md", "--append", "- x", "--no-index", "--json")
    assert refused["returncode"] == 2, refused
    assert json.loads(refused["stdout"])["error"] == (
        "refused: memory/kept.md is read-only (mode 444), in a read-only folder (memory, mode 555); nothing was written "
        "(`chmod u+w` it and its folder to let writes through)")
    assert note.read_text() == "# Kept\n"


@as_root
def test_doctor_as_another_user_does_not_merge_into_roots_memory_md(base, warm):
    ws = _nobodys_workspace(base)
    write(ws / "MEMORY.md", "# Memory\n")  # root's, 0644
    write(ws / "memory.md", "- legacy\n")
    os.chown(ws / "memory.md", NOBODY, NOBODY)
    plain = _nobody(base, "doctor")
    assert "MEMORY.md is read-only (owned by uid 0, mode 644), so doctor --fix will not merge" in plain["stdout"], plain
    fixed = _nobody(base, "doctor", "--fix", "--json")
    assert json.loads(fixed["stdout"])["repairs"] == [], fixed
    assert (ws / "MEMORY.md").read_text() == "# Memory\n" and (ws / "MEMORY.md").stat().st_uid == 0


@pytest.fixture
def service(workspace: Path, state_dir: Path) -> Iterator[Callable[[], Serve]]:
    """Starts the workspace's service (no watch), which the CLI then goes through; stopped after."""
    started: list[Serve] = []

    def begin() -> Serve:
        started.append(Serve(workspace, state_dir, "--no-watch"))
        return started[-1].wait_ready()

    yield begin
    for s in started:
        s.kill()


# -- what a rollback may do with a read-only note ------------------------------------------------------


def test_a_rollback_moves_a_read_only_note_back(cli, workspace):
    """Undoing `mv` of a read-only note was refused ("memory/moved.md is read-only"): archiving a note
    whose bytes the same rollback brings back at another path is a move, which `mv` allows."""
    note = write(workspace / "memory" / "n.md", "# n\n")
    note.chmod(0o444)
    _read_all(cli, "memory/n.md")
    assert cli("watchdog", "snapshot", "before").returncode == 0
    assert cli("mv", "memory/n.md", "memory/moved.md", "--no-index").returncode == 0
    done = cli("rollback", "--to", "before", "--force", "--json")
    assert done.returncode == 0, done.stdout
    assert not (workspace / "memory" / "moved.md").exists()
    assert note.read_text() == "# n\n" and _mode(note) == "0o444"


def test_rollback_to_undo_takes_back_a_read_only_note_it_brought_back(cli, workspace):
    """`rollback --to UNDO` undoes it: the note the rollback brought back with its logged 0444 was
    refused as read-only, though its mode was the history's, not the user's word since. A note the
    user makes read-only after that (another mode) is refused, and one the rollback did not bring back."""
    a, n = write(workspace / "memory" / "a.md", "# a\n"), write(workspace / "memory" / "n.md", "# n\n")
    n.chmod(0o444)
    _read_all(cli, "memory/a.md", "memory/n.md")
    assert cli("watchdog", "snapshot", "before").returncode == 0
    n.unlink()
    assert cli("write", "memory/a.md", "--append", "- since", "--no-index").returncode == 0
    back = cli("rollback", "--to", "before", "--json")
    assert back.returncode == 0, back.stdout
    assert n.read_text() == "# n\n" and _mode(n) == "0o444" and a.read_text() == "# a\n"
    undo = back.json()["undo"]
    n.chmod(0o400)  # the user's word: refused
    dry = cli("rollback", "--to", undo, "--dry-run", "--json").json()
    assert {f["path"]: f.get("readOnly", False) for f in dry["files"]} == {"memory/a.md": False, "memory/n.md": True}
    refused = cli("rollback", "--to", undo, "--force", "--json")
    assert refused.returncode == 2, refused.stdout
    assert refused.json()["error"].startswith("refused: memory/n.md is read-only (mode 400); nothing was rolled back")
    n.chmod(0o444)  # as the rollback left it
    undone = cli("rollback", "--to", undo, "--force", "--json")
    assert undone.returncode == 0, undone.stdout
    assert not n.exists() and a.read_text() == "# a\n- since\n"
    assert cli("restore", "memory/n.md", "--last").returncode == 0  # its bytes are in the history
    assert n.read_text() == "# n\n" and _mode(n) == "0o444"


@pytest.mark.parametrize("json_out", [True, False])
def test_a_note_made_read_only_during_a_live_rollback_is_left_and_said_read_only(cli, workspace, state_dir, json_out):
    """Its step checks the file the restore opened (the by-name look before it could stop the
    rollback half done, exit 2); it was reported `"changed": true` and "changed meanwhile"."""
    for name in ("a", "b", "c"):
        write(workspace / "memory" / f"{name}.md", f"# {name}\n")
    _read_all(cli, "memory/a.md", "memory/b.md", "memory/c.md")
    assert cli("watchdog", "snapshot", "before").returncode == 0
    for name in ("a", "b", "c"):
        assert cli("write", f"memory/{name}.md", "--append", "- since", "--no-index").returncode == 0
    b = workspace / "memory" / "b.md"
    args = ("rollback", "--to", "before", "--no-index", *(("--json",) if json_out else ()))
    code, out, err = run_paused(workspace, state_dir, args, "rollback:journaled", lambda: b.chmod(0o444))
    assert code == 0, err
    assert b.read_text() == "# b\n- since\n" and _mode(b) == "0o444"
    assert (workspace / "memory" / "a.md").read_text() == "# a\n" and (workspace / "memory" / "c.md").read_text() == "# c\n"
    said = "memory/b.md was made read-only while the rollback ran (`chmod u+w` it, then roll back again): left as it is"
    if json_out:
        result = json.loads(out)
        (entry,) = [f for f in result["files"] if f["path"] == "memory/b.md"]
        assert entry.get("readOnly") is True and "changed" not in entry, entry
        assert any(w.startswith(said) for w in result["warnings"]), result["warnings"]
    else:
        assert "rewrite     memory/b.md  (made read-only meanwhile: left as it is)" in out, out
        assert "2 of 3 memory files are back" in out and said in err, (out, err)


# -- a refusal after an interrupted operation was finished --------------------------------------------


def _two_changed_since(cli, workspace) -> None:
    for name in ("a", "c"):
        write(workspace / "memory" / f"{name}.md", f"# {name}\n")
    _read_all(cli, "memory/a.md", "memory/c.md")
    assert cli("watchdog", "snapshot", "before").returncode == 0
    for name in ("a", "c"):
        assert cli("write", f"memory/{name}.md", "--append", "- since", "--no-index").returncode == 0


def test_a_rollback_refused_after_finishing_an_interrupted_one_says_what_it_finished(cli, workspace, state_dir):
    """It said "nothing was rolled back" when it had just rolled back a.md (the killed rollback's)."""
    _two_changed_since(cli, workspace)
    run_killed(workspace, state_dir, "rollback:journaled", "rollback", "--to", "before", "--force")
    (workspace / "memory" / "c.md").chmod(0o444)
    refused = cli("rollback", "--to", "before", "--force", "--json")
    assert refused.returncode == 2, refused.stdout
    error = refused.json()["error"]
    assert error.startswith("refused: memory/c.md is read-only (mode 444); nothing was rolled back (`chmod u+w` it to let "
                            "writes through); before that: finished the interrupted rollback to before ("), error
    finished = error.partition("; before that: ")[2]  # (c.md named as left, made read-only since)
    assert "made read-only since" in finished and "left as it is). To undo: openclaw-memory rollback --to " in finished, error
    assert (workspace / "memory" / "a.md").read_text() == "# a\n"


@pytest.mark.parametrize("served", [False, True])
def test_a_rollback_blocked_after_finishing_an_interrupted_one_says_what_it_finished(cli, workspace, state_dir, service,
                                                                                   served):
    """The same for the block on a file not read as it is (exit 3), in the command line's words and,
    answered by the service, in the words the caller rebuilds from the block's fields."""
    _two_changed_since(cli, workspace)
    run_killed(workspace, state_dir, "rollback:journaled", "rollback", "--to", "before", "--force")
    write(workspace / "memory" / "c.md", "# c\n- edited by hand\n")
    if served:
        service()
    blocked = cli("rollback", "--to", "before", "--json")
    assert "in-process" not in blocked.stderr, blocked.stderr
    assert blocked.returncode == 3, blocked.stdout
    error = blocked.json()["error"]
    assert error.startswith("blocked: the rollback to before would replace 1 file agent 'main' has not read as it is now "
                            "(memory/c.md); nothing was changed; read them first"), error
    assert "; before that: finished the interrupted rollback to before (" in error, error
    assert (workspace / "memory" / "a.md").read_text() == "# a\n"


@pytest.mark.parametrize("command", ["rm", "mv", "import"])
def test_a_refusal_after_finishing_an_interrupted_removal_says_what_it_finished(cli, workspace, state_dir, tmp_path, command):
    """rm, mv and import finish a killed removal first; their refusal dropped what they finished."""
    archive = tmp_path / "memory.tar.gz"
    gone, kept, other = (write(workspace / "memory" / f"{n}.md", f"# {n}\n") for n in ("gone", "kept", "other"))
    assert cli("export", str(archive)).returncode == 0
    _read_all(cli, "memory/gone.md", "memory/kept.md", "memory/other.md")
    assert cli("write", "memory/kept.md", "--append", "- since", "--no-index").returncode == 0
    run_killed(workspace, state_dir, "rm:unlinked", "rm", "memory/gone.md")
    kept.chmod(0o444)
    args = {"rm": ("rm", "memory/kept.md"), "mv": ("mv", "memory/other.md", "memory/kept.md", "--force"),
            "import": ("import", str(archive), "--force")}[command]
    refused = cli(*args, "--json")
    assert refused.returncode == 2, refused.stdout
    error = refused.json()["error"]
    assert error.startswith("refused: memory/kept.md is read-only (mode 444); nothing was "), error
    assert "(`chmod u+w` it to let writes through); before that: finished the removal of memory/gone.md (version " in error
    assert error.endswith("its bytes are in the history (`openclaw-memory restore memory/gone.md --last` brings it back)")
    assert not gone.exists() and kept.read_text() == "# kept\n- since\n" and other.read_text() == "# other\n"


def test_an_import_that_finished_an_interrupted_removal_says_so(cli, workspace, state_dir, tmp_path):
    """It finished the removal and said nothing of it, refused or not."""
    archive = tmp_path / "memory.tar.gz"
    write(workspace / "memory" / "kept.md", "# kept\n")
    gone = write(workspace / "memory" / "gone.md", "# gone\n")
    assert cli("export", str(archive)).returncode == 0
    _read_all(cli, "memory/gone.md")
    run_killed(workspace, state_dir, "rm:unlinked", "rm", "memory/gone.md")
    done = cli("import", str(archive), "--json")
    assert done.returncode == 0, done.stdout
    assert done.json()["warnings"][0].startswith("finished the removal of memory/gone.md (version "), done.stdout
    assert gone.read_text() == "# gone\n"  # the archive's, placed where the removal left nothing


# -- import ---------------------------------------------------------------------------------------------


def test_an_import_over_two_read_only_notes_names_each(cli, workspace, tmp_path):
    """One check, under the lock, on the file whose version the import replaces (it looked twice,
    by name, and took the mode it kept from a third open)."""
    notes = {n: write(workspace / "memory" / f"{n}.md", f"# {n}\n") for n in ("a", "b", "c")}
    archive = tmp_path / "memory.tar.gz"
    assert cli("export", str(archive)).returncode == 0
    _read_all(cli, "memory/a.md", "memory/b.md", "memory/c.md")
    for n in notes:
        assert cli("write", f"memory/{n}.md", "--append", "- since", "--no-index").returncode == 0
    notes["a"].chmod(0o444)
    notes["c"].chmod(0o555)
    refused = cli("import", str(archive), "--force", "--json")
    assert refused.returncode == 2, refused.stdout
    assert refused.json()["error"] == ("refused: memory/a.md (mode 444) and memory/c.md (mode 555) are read-only; "
                                       "nothing was written (`chmod u+w` them to let writes through)")
    assert all(p.read_text() == f"# {n}\n- since\n" for n, p in notes.items())
    notes["a"].chmod(0o640)
    notes["c"].chmod(0o600)
    assert cli("import", str(archive), "--force").returncode == 0
    assert all(p.read_text() == f"# {n}\n" for n, p in notes.items())
    assert (_mode(notes["a"]), _mode(notes["c"])) == ("0o640", "0o600")  # each keeps its own mode


# -- mv --update-links --------------------------------------------------------------------------------


def test_mv_update_links_leaves_a_read_only_linking_note_and_names_it(cli, workspace):
    write(workspace / "memory" / "heron.md", "# Heron\n")
    linking = write(workspace / "memory" / "index.md", "See [heron](heron.md).\n")
    write(workspace / "memory" / "other.md", "Also [the heron](heron.md).\n")
    _read_all(cli, "memory/heron.md", "memory/index.md", "memory/other.md")
    linking.chmod(0o444)
    moved = cli("mv", "memory/heron.md", "memory/birds/heron.md", "--update-links", "--no-index", "--json")
    assert moved.returncode == 0, moved.stdout
    result = moved.json()
    assert result["linksUpdated"] == ["memory/other.md"]
    (left,) = result["linksNotUpdated"]
    assert left["source"] == "memory/index.md", left
    assert "read-only (mode 444)" in left["why"], left
    assert linking.read_text() == "See [heron](heron.md).\n" and _mode(linking) == "0o444"


# -- through the service ----------------------------------------------------------------------------


def test_a_read_only_refusal_answered_by_the_service_is_exit_2_as_in_process(workspace, cli, service):
    """The refusal's own class (ReadOnlyRefused, which a rollback step tells apart) is no kind the
    caller knows: it crossed the socket as a plain failure, exit 1. It goes as the PathRefused it is."""
    note = write(workspace / "memory" / "kept.md", "# Kept\n")
    service()
    assert cli("read", "memory/kept.md").returncode == 0
    note.chmod(0o444)
    refused = cli("write", "memory/kept.md", "--append", "- x", "--json")
    assert "in-process" not in refused.stderr, refused.stderr
    assert refused.returncode == 2, refused.stdout
    assert refused.json()["error"] == ("refused: memory/kept.md is read-only (mode 444); nothing was written "
                                       "(`chmod u+w` it to let writes through)")
