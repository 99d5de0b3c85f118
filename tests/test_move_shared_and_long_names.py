"""Moves, removals and rollbacks of notes they may not take: another user's note in a sticky shared
folder (1777, as ``/tmp`` or a team's folder), refused before anything is linked; and the private
names (``.NAME.aside-<hex>``) of 255-byte notes, cut to fit, each found again from its own note only."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from conftest import NOBODY, Killed, as_nobody, env_for, rollback_killed_after_its_record, run_in_process, write
from openclaw_memory.fsutil.atomic import NAME_MAX, hidden_stem
from openclaw_memory.fsutil.move import aside_name, asides_of

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user (uid 65534)")
STICKY_WORDS = "belongs to another user (uid 0), in a sticky folder (mode 1777) where only its owner may replace, rename or remove it"


def _shared_workspace(base: Path, tmp_path: Path) -> tuple[Path, dict]:
    """A workspace of nobody's whose memory/ is a 1777 folder holding root's note r.md, writable by all;
    the commands the child runs imported here first (the checkout may be closed to nobody)."""
    ws = base / "ws"
    (ws / "memory").mkdir(parents=True)
    os.chown(ws, NOBODY, NOBODY)
    os.chmod(ws / "memory", 0o1777)
    write(ws / "memory" / "r.md", "team\n")
    os.chmod(ws / "memory" / "r.md", 0o666)
    (base / "state").mkdir(mode=0o700)
    os.chown(base / "state", NOBODY, NOBODY)
    warm_ws = write(tmp_path / "warm" / "memory" / "w.md", "w\n").parents[1]
    warm = env_for(warm_ws, tmp_path / "warm-state")
    for args in (("read", "memory/w.md"), ("watchdog", "snapshot", "s"), ("mv", "memory/w.md", "memory/v.md", "--no-index"),
                 ("rollback", "--to", "s", "--no-index"), ("rm", "memory/w.md", "--no-index"), ("doctor", "--fix")):
        run_in_process(args, env=warm, cwd=warm_ws)
    return ws, env_for(ws, base / "state")


def _run_as_nobody(env: dict, ws: Path, *commands: tuple[str, ...]) -> list[dict]:
    return as_nobody(lambda: [dataclasses.asdict(run_in_process(c, env=env, cwd=ws)) for c in commands])  # type: ignore[return-value]


@ROOT_ONLY
def test_moving_another_users_note_in_a_sticky_folder_is_refused_before_anything_is_linked(base, tmp_path):
    """As uid 65534, mv of root's writable note in a 1777 folder linked it to the new name, could
    unlink neither name, said "cannot write in the workspace ...: Operation not permitted; nothing was
    moved", and left its record waiting: every later mv and rm failed finishing it, and so did doctor."""
    ws, env = _shared_workspace(base, tmp_path)
    read, moved, wrote, removed, doctor = _run_as_nobody(
        env, ws, ("read", "memory/r.md"), ("mv", "memory/r.md", "memory/s.md", "--no-index"),
        ("write", "memory/mine.md", "--append", "x", "--no-index"), ("rm", "memory/mine.md", "--no-index", "--force"),
        ("doctor", "--json"))
    assert read["returncode"] == 0, read
    assert moved["returncode"] == 2, moved
    assert moved["stderr"].strip() == (f"error: refused: memory/r.md {STICKY_WORDS}; nothing was moved: memory/r.md is "
                                       "unchanged"), moved
    assert sorted(os.listdir(ws / "memory")) == ["r.md"] and os.stat(ws / "memory" / "r.md").st_nlink == 1
    assert (ws / "memory" / "r.md").read_text() == "team\n"
    assert wrote["returncode"] == 0 and removed["returncode"] == 0, (wrote, removed)
    assert "interrupted-move" not in doctor["stdout"], doctor


