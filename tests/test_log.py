"""``log``: every recorded version across the memory files, newest first, with who, how and how much."""

from __future__ import annotations

import datetime as dt

import pytest

from conftest import settings_for, write
from openclaw_memory.cli.parse import parse
from openclaw_memory.log.activity import changed_lines
from openclaw_memory.memory.local import LocalMemory

KEYS = {"path", "time", "origin", "agent", "session", "version", "previousVersion", "size", "linesAdded", "linesRemoved"}


def log(cli, *args: str) -> list[dict]:
    result = cli("log", "--json", *args)
    assert result.returncode == 0, result.stderr
    return result.json()["entries"]


def test_log_lists_a_write_an_edit_a_repair_and_a_restore_in_order(cli, workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n- canonical\n")
    assert cli("read", "MEMORY.md").returncode == 0  # first sighting: an outside edit
    assert cli("write", "MEMORY.md", "--append", "- agent fact", "--no-index").returncode == 0
    with open(workspace / "MEMORY.md", "a") as f:  # a person's editor
        f.write("- typed by hand\n")
    assert cli("read", "MEMORY.md").returncode == 0  # ... seen: logged as an external edit
    write(workspace / "memory.md", "- legacy fact\n- another\n")
    cli("doctor", "--fix", "--yes")  # merges the legacy root into MEMORY.md (other findings may remain: not asked here)
    assert not (workspace / "memory.md").exists()
    entries = log(cli)
    written = next(e for e in entries if e["origin"] == "agent-write")
    # The version log gives is what restore takes.
    assert LocalMemory(settings_for(workspace, state_dir)).restore("MEMORY.md", written["version"][:12]).changed

    entries = log(cli)
    assert [(e["path"], e["origin"], e["agent"]) for e in entries] == [
        ("MEMORY.md", "restore", "main"),
        ("MEMORY.md", "doctor-fix", None),
        ("MEMORY.md", "external-edit", None),
        ("MEMORY.md", "agent-write", "main"),
        ("MEMORY.md", "external-edit", None),
    ]
    restore, repair, edit, agent_write, first = entries
    assert [e["time"] for e in entries] == sorted((e["time"] for e in entries), reverse=True)
    assert restore["version"] == agent_write["version"] and restore["previousVersion"] == repair["version"]
    assert (first["linesAdded"], first["linesRemoved"]) == (2, 0)  # a path's first version: every line added
    assert (agent_write["linesAdded"], agent_write["linesRemoved"]) == (1, 0)
    assert (edit["linesAdded"], edit["linesRemoved"]) == (1, 0)
    assert repair["linesAdded"] >= 2 and repair["linesRemoved"] == 0  # the two legacy lines, merged in
    # The restore takes back the hand-typed line and the merge.
    assert (restore["linesAdded"], restore["linesRemoved"]) == (0, 1 + repair["linesAdded"])
    assert first["previousVersion"] is None and all(e["previousVersion"] for e in entries[:-1])

    text = cli("log").stdout  # the plain form: one header per version, then its stat, newest first
    headers = [line.split()[2] for line in text.splitlines() if line[:12] in {e["version"][:12] for e in entries}]
    assert headers == ["restore", "doctor-fix", "external-edit", "agent-write", "external-edit"]
    assert f" MEMORY.md | {1 + repair['linesAdded']} -" in text and " MEMORY.md | 2 ++\n" in text
    assert "5 versions shown, newest first." in text


def test_log_filters_by_path_agent_session_origin_day_and_limit(cli, workspace, state_dir):
    main = LocalMemory(settings_for(workspace, state_dir))
    ops = LocalMemory(settings_for(workspace, state_dir, agent="ops", session="s1"))
    main.write("memory/people/ann.md", content="# Ann\n")
    ops.write("memory/people/bob.md", content="# Bob\n")
    ops.write("memory/2026-11-30.md", content="note\n")
    main.write("MEMORY.md", content="# Memory\n")
    write(workspace / "MEMORY.md", "# Memory\n- by hand\n")
    main.read("MEMORY.md")

    assert [e["path"] for e in log(cli)] == ["MEMORY.md", "MEMORY.md", "memory/2026-11-30.md", "memory/people/bob.md",
                                            "memory/people/ann.md"]
    assert [e["path"] for e in log(cli, "--path", "memory/people/*.md")] == ["memory/people/bob.md", "memory/people/ann.md"]
    assert [e["path"] for e in log(cli, "--path", "ann.md", "--path", "MEMORY.md")] == ["MEMORY.md", "MEMORY.md",
                                                                                      "memory/people/ann.md"]
    assert log(cli, "--path", "nothing/*.md") == []
    for command in ("log", "search"):  # an empty glob (`--path "$DIR"` unset) said "Nothing matches", exit 0
        empty = cli(command, *(("x",) if command == "search" else ()), "--path", "", "--json")
        assert empty.returncode == 2 and empty.json()["error"].startswith("--path must be globs, not an empty one"), empty
    # --agent and --session are the settings flags, as given: plain `log` is every agent's.
    assert {e["path"] for e in log(cli, "--agent", "ops")} == {"memory/2026-11-30.md", "memory/people/bob.md"}
    assert [e["session"] for e in log(cli, "--session", "s1")] == ["s1", "s1"]
    assert log(cli, "--agent", "main", "--session", "s1") == []
    assert [e["origin"] for e in log(cli, "--origin", "external-edit")] == ["external-edit"]
    assert len(log(cli, "--origin", "external-edit", "--origin", "agent-write")) == 5
    today = dt.date.today()
    assert len(log(cli, "--since", today.isoformat(), "--until", today.isoformat())) == 5
    assert log(cli, "--until", (today - dt.timedelta(days=1)).isoformat()) == []
    assert log(cli, "--since", (today + dt.timedelta(days=1)).isoformat()) == []

    page = cli("log", "--limit", "2", "--json").json()
    assert len(page["entries"]) == 2 and page["more"] is True
    assert cli("log", "--limit", "5", "--json").json()["more"] is False
    assert "older ones match too" in cli("log", "--limit", "2").stdout


def test_log_json_keys_and_the_library(cli, workspace, state_dir):
    memory = LocalMemory(settings_for(workspace, state_dir, session="s9"))
    memory.write("MEMORY.md", content="# Memory\n")
    (entry,) = log(cli)
    assert set(entry) == KEYS
    assert entry["session"] == "s9" and entry["agent"] == "main" and entry["size"] == len("# Memory\n")
    assert set(cli("log", "--json").json()) == {"entries", "more"}
    (same,) = memory.activity().entries
    assert (same.path, same.version, same.added, same.removed) == ("MEMORY.md", entry["version"], 1, 0)


def test_line_counts_are_against_the_version_logged_before_and_none_once_evicted(cli, workspace, state_dir):
    write(state_dir / "openclaw-memory.toml", "[history]\nkeep_per_path = 2\n")
    memory = LocalMemory(settings_for(workspace, state_dir))
    for n in range(1, 5):
        memory.write("MEMORY.md", content="".join(f"line {i}\n" for i in range(n)))
    newest, oldest = log(cli)
    assert (newest["linesAdded"], newest["linesRemoved"]) == (1, 0)
    # Retention dropped the version before the oldest entry kept, and its bytes: not "every line added".
    assert oldest["previousVersion"] is not None and oldest["linesAdded"] is None and oldest["linesRemoved"] is None
    assert " MEMORY.md | ? " in cli("log").stdout


def test_looking_at_the_log_is_no_use_of_a_version(cli, workspace, state_dir):
    """Eviction drops the least recently used versions first: listing them must not count as a use."""
    memory = LocalMemory(settings_for(workspace, state_dir))
    memory.write("MEMORY.md", content="one\n")
    memory.write("MEMORY.md", content="two\n")
    from openclaw_memory.history.store import HistoryStore

    db = HistoryStore(settings_for(workspace, state_dir).data_dir).db
    before = db.rows("SELECT version, used FROM objects ORDER BY version")
    assert len(log(cli)) == 2
    assert db.rows("SELECT version, used FROM objects ORDER BY version") == before


@pytest.mark.parametrize("args, words", [
    (("--since", "2026-13-01"), "--since must be a date like 2026-11-03, not '2026-13-01'"),
    (("--until", "yesterday"), "--until must be a date like 2026-11-03"),
    (("--since", "20261103"), "--since must be a date like 2026-11-03, not '20261103'"),
    (("--since", "2026-W45-2"), "--since must be a date like 2026-11-03, not '2026-W45-2'"),
    (("--until", "2026-11-03 "), "--until must be a date like 2026-11-03, not '2026-11-03 '"),
    (("--since", "2026-11-05", "--until", "2026-11-01"), "--since 2026-11-05 is after the until date"),
    (("--origin", "edit"), "--origin must be one of agent-write, external-edit, restore, doctor-fix"),
    (("--limit", "0"), "--limit must be 1 or more"),
])
def test_bad_input_is_one_line_and_exit_2(cli, workspace, args, words):
    result = cli("log", *args)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert words in line
    assert "error" in cli("log", "--json", *args).json()


@pytest.mark.parametrize("args", [
    ("--since", "0001-01-01"),  # its local midnight is before the first moment the clock can name
    ("--until", "9999-12-31"),  # the day after it is past the calendar
    ("--since", "0001-01-01", "--until", "9999-12-31"),
    ("--limit", "99999999999999999999999"),  # past SQLite's 64-bit LIMIT
])
def test_the_calendars_ends_and_a_huge_limit_bound_nothing(cli, workspace, state_dir, args):
    """The widest filters a user can type list every version (each was a traceback)."""
    LocalMemory(settings_for(workspace, state_dir)).write("MEMORY.md", content="# Memory\n")
    result = cli("log", "--json", *args)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert [e["path"] for e in result.json()["entries"]] == ["MEMORY.md"]


def test_agent_and_session_given_on_the_command_line_reach_the_handler():
    assert (parse(["log"]).values["agent"], parse(["log"]).values["session"]) == (None, None)
    given = parse(["--agent", "ops", "log", "--session", "s1"]).values
    assert (given["agent"], given["session"]) == ("ops", "s1")
    assert "agent" not in parse(["history", "MEMORY.md", "--agent", "ops"]).values


def test_changed_lines_counts_what_a_diff_shows():
    assert changed_lines(b"", b"a\nb\n") == (2, 0)
    assert changed_lines(b"a\nb\nc\n", b"a\nB\nc\nd\n") == (2, 1)
    assert changed_lines(b"a\nb", b"a\nb\n") == (1, 1)  # a final newline added: the last line changed
    assert changed_lines(b"same\n", b"same\n") == (0, 0)


def test_a_move_changes_no_line_a_removal_removes_every_line_and_a_file_back_adds_them(cli, workspace, state_dir):
    memory = LocalMemory(settings_for(workspace, state_dir))
    memory.write("memory/a.md", content="one\ntwo\nthree\n", update_index=False)
    memory.move("memory/a.md", "memory/b.md", update_index=False)
    memory.remove("memory/b.md", update_index=False)
    memory.restore("memory/b.md", last=True, update_index=False)
    entries = log(cli)
    assert [(e["origin"], e["linesAdded"], e["linesRemoved"]) for e in entries] == [
        ("restore", 3, 0),  # the file came back from nothing
        ("remove", 0, 3),
        ("move", 0, 0),
        ("agent-write", 3, 0),
    ]
    assert entries[0]["previousVersion"] is None and entries[1]["previousVersion"] == entries[1]["version"]
    # The file's versions follow it: its name now finds them all, each shown under its name then.
    assert [e["path"] for e in log(cli, "--path", "memory/b.md")] == ["memory/b.md"] * 3 + ["memory/a.md"]


def test_a_day_is_the_callers_local_day_also_when_a_service_in_another_zone_answers(workspace, state_dir, cli):
    """``--since DAY`` is the local day of the one who asks. Through a service started in another time
    zone it was the service's: the same command answered otherwise with and without the service.
    Kiritimati (UTC+14) and Pago Pago (UTC-11) are 25 hours apart: their dates never agree."""
    import json
    import subprocess
    import sys

    from conftest import env_for, wait_for

    write(workspace / "MEMORY.md", "# Memory\n- tea\n")
    assert cli("read", "MEMORY.md").returncode == 0
    assert cli("write", "MEMORY.md", "--append", "- coffee", "--no-index").returncode == 0
    here = {"TZ": "Pacific/Kiritimati"}
    today = dt.datetime.now(dt.timezone(dt.timedelta(hours=14))).date().isoformat()

    def logged(**env: str) -> tuple[list[dict], str]:
        done = subprocess.run([sys.executable, "-m", "openclaw_memory", "log", "--json", "--since", today],
                              env=env_for(workspace, state_dir, **{**here, **env}), cwd=workspace, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["entries"], done.stderr

    alone, _ = logged(OPENCLAW_MEMORY_SERVICE="off")
    assert len(alone) == 2
    service = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "serve", "--no-watch"], cwd=workspace,
                               env=env_for(workspace, state_dir, TZ="Pacific/Pago_Pago"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: "serving " in service.stderr.readline())
        assert logged() == (alone, "")  # answered by the service (a fallback says why on stderr)
        # A TZ no zone name gives (a POSIX rule): the service reads the day by the rule, as glibc does.
        posix = {"TZ": "LINT-14"}  # the C library's spelling of UTC+14, all year
        assert logged(**posix) == (alone, "")
        # One no Python zone holds (a day's offset): answered in-process, saying so.
        entries, said = logged(TZ="LINT-24")
        assert "cannot name the caller's time zone (TZ='LINT-24')" in said, said
        plain = subprocess.run([sys.executable, "-m", "openclaw_memory", "log", "--json"], env=env_for(workspace, state_dir, **posix),
                               cwd=workspace, capture_output=True, text=True)
        assert plain.returncode == 0 and plain.stderr == "", plain.stderr  # no day read: the service answers
    finally:
        service.terminate()
        service.wait(60)


def test_names_with_c1_controls_and_bidi_overrides_are_escaped_in_every_listing(cli, workspace):
    """`files`, `state`, `log` and a move's message printed U+009B (CSI: a terminal acts on it as on
    ESC [) and U+202E (shows `x\\u202edm.txt` as `xtxt.md`) raw; C0 controls were escaped already."""
    csi, rlo = "memory/c1\u009b31m.md", "memory/x\u202edm.txt.md"
    for name in (csi, rlo):
        write(workspace / name, "# odd\n")
    for args in (("files",), ("state",), ("log",), ("history", csi)):
        out = cli(*args)
        assert out.returncode == 0, (args, out.stderr)
        assert "\u009b" not in out.stdout and "\u202e" not in out.stdout, (args, out.stdout)
    listed = cli("files").stdout
    assert "memory/c1\\u009b31m.md" in listed and "memory/x\\u202edm.txt.md" in listed
    assert {f["path"] for f in cli("files", "--json").json()["files"]} >= {csi, rlo}  # JSON: the names exact
    assert cli("read", csi).returncode == 0
    moved = cli("mv", csi, "memory/plain.md", "--no-index")
    assert moved.returncode == 0 and "\u009b" not in moved.stdout + moved.stderr, moved.stdout
    # An error's line and a warning's quote the name escaped too (only listings did).
    refused = cli("rm", "memory/y\u202edm.txt.md")
    assert refused.returncode != 0 and "\u202e" not in refused.stderr and "y\\u202edm.txt.md" in refused.stderr, refused.stderr


def test_one_very_long_name_does_not_widen_every_line_of_the_log(cli, workspace):
    """The name column was padded to the longest name of the page: a note named with 250 characters
    made every line of `log` 250 columns wide; the long name now runs on alone, in full."""
    long_name = "memory/" + "n" * 240 + ".md"
    write(workspace / "memory" / "a.md", "# A\n")
    write(workspace / long_name, "# Long\n")
    assert cli("history", "memory/a.md").returncode == 0 and cli("history", long_name).returncode == 0
    out = cli("log").stdout
    (short,) = [line for line in out.splitlines() if line.startswith(" memory/a.md")]
    assert len(short) < 80, short
    assert any(line.startswith(f" {long_name} | ") for line in out.splitlines()), out
