"""A name that looks like one its folder holds, the same under Unicode normalization (NFC), is never
made: a note named in NFD (as macOS names files) is not found by its NFC spelling (as OpenClaw's
memory_get finds nothing), and a write to that spelling created a second note of the same look."""

from __future__ import annotations

import json
import os
import unicodedata

from conftest import write

NFD = unicodedata.normalize("NFD", "café")
NFC = unicodedata.normalize("NFC", "café")


def names(folder) -> list[str]:
    return sorted(os.listdir(folder))


def test_a_write_that_would_create_a_look_alike_of_a_note_is_refused_naming_it(cli, workspace):
    write(workspace / "memory" / f"{NFD}.md", "the person's note\n")
    refused = cli("write", f"memory/{NFC}.md", "--append", "agent", "--json")
    assert refused.returncode == 2, refused.stderr
    assert refused.json()["error"] == (  # each name with its code points past ASCII escaped: they print alike
        f"refused: memory/{NFD}.md (memory/cafe\\u0301.md) exists, named as memory/{NFC}.md (memory/caf\\xe9.md) is but "
        f"with its letters written in other Unicode code points (decomposed: NFD, as macOS names files): memory/{NFC}.md "
        "would make a second file of the same look beside it; nothing was written. Write to the existing file by its "
        "exact name, as this message gives it")
    assert names(workspace / "memory") == [f"{NFD}.md"]
    # Its exact name is written; a new name that looks like no other is created as before.
    assert cli("read", f"memory/{NFD}.md").returncode == 0
    assert cli("write", f"memory/{NFD}.md", "--append", "agent", "--no-index").returncode == 0
    assert (workspace / "memory" / f"{NFD}.md").read_text() == "the person's note\nagent\n"
    assert cli("write", "memory/other.md", "--append", "x", "--no-index").returncode == 0
    # The refusal recorded no idempotency key: once the look-alike is gone, the same write creates the note.
    os.rename(workspace / "memory" / f"{NFD}.md", workspace / "memory" / "renamed.md")
    made = cli("write", f"memory/{NFC}.md", "--append", "agent", "--json", "--no-index")
    assert made.returncode == 0 and made.json()["created"] is True and "replayed" not in made.json()
    assert (workspace / "memory" / f"{NFC}.md").read_text() == "agent\n"


def test_a_folder_a_write_would_make_beside_a_look_alike_is_refused(cli, workspace):
    write(workspace / "memory" / NFD / "a.md", "in the person's folder\n")
    for path in (f"memory/{NFC}/b.md", f"memory/{NFC}/deeper/b.md"):
        refused = cli("write", path, "--append", "agent", "--json")
        assert refused.returncode == 2 and refused.json()["error"].startswith(
            f"refused: memory/{NFD} (memory/cafe\\u0301) exists, named as memory/{NFC} (memory/caf\\xe9) is but"), refused.stdout
        assert f"{path} would make a second folder of the same look beside it; nothing was written. Write under " \
            "the existing folder" in refused.json()["error"]
    assert names(workspace / "memory") == [NFD]


def test_a_restore_that_would_bring_a_note_back_beside_a_look_alike_is_refused(cli, workspace):
    write(workspace / "memory" / f"{NFC}.md", "the agent's note\n")
    assert cli("read", f"memory/{NFC}.md").returncode == 0
    assert cli("rm", f"memory/{NFC}.md", "--no-index").returncode == 0
    write(workspace / "memory" / f"{NFD}.md", "the person's note, saved from a Mac\n")
    refused = cli("restore", f"memory/{NFC}.md", "--last", "--json")
    assert refused.returncode == 2, refused.stdout
    assert f"memory/{NFC}.md would make a second file of the same look beside it; nothing was restored" \
        in refused.json()["error"]
    assert names(workspace / "memory") == [f"{NFD}.md"]
    os.unlink(workspace / "memory" / f"{NFD}.md")
    assert cli("restore", f"memory/{NFC}.md", "--last", "--no-index").returncode == 0
    assert (workspace / "memory" / f"{NFC}.md").read_text() == "the agent's note\n"