@ROOT_ONLY
def test_writing_or_restoring_over_another_users_note_in_a_sticky_folder_says_why(base, tmp_path):
    """As uid 65534, write and append over root's 0666 note in a 1777 folder said "cannot write in the
    workspace (.../memory): Operation not permitted" of a folder anyone may write in; restore --last over
    it said "is read-only (owned by uid 0, mode 644)", the mode computed for its replacement, the file
    being 0666. Each says what mv and rm say, before anything is written."""
    ws, env = _shared_workspace(base, tmp_path)
    read, appended, mine, removed = _run_as_nobody(
        env, ws, ("read", "memory/r.md"), ("write", "memory/r.md", "--append", "mine", "--no-index"),
        ("write", "memory/n.md", "--append", "mine", "--no-index"), ("rm", "memory/n.md", "--no-index"))
    wrote = as_nobody(lambda: dataclasses.asdict(run_in_process(
        ("write", "memory/r.md", "--stdin", "--no-index"), env=env, cwd=ws, input="mine\n")))
    assert read["returncode"] == 0 and mine["returncode"] == 0 and removed["returncode"] == 0, (read, mine, removed)
    for done in (wrote, appended):
        assert done["returncode"] == 2, done
        assert done["stderr"].strip() == f"error: refused: memory/r.md {STICKY_WORDS}; nothing was written: memory/r.md is unchanged"
    write(ws / "memory" / "n.md", "roots\n")
    os.chmod(ws / "memory" / "n.md", 0o666)
    (restored,) = _run_as_nobody(env, ws, ("restore", "memory/n.md", "--last", "--no-index"))
    assert restored["returncode"] == 2, restored
    assert restored["stderr"].strip() == (f"error: refused: memory/n.md {STICKY_WORDS.replace('r.md', 'n.md')}; "
                                          "nothing was restored: memory/n.md is unchanged")
    assert (ws / "memory" / "r.md").read_text() == "team\n" and (ws / "memory" / "n.md").read_text() == "roots\n"
    assert sorted(os.listdir(ws / "memory")) == ["n.md", "r.md"]  # no temp file left


@ROOT_ONLY
def test_restoring_over_another_users_writable_note_is_refused_saying_why(base, tmp_path):
    """Outside a sticky folder the note, 0666, is another user's: the restore puts a new file of this
    user's in its place, mode narrowed to the version's, which its owner could no longer write. It was
    refused as "read-only (owned by uid 0, mode 644)", the mode computed for the replacement; then taken
    over (uid 65534, 0644)."""
    ws, env = _shared_workspace(base, tmp_path)
    os.chmod(ws / "memory", 0o777)
    mine, removed = _run_as_nobody(env, ws, ("write", "memory/n.md", "--append", "mine", "--no-index"),
                                   ("rm", "memory/n.md", "--no-index"))
    assert mine["returncode"] == 0 and removed["returncode"] == 0, (mine, removed)
    write(ws / "memory" / "n.md", "roots\n")
    os.chmod(ws / "memory" / "n.md", 0o666)
    (restored,) = _run_as_nobody(env, ws, ("restore", "memory/n.md", "--last", "--no-index"))
    assert restored["returncode"] == 2, restored
    assert restored["stderr"] == ("error: refused: memory/n.md belongs to another user (uid 0, mode 666): a restore puts a "
                                  "file of this user's in its place, which would be root's no more; nothing was "
                                  "restored: memory/n.md is unchanged\n"), restored
    st = os.stat(ws / "memory" / "n.md")
    assert ((ws / "memory" / "n.md").read_text(), st.st_uid, st.st_mode & 0o777) == ("roots\n", 0, 0o666)


