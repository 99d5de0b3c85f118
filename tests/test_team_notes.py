"""Another user's note this (non-root) user may write, in a team's folder: replacing it puts a file of
this user's in its place (a write, a restore, a rollback's step, ``import --force``). Done where its
owner may still write that file (a setgid team folder, the note's group kept, a ``0666`` note);
refused, saying why, only where its owner could no longer write it. Real users and a group, made for
the module and removed at its end."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from conftest import as_user, env_for, rollback_killed_after_its_record, run_in_process, write

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("useradd") is None,
                                reason="needs root and useradd to make users and a group to act as")


class User(NamedTuple):
    name: str
    uid: int
    gid: int  # its primary group


class Team(NamedTuple):
    gid: int
    alice: User  # in the team's group (her primary group)
    bob: User  # in it too (his own primary group): the one who writes over the others' notes
    carol: User  # not in it: a note of hers in the team's group is one she would lose


@pytest.fixture(scope="module")
def team() -> Iterator[Team]:
    """A group and three users, removed at the end whatever happened (the names are this run's own)."""
    tag = uuid.uuid4().hex[:8]
    groups: list[str] = []
    users: list[str] = []

    def run(*args: str) -> None:
        subprocess.run(args, check=True, capture_output=True)

    try:
        for group in (f"omt{tag}", f"omb{tag}", f"omc{tag}"):
            run("groupadd", group)
            groups.append(group)
        team_group, bob_group, carol_group = groups
        for name, primary, extra in ((f"oma{tag}", team_group, ()), (f"omb{tag}", bob_group, ("-G", team_group)),
                                     (f"omc{tag}", carol_group, ())):
            run("useradd", "-M", "-N", "-g", primary, *extra, name)
            users.append(name)
        import grp
        import pwd

        made = [User(n, pwd.getpwnam(n).pw_uid, pwd.getpwnam(n).pw_gid) for n in users]
        yield Team(grp.getgrnam(team_group).gr_gid, *made)
    finally:
        for name in users:
            subprocess.run(("userdel", name), capture_output=True)
        for group in reversed(groups):
            subprocess.run(("groupdel", group), capture_output=True)


def _as(user: User, fn: Callable[..., object], *args: object) -> object:
    """``fn(*args)`` in a forked child that became ``user`` (its groups, umask 002 as a team's)."""
    return as_user(user.uid, user.gid, os.getgrouplist(user.name, user.gid), 0o002, user.name, fn, *args)


class Place(NamedTuple):
    ws: Path
    envs: dict[str, dict]  # each user's environment (its own state dir), by name
    note: Path  # memory/n.md


def _place(base: Path, tmp_path: Path, team: Team, folder_mode: int) -> Place:
    """A workspace whose memory/ is the team's folder (root's, the team's group, ``folder_mode``),
    each user with a state dir of its own; the commands the children run imported here first."""
    ws = base / "ws"
    (ws / "memory").mkdir(parents=True)
    os.chown(ws / "memory", 0, team.gid)
    os.chmod(ws / "memory", folder_mode)
    envs = {}
    for user in team[1:]:
        state = base / f"state-{user.name}"
        state.mkdir(mode=0o700)
        os.chown(state, user.uid, user.gid)
        envs[user.name] = env_for(ws, state)
    out = base / "out"  # where bob exports
    out.mkdir()
    os.chown(out, team.bob.uid, team.bob.gid)
    warm_ws = write(tmp_path / "warm" / "memory" / "w.md", "w\n").parents[1]
    warm = env_for(warm_ws, tmp_path / "warm-state")
    for args in (("read", "memory/w.md"), ("watchdog", "snapshot", "s"), ("history", "memory/w.md", "--json"),
                 ("write", "memory/w.md", "--append", "x", "--no-index"), ("rollback", "--to", "s", "--no-index"),
                 ("export", str(tmp_path / "warm.tar.gz")), ("import", str(tmp_path / "warm.tar.gz"), "--force"),
                 ("restore", "memory/w.md", "--last"), ("doctor", "--fix")):
        run_in_process(args, env=warm, cwd=warm_ws)
    return Place(ws, envs, ws / "memory" / "n.md")


def _run(place: Place, user: User, *commands: tuple[str, ...]) -> list[dict]:
    env = place.envs[user.name]
    return _as(user, lambda: [dataclasses.asdict(run_in_process(c, env=env, cwd=place.ws)) for c in commands])  # type: ignore[return-value]


def _append_as(user: User, path: Path, text: str) -> str:
    """``echo TEXT >> PATH`` as ``user``: "ok", or the error it met."""
    def append() -> str:
        try:
            with open(path, "a") as fh:
                fh.write(text)
        except OSError as exc:
            return exc.strerror or str(exc)
        return "ok"

    return _as(user, append)  # type: ignore[return-value]


def _owner(path: Path) -> tuple[int, int, int]:
    st = os.stat(path)
    return st.st_uid, st.st_gid, st.st_mode & 0o7777


def _taken_words(owner: User, doing: str, done: str) -> str:
    return (f"refused: memory/n.md belongs to another user (uid {owner.uid}, mode 664): {doing} puts a file of this "
            f"user's in its place, which they could no longer write; nothing was {done}: memory/n.md is unchanged")


def test_an_append_to_a_team_note_in_a_setgid_team_folder_is_written_and_its_owner_still_writes_it(base, tmp_path, team):
    """The finding's case: alice's 0664 note in a setgid team folder (2775, the team's group), bob of
    the team appends: it was refused, "which they could no longer write", and it was false: the new
    file is bob's in the team's group, 0664, which alice (of the team) writes as before."""
    place = _place(base, tmp_path, team, 0o2775)
    (made,) = _run(place, team.alice, ("write", "memory/n.md", "--append", "alice: standup 10:00", "--no-index"))
    assert made["returncode"] == 0, made
    assert _owner(place.note) == (team.alice.uid, team.gid, 0o664)
    read, appended = _run(place, team.bob, ("read", "memory/n.md"),
                          ("write", "memory/n.md", "--append", "bob: deploy friday", "--no-index"))
    assert read["returncode"] == 0 and appended["returncode"] == 0, (read, appended)
    assert _owner(place.note) == (team.bob.uid, team.gid, 0o664)
    assert _append_as(team.alice, place.note, "alice: ok\n") == "ok"
    assert place.note.read_text() == "alice: standup 10:00\nbob: deploy friday\nalice: ok\n"


def test_a_write_over_a_team_note_keeps_its_group_where_the_folder_is_not_setgid(base, tmp_path, team):
    """In a team folder that is not setgid, bob's new file was in bob's own group: the team (alice
    among it) lost the note. bob is in the note's group, so his file is given it, as a chgrp would."""
    place = _place(base, tmp_path, team, 0o775)
    (made,) = _run(place, team.alice, ("write", "memory/n.md", "--append", "alice", "--no-index"))
    assert made["returncode"] == 0, made
    read, appended = _run(place, team.bob, ("read", "memory/n.md"), ("write", "memory/n.md", "--append", "bob", "--no-index"))
    assert appended["returncode"] == 0, appended
    assert _owner(place.note) == (team.bob.uid, team.gid, 0o664)
    assert _append_as(team.alice, place.note, "alice again\n") == "ok"


def test_a_write_over_another_users_0666_note_is_written_and_its_owner_still_writes_it(base, tmp_path, team):
    """carol's note, 0666, outside the team: the mode is kept, so carol writes bob's file as she wrote hers."""
    place = _place(base, tmp_path, team, 0o777)
    write(place.note, "carol\n")
    os.chown(place.note, team.carol.uid, team.carol.gid)
    os.chmod(place.note, 0o666)
    read, appended = _run(place, team.bob, ("read", "memory/n.md"), ("write", "memory/n.md", "--append", "bob", "--no-index"))
    assert appended["returncode"] == 0, appended
    assert _owner(place.note) == (team.bob.uid, team.bob.gid, 0o666)
    assert _append_as(team.carol, place.note, "carol again\n") == "ok"
    assert place.note.read_text() == "carol\nbob\ncarol again\n"


def _note_of(place: Place, team: Team, owner: User) -> None:
    """memory/n.md, ``owner``'s in the team's group, 0664: bob (of the team) may write it in place."""
    write(place.note, "v1\n")
    os.chown(place.note, owner.uid, team.gid)
    os.chmod(place.note, 0o664)


def _edit_as_root(place: Place) -> None:
    with open(place.note, "a") as fh:  # (root's append keeps the owner)
        fh.write("v2\n")


_COMMANDS = {  # what bob runs over memory/n.md, and the refusal's words for it
    "write": ("a write", "written", ("write", "memory/n.md", "--append", "bob", "--no-index")),
    "restore": ("a restore", "restored", ("restore", "memory/n.md", "{v1}", "--no-index")),
    "rollback": ("a rollback", "rolled back", ("rollback", "--to", "before", "--force", "--no-index")),
    "import": ("an import", "written", ("import", "{archive}", "--force")),
}


@pytest.mark.parametrize("owner", ["carol", "alice"])
@pytest.mark.parametrize("command", list(_COMMANDS))
def test_replacing_another_users_team_note_is_refused_only_where_its_owner_would_lose_it(base, tmp_path, team, command, owner):
    """carol's note in the team's group (0664, carol not in it): bob's file in its place, bob's in the
    team's group, is one carol could no longer write: refused, saying so, nothing changed (a rollback
    and an import refused whole, before anything). alice's note, the same but alice in the team: done,
    and alice still writes it. (A rollback and an import were not checked at all: they took carol's
    note over.)"""
    who: User = getattr(team, owner)
    place = _place(base, tmp_path, team, 0o2775)
    _note_of(place, team, who)
    archive = str(base / "out" / "n.tar.gz")
    first = _run(place, team.bob, ("write", "memory/a.md", "--append", "a-v1", "--no-index"), ("read", "memory/n.md"),
                 ("watchdog", "snapshot", "before"), ("export", archive))
    assert all(r["returncode"] == 0 for r in first), first
    _edit_as_root(place)
    (history,) = _run(place, team.bob, ("history", "memory/n.md", "--json"))
    v1 = next(v["version"] for v in json.loads(history["stdout"])["versions"] if v["size"] == 3)
    doing, done, args = _COMMANDS[command]
    mine, _, ran = _run(place, team.bob, ("write", "memory/a.md", "--append", "a-v2", "--no-index"), ("read", "memory/n.md"),
                        tuple(a.format(v1=v1, archive=archive) for a in args))
    assert mine["returncode"] == 0, mine
    if owner == "carol":
        assert ran["returncode"] == 2, ran
        assert ran["stderr"] == f"error: {_taken_words(who, doing, done)}\n", ran
        assert _owner(place.note) == (who.uid, team.gid, 0o664)
        assert place.note.read_text() == "v1\nv2\n"
        assert (place.ws / "memory" / "a.md").read_text() == "a-v1\na-v2\n"  # a rollback, an import refused whole
        (doctor,) = _run(place, team.bob, ("doctor", "--json"))
        assert "interrupted" not in doctor["stdout"], doctor
    else:
        assert ran["returncode"] == 0, ran
        assert _owner(place.note) == (team.bob.uid, team.gid, 0o664)
        assert place.note.read_text() == ("v1\nv2\nbob\n" if command == "write" else "v1\n")
        assert _append_as(who, place.note, "still hers\n") == "ok"


def test_a_rollbacks_dry_run_says_it_would_be_refused_for_a_note_it_would_take_over(base, tmp_path, team):
    place = _place(base, tmp_path, team, 0o2775)
    _note_of(place, team, team.carol)
    first = _run(place, team.bob, ("read", "memory/n.md"), ("watchdog", "snapshot", "before"))
    assert all(r["returncode"] == 0 for r in first), first
    _edit_as_root(place)
    (dry,) = _run(place, team.bob, ("rollback", "--to", "before", "--dry-run", "--force", "--json"))
    assert dry["returncode"] == 0, dry
    assert (f"the rollback would be refused: memory/n.md belongs to another user (uid {team.carol.uid}, mode 664): a "
            "rollback puts a file of this user's in its place, which they could no longer write; nothing would be rolled "
            "back") in json.loads(dry["stdout"])["warnings"], dry


def test_a_killed_rollback_whose_note_became_one_it_would_take_over_is_finished_leaving_it(base, tmp_path, team):
    """bob's own note when the rollback was planned, then given to carol (chown) before its finish: the
    finish leaves it as it is and says so, as a note made read-only meanwhile (it stopped there, exit 2)."""
    place = _place(base, tmp_path, team, 0o2775)
    first = _run(place, team.bob, ("write", "memory/n.md", "--append", "v1", "--no-index"), ("watchdog", "snapshot", "before"),
                 ("write", "memory/n.md", "--append", "v2", "--no-index"))
    assert all(r["returncode"] == 0 for r in first), first
    assert _as(team.bob, rollback_killed_after_its_record, place.envs[team.bob.name], place.ws) == "killed"
    os.chown(place.note, team.carol.uid, team.gid)
    fixed, doctor = _run(place, team.bob, ("doctor", "--fix"), ("doctor", "--json"))
    assert ("memory/n.md (another user's since, which they could no longer write with a file of this user's in its "
            "place; left as it is)") in fixed["stdout"], fixed
    assert place.note.read_text() == "v1\nv2\n" and _owner(place.note) == (team.carol.uid, team.gid, 0o664)
    assert "interrupted-rollback" not in doctor["stdout"], doctor