def test_memory_write_of_a_look_alike_is_a_tool_error_and_memory_get_finds_nothing_as_openclaw(workspace, state_dir):
    from test_guard_reads import Session

    write(workspace / "memory" / f"{NFD}.md", "the person's note\n")
    session = Session(workspace, state_dir)
    try:
        refused, text = session.call("memory_write", path=f"memory/{NFC}.md", append="agent")
        assert refused and text.startswith(f"refused: memory/{NFD}.md (memory/cafe\\u0301.md) exists, named as memory/{NFC}.md"), text
        refused, text = session.call("memory_get", path=f"memory/{NFC}.md")  # (OpenClaw's answer, and a warning naming it)
        got = json.loads(text)
        assert not refused and {k: got[k] for k in ("text", "path", "status")} == {
            "text": "", "path": f"memory/{NFC}.md", "status": "not_found"}
        assert got["warnings"] == [f"memory/{NFC}.md does not exist; memory/{NFD}.md (memory/cafe\\u0301.md), named as "
                                   f"memory/{NFC}.md (memory/caf\\xe9.md) is but with its letters written in other Unicode "
                                   "code points (decomposed: NFD, as macOS names files), is there: read it by its exact "
                                   "name, as this message gives it"]
    finally:
        assert "Traceback" not in session.close()
    assert names(workspace / "memory") == [f"{NFD}.md"]


def test_a_rollback_brings_a_note_back_under_the_name_it_had_even_beside_a_look_alike(cli, workspace):
    """A rollback puts every name back as it was at its moment: a refused step would stop it half done."""
    import time

    from openclaw_memory.rollback.plan import iso_moment

    assert cli("write", f"memory/{NFC}.md", "--append", "the agent's note", "--no-index").returncode == 0
    moment = time.time()  # after the write's entry, before the removal's (microseconds: the rm takes milliseconds)
    assert cli("rm", f"memory/{NFC}.md", "--no-index").returncode == 0
    write(workspace / "memory" / f"{NFD}.md", "the person's note\n")  # made by hand since: left as it is
    done = cli("rollback", "--to", iso_moment(moment), "--force", "--json", "--no-index")
    assert done.returncode == 0, done.stdout + done.stderr
    assert names(workspace / "memory") == sorted([f"{NFC}.md", f"{NFD}.md"])
    assert (workspace / "memory" / f"{NFC}.md").read_text() == "the agent's note\n"


def test_a_move_to_a_look_alike_of_a_note_or_folder_is_refused_but_a_rename_to_its_own_other_form_is_not(cli, workspace):
    write(workspace / "memory" / f"{NFD}.md", "the person's note\n")
    write(workspace / "memory" / "projects" / NFD / "x.md", "in the person's folder\n")
    write(workspace / "memory" / "a.md", "the agent's note\n")
    assert cli("read", "memory/a.md").returncode == 0
    for to, what in ((f"memory/{NFC}.md", "file"), (f"memory/projects/{NFC}/a.md", "folder")):
        refused = cli("mv", "memory/a.md", to, "--json")
        assert refused.returncode == 2, refused.stdout
        assert f"would make a second {what} of the same look beside it; nothing was moved" in refused.json()["error"]
    assert names(workspace / "memory") == sorted([f"{NFD}.md", "a.md", "projects"])
    assert names(workspace / "memory" / "projects") == [NFD]
    # The note's own name in the other form: a rename of it, no second note.
    assert cli("read", f"memory/{NFD}.md").returncode == 0
    assert cli("mv", f"memory/{NFD}.md", f"memory/{NFC}.md", "--no-index").returncode == 0
    assert names(workspace / "memory") == sorted([f"{NFC}.md", "a.md", "projects"])