@ROOT_ONLY
def test_writing_over_another_users_writable_note_is_refused_saying_why(base, tmp_path):
    """A team's folder (not sticky) and a note of another user's that this one may write (0664, its
    group's): the write put a new file of this user's in its place, the owner and group this user's,
    so its owner could no longer write it. Refused as a restore is, the note as it was; writing the
    bytes it holds already changes nothing and is not refused."""
    ws, env = _shared_workspace(base, tmp_path)
    os.chmod(ws / "memory", 0o777)
    note = write(ws / "memory" / "n.md", "roots\n")
    os.chown(note, 0, 65534)
    os.chmod(note, 0o664)
    same_bytes = write(ws / "same.txt", "roots\n")
    read, written, same = _run_as_nobody(env, ws, ("read", "memory/n.md"),
                                         ("write", "memory/n.md", "--append", "mine", "--no-index"),
                                         ("write", "memory/n.md", "--replace-file", str(same_bytes), "--no-index"))
    assert read["returncode"] == 0, read
    assert written["returncode"] == 2, written
    assert written["stderr"] == ("error: refused: memory/n.md belongs to another user (uid 0, mode 664): a write puts a "
                                 "file of this user's in its place, which would be root's no more; nothing was "
                                 "written: memory/n.md is unchanged\n"), written
    assert same["returncode"] == 0, same
    st = os.stat(note)
    assert (note.read_text(), st.st_uid, st.st_gid, st.st_mode & 0o777) == ("roots\n", 0, 65534, 0o664)


@ROOT_ONLY
def test_a_forced_move_of_another_users_note_in_a_sticky_folder_archives_nothing(base, tmp_path):
    """With --force over a note of nobody's own, the destination's note was archived first, then the
    move refused: "the file that was at memory/t.md is archived"."""
    ws, env = _shared_workspace(base, tmp_path)
    *made, moved, history = _run_as_nobody(
        env, ws, ("write", "memory/t.md", "--append", "mine", "--no-index"), ("read", "memory/t.md"), ("read", "memory/r.md"),
        ("mv", "--force", "memory/r.md", "memory/t.md", "--no-index"), ("history", "memory/t.md", "--json"))
    assert all(r["returncode"] == 0 for r in made), made
    assert moved["returncode"] == 2 and f"refused: memory/r.md {STICKY_WORDS}; nothing was moved" in moved["stderr"], moved
    assert (ws / "memory" / "t.md").read_text() == "mine\n" and sorted(os.listdir(ws / "memory")) == ["r.md", "t.md"]
    assert "remove" not in {v["origin"] for v in json_of(history)["versions"]}, history


@ROOT_ONLY
def test_a_rollback_over_another_users_note_in_a_sticky_folder_is_refused_whole(base, tmp_path):
    """It stopped at root's note, "1 of 2 files done", and neither the next rollback nor doctor --fix
    could ever finish that step."""
    ws, env = _shared_workspace(base, tmp_path)
    first = _run_as_nobody(env, ws, ("write", "memory/a.md", "--append", "a-v1", "--no-index"), ("read", "memory/r.md"),
                           ("watchdog", "snapshot", "before"), ("write", "memory/a.md", "--append", "a-v2", "--no-index"))
    assert all(r["returncode"] == 0 for r in first), first
    with open(ws / "memory" / "r.md", "a") as fh:  # root's own edit
        fh.write("root-v2\n")
    dry, refused, doctor = _run_as_nobody(env, ws, ("rollback", "--to", "before", "--dry-run", "--force", "--json"),
                                          ("rollback", "--to", "before", "--force", "--no-index"), ("doctor", "--json"))
    assert dry["returncode"] == 0 and f"the rollback would be refused: memory/r.md {STICKY_WORDS}; nothing would be rolled back" \
        in json_of(dry).get("warnings", []), dry
    assert refused["returncode"] == 2, refused
    assert refused["stderr"].strip() == f"error: refused: memory/r.md {STICKY_WORDS}; nothing was rolled back", refused
    assert (ws / "memory" / "a.md").read_text() == "a-v1\na-v2\n" and (ws / "memory" / "r.md").read_text() == "team\nroot-v2\n"
    assert "interrupted-rollback" not in doctor["stdout"], doctor


def json_of(result: dict) -> dict:
    import json

    return json.loads(result["stdout"])