def test_an_import_that_would_make_a_look_alike_of_a_note_here_is_refused(cli, workspace, state_dir, tmp_path):
    from conftest import settings_for
    from openclaw_memory.memory.local import LocalMemory

    there = tmp_path / "there"
    write(there / "memory" / f"{NFD}.md", "made on a mac\n")
    archive = tmp_path / "a.tar.gz"
    LocalMemory(settings_for(there, tmp_path / "there-state")).export_archive(str(archive))
    write(workspace / "memory" / f"{NFC}.md", "made here\n")
    refused = cli("import", str(archive), "--json")
    assert refused.returncode == 2 and "would make a second file of the same look beside it; nothing was imported. " \
        "Rename the file here to the archive's spelling first" in refused.json()["error"], refused.stdout
    assert names(workspace / "memory") == [f"{NFC}.md"]


def test_rm_mv_and_restore_last_of_a_look_alike_name_say_which_note_is_there(cli, workspace):
    """``rm``/``mv`` of ``memory/café.md`` typed as one é, where the note is named in NFD (as `files`
    lists it: the two print alike), said only "does not exist"; ``restore --last`` of it after the
    note's removal "no removal ... is recorded". Each names the spelling there, escaped."""
    write(workspace / "memory" / f"{NFD}.md", "the person's note\n")
    write(workspace / "memory" / NFD / "in.md", "in the person's folder\n")
    alike = (f"memory/{NFD}.md (memory/cafe\\u0301.md), named as memory/{NFC}.md (memory/caf\\xe9.md) is but with its "
             "letters written in other Unicode code points (decomposed: NFD, as macOS names files),")
    for command, done in (("rm", "removed"), ("mv", "moved")):
        refused = cli(command, f"memory/{NFC}.md", *(["memory/x.md"] if command == "mv" else []), "--json")
        assert refused.returncode == 2, refused.stdout
        assert refused.json()["error"] == (f"memory/{NFC}.md does not exist; nothing was {done}: {alike} is there; give its "
                                           "exact name, as this message gives it"), refused.stdout
    folder = cli("rm", f"memory/{NFC}/in.md", "--json")  # a folder on the way so named
    assert folder.returncode == 2 and f": memory/{NFD}/in.md (memory/cafe\\u0301/in.md), named as memory/{NFC}/in.md " \
        "(memory/caf\\xe9/in.md) is but" in folder.json()["error"], folder.stdout
    assert "(see `openclaw-memory files`)" in cli("rm", "memory/other.md", "--json").json()["error"]  # as before
    assert names(workspace / "memory") == sorted([NFD, f"{NFD}.md"])
    assert cli("read", f"memory/{NFD}.md").returncode == 0
    assert cli("rm", f"memory/{NFD}.md", "--no-index").returncode == 0
    refused = cli("restore", f"memory/{NFC}.md", "--last", "--json")
    assert refused.returncode == 2 and refused.json()["error"].endswith(
        f"so --last has nothing to restore; one of {alike} is: `openclaw-memory restore 'memory/{NFD}.md' --last` brings "
        "it back"), refused.stdout
    assert cli("restore", f"memory/{NFD}.md", "--last", "--no-index").returncode == 0
    assert (workspace / "memory" / f"{NFD}.md").read_text() == "the person's note\n"


def test_a_read_of_a_look_alike_name_says_which_note_is_there(cli, workspace):
    """It said only "does not exist" while `files` listed a name that prints alike; --json (and memory_get)
    keep OpenClaw's not_found shape, with the warning."""
    write(workspace / "memory" / f"{NFD}.md", "the person's note\n")
    said = (f"memory/{NFC}.md does not exist; memory/{NFD}.md (memory/cafe\\u0301.md), named as memory/{NFC}.md "
            "(memory/caf\\xe9.md) is but with its letters written in other Unicode code points (decomposed: NFD, as macOS "
            "names files), is there: read it by its exact name, as this message gives it")
    missing = cli("read", f"memory/{NFC}.md")
    assert (missing.returncode, missing.stdout, missing.stderr) == (1, "", f"warning: {said}\n")
    assert cli("read", "memory/none.md").stderr == "warning: memory/none.md does not exist\n"
    shown = cli("read", f"memory/{NFC}.md", "--json")
    assert shown.json() == {"text": "", "path": f"memory/{NFC}.md", "status": "not_found", "warnings": [said]}
    assert shown.stderr == f"warning: {said}\n"