@ROOT_ONLY
def test_a_killed_rollback_whose_note_became_another_users_in_a_sticky_folder_is_finished_leaving_it(base, tmp_path):
    """A rollback killed after its record was made, the note then given to root (chown): the finish
    failed at it, "Operation not permitted", every time, and its record blocked every later rollback."""
    ws, env = _shared_workspace(base, tmp_path)
    os.chown(ws / "memory" / "r.md", NOBODY, NOBODY)  # nobody's own when the rollback is planned
    first = _run_as_nobody(env, ws, ("read", "memory/r.md"), ("watchdog", "snapshot", "before"),
                           ("write", "memory/r.md", "--append", "v2", "--no-index"))
    assert all(r["returncode"] == 0 for r in first), first
    assert as_nobody(rollback_killed_after_its_record, env, ws) == "killed"
    os.chown(ws / "memory" / "r.md", 0, 0)  # the team's owner takes it
    os.chmod(ws / "memory" / "r.md", 0o666)
    plain, fixed, doctor = _run_as_nobody(env, ws, ("doctor", "--json"), ("doctor", "--fix"), ("doctor", "--json"))
    assert "interrupted-rollback" in plain["stdout"], plain
    assert "finish completed" in fixed["stdout"] and "memory/r.md (another user's since, in a sticky folder where only its owner may replace or remove it; left as it is)" \
        in fixed["stdout"], fixed
    assert (ws / "memory" / "r.md").read_text() == "team\nv2\n"
    assert "interrupted-rollback" not in doctor["stdout"], doctor


def _move_killed_after_its_link(env: dict, ws: Path) -> str:
    """``mv memory/n.md memory/m.md`` stopped dead between its link and its unlink (both names one file)."""
    from openclaw_memory import faults
    from openclaw_memory.history import moves

    real = faults.reach

    def reach(step: str) -> bool:
        if step == "move:linked":
            raise Killed
        return real(step)

    def killed(*_args: object) -> bool:
        raise Killed  # (a kill leaves the record: no settling)

    faults.reach, moves._settle = reach, killed  # (the child's own copies of the modules)
    try:
        run_in_process(("mv", "memory/n.md", "memory/m.md", "--no-index"), env=env, cwd=ws)
    except Killed:
        return "killed"
    return "not killed"


@ROOT_ONLY
def test_a_killed_move_whose_note_became_another_users_in_a_sticky_folder_is_dropped_leaving_both_names(base, tmp_path):
    """Killed between the link and the unlink, the note then given to root (chown): neither name may go,
    and the record stopped every later mv and rm, doctor --fix failing it for ever. It is dropped, saying
    so: the file stays at both names (nothing lost), which its owner may remove one of."""
    ws, env = _shared_workspace(base, tmp_path)
    first = _run_as_nobody(env, ws, ("write", "memory/n.md", "--append", "mine", "--no-index"), ("read", "memory/n.md"))
    assert all(r["returncode"] == 0 for r in first), first
    assert as_nobody(_move_killed_after_its_link, env, ws) == "killed"
    assert os.path.samefile(ws / "memory" / "n.md", ws / "memory" / "m.md")
    os.chown(ws / "memory" / "n.md", 0, 0)  # the team's owner takes it
    fixed, wrote, read, removed, doctor = _run_as_nobody(
        env, ws, ("doctor", "--fix"), ("write", "memory/mine.md", "--append", "x", "--no-index"), ("read", "memory/mine.md"),
        ("rm", "memory/mine.md", "--no-index"), ("doctor", "--json"))
    assert ("dropped the move of memory/n.md to memory/m.md" in fixed["stdout"]
            and f"it cannot go on (memory/n.md {STICKY_WORDS}); memory/n.md and memory/m.md are left as two names of one "
                "file, of which its owner may remove one" in fixed["stdout"]), fixed["stdout"]
    assert all(r["returncode"] == 0 for r in (wrote, read, removed)), (wrote, read, removed)
    assert "interrupted-move" not in doctor["stdout"], doctor
    assert os.path.samefile(ws / "memory" / "n.md", ws / "memory" / "m.md")
    assert (ws / "memory" / "n.md").read_text() == "mine\n"


def test_two_long_names_alike_in_the_bytes_kept_have_private_names_of_their_own():
    """Cut to fit, ``.NAME.aside-<hex>`` of two 255-byte names alike in their first 231 bytes was one
    prefix: each note's asides were the other's too."""
    x = "x" * 240
    a, b = f"{x}AAAAAAAAAAAA.md", f"{x}BBBBBBBBBBBB.md"
    assert len(os.fsencode(a)) == NAME_MAX
    assert hidden_stem(a, 23) != hidden_stem(b, 23)
    asides = [aside_name(a), aside_name(b)]
    assert all(len(os.fsencode(n)) <= NAME_MAX for n in asides)
    assert asides_of(asides, a) == [asides[0]] and asides_of(asides, b) == [asides[1]]
    assert hidden_stem("a.md", 23) == ".a.md"  # a name that fits is never cut


def test_a_killed_removal_of_a_long_note_gives_back_its_own_file_and_doctor_names_the_other(workspace, state_dir, cli):
    """Two 255-byte notes alike but for their ends, each removal killed with the note taken aside, A
    saved anew since: the finish of B's removal gave B's name the aside that sorted first, A's old
    text, and B's own text stayed hidden; doctor found neither aside ("No problems found")."""
    from test_move_remove import run_killed

    x = "x" * 240
    a, b = f"memory/{x}AAAAAAAAAAAA.md", f"memory/{x}BBBBBBBBBBBB.md"
    memory = workspace / "memory"
    write(workspace / a, "A's old text\n")
    write(workspace / b, "B's text\n")
    write(memory / "o1.md", "o\n")
    write(memory / "o2.md", "o\n")
    for name in (a, b, "memory/o1.md", "memory/o2.md"):
        assert cli("read", name).returncode == 0
    run_killed(workspace, state_dir, "move:source-aside", "rm", a, "--no-index")
    (a_aside,) = [n for n in os.listdir(memory) if ".aside-" in n]
    first = a_aside[:-16] + "0" * 16  # sorts before any other aside of that prefix
    os.rename(memory / a_aside, memory / first)
    write(workspace / a, "A's new text\n")
    assert cli("rm", "memory/o1.md", "--no-index").returncode == 0  # finishes A's removal: A was saved since
    run_killed(workspace, state_dir, "move:source-aside", "rm", b, "--no-index")
    assert cli("rm", "memory/o2.md", "--no-index").returncode == 0  # finishes B's: its own file back
    assert (workspace / b).read_text() == "B's text\n" and (workspace / a).read_text() == "A's new text\n"
    assert [n for n in os.listdir(memory) if ".aside-" in n] == [first]
    plain = cli("doctor", "--json")
    (found,) = [f for f in plain.json()["findings"] if f["id"] == "move-leftovers"]
    assert found["paths"] == [f"memory/{first}"] and f"(of {a})" in found["message"], found
    assert "differs from the note now at its name" in found["message"] and not found["fixable"]
    # Its name free again, doctor --fix gives it back.
    os.rename(workspace / a, workspace / "memory" / "a-new.md")
    fixed = cli("doctor", "--fix", "--json")
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "move-leftovers"]
    assert repair["status"] == "done", repair
    assert (workspace / a).read_text() == "A's old text\n" and not [n for n in os.listdir(memory) if ".aside-" in n]


def test_an_aside_of_a_long_note_no_name_matches_is_named_but_left(workspace, cli):
    """A cut aside whose note neither its folder nor the history knows: named, left to the user."""
    name = hidden_stem("y" * 250 + ".md", 23)[1:]
    left = write(workspace / "memory" / f".{name}.aside-0123456789abcdef", "lost\n")
    found = [f for f in cli("doctor", "--json").json()["findings"] if f["id"] == "move-leftovers"]
    assert len(found) == 1 and "the note it was taken from is not known" in found[0]["message"] and not found[0]["fixable"]
    assert left.read_text() == "lost\n"
