"""A command a message bids the user run repeats the settings flags the command was given.

``write -w WS --agent ops --session s1`` blocked said "read it first (openclaw-memory read MEMORY.md)",
and ``search -w WS --agent ops`` "build it with `openclaw-memory index`": run as printed, each acted
on $OPENCLAW_WORKSPACE's workspace and agent main, and the write stayed blocked. Each test here runs
the command as printed (split as a shell splits it) and checks that it does what was bidden.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from test_mcp import run_session, text_of
from test_rollback import run_killed
from test_serve import start

from conftest import run_paused, write


def bidden(text: str, pattern: str) -> list[str]:
    """The arguments of the command ``pattern`` (a regex whose group 1 is the command line) finds in
    ``text``, as a shell splits them, without the program's name."""
    found = re.search(pattern, text)
    assert found, text
    words = shlex.split(found.group(1))
    assert words[0] == "openclaw-memory", words
    return words[1:]


def test_read_it_first_names_the_workspace_agent_and_session_given_and_following_it_lets_the_write_through(
        workspace, cli, tmp_path):
    other = tmp_path / "other"  # not $OPENCLAW_WORKSPACE: only -w names it
    write(other / "memory" / "my note.md", "hi\n")
    flags = ("-w", str(other), "--agent", "ops", "--session", "s1")
    blocked = cli("write", *flags, "memory/my note.md", "--append", "x")
    assert blocked.returncode == 3, blocked.stderr
    step = bidden(blocked.stderr, r"read it first \((openclaw-memory [^)]*)\)")
    assert step == [*flags, "read", "memory/my note.md"], blocked.stderr
    assert cli(*step).returncode == 0
    assert cli("write", *flags, "memory/my note.md", "--append", "x").returncode == 0
    assert (other / "memory" / "my note.md").read_text() == "hi\nx\n"


def test_a_name_that_reads_like_a_command_is_shown_as_it_is_and_the_hint_once(cli, tmp_path):
    """A workspace or note named like a hint ("(openclaw-memory a)") had the flags put into its name
    too, up to three times (each front-end layer again): the error named files that are not there
    and the hint, run as printed, a workspace that is not there."""
    other = tmp_path / "(openclaw-memory a)"
    write(other / "memory" / "(openclaw-memory notes).md", "hi\n")
    flags = ("-w", str(other), "--agent", "ops")
    for args in (("--json",), ()):
        blocked = cli("write", *flags, *args, "memory/(openclaw-memory notes).md", "--append", "x")
        assert blocked.returncode == 3, blocked.stderr
        said = blocked.json()["error"] if args else blocked.stderr
        assert said.count("openclaw-memory -w") == 1, said
        step = bidden(said, r"read it first \((openclaw-memory -w .*)\)")
        assert step == [*flags, "read", "memory/(openclaw-memory notes).md"], said
    assert cli(*step).returncode == 0
    assert cli("write", *flags, "memory/(openclaw-memory notes).md", "--append", "x").returncode == 0


def test_build_it_with_index_names_the_workspace_and_agent_given_and_following_it_builds_that_index(
        workspace, cli, tmp_path):
    other = tmp_path / "other"
    write(other / "MEMORY.md", "The heron nests by the pier.\n")
    flags = ("-w", str(other), "--agent", "ops")
    missing = cli("search", *flags, "--no-sync", "heron")  # (a search that syncs builds it)
    assert missing.returncode == 1
    build = bidden(missing.stderr, r"build it with `([^`]*)`")
    assert build == [*flags, "index"], missing.stderr
    status = cli("status", *flags)
    assert bidden(status.stdout, r"No index yet: `([^`]*)` builds it") == build, status.stdout
    assert cli(*build).returncode == 0
    assert cli("search", *flags, "heron").returncode == 0
    write(other / "MEMORY.md", "The heron nests by the old pier.\n")
    stale = cli("status", *flags).stdout
    assert bidden(stale, r"stale: MEMORY\.md \(`([^`]*)` updates them\)") == build, stale


def test_a_hint_worded_by_the_service_names_the_callers_flags(workspace, state_dir, cli, services):
    # The service answers with the error's fields (IndexMissing's head, run, then): the caller words
    # them with its own flags, not the service's.
    write(workspace / "MEMORY.md", "The heron nests by the pier.\n")
    start(services, workspace, state_dir)
    missing = cli("search", "-w", str(workspace), "--agent", "ops", "--no-sync", "heron")
    assert missing.returncode == 1
    assert bidden(missing.stderr, r"build it with `([^`]*)`") == ["-w", str(workspace), "--agent", "ops", "index"], (
        missing.stderr)


def test_a_hint_in_parentheses_names_the_flags_given_and_stops_that_service(workspace, state_dir, cli, services, tmp_path):
    """A second `serve --http` beside a service without it was told "stop it (`openclaw-memory serve
    --stop`)": a hint opening inside a parenthesis was not given the flags, and run as printed from
    another folder it stopped another workspace's service, or none."""
    write(workspace / "MEMORY.md", "The heron nests by the pier.\n")
    service = start(services, workspace, state_dir)
    elsewhere = {"OPENCLAW_WORKSPACE": str(tmp_path)}  # not the service's workspace: only -w names it
    refused = cli("serve", "-w", str(workspace), "--http", "127.0.0.1:0", env=elsewhere)
    assert refused.returncode == 2, refused.stderr
    step = bidden(refused.stderr, r"stop it \(`([^`]*)`\)")
    assert step == ["-w", str(workspace), "serve", "--stop"], refused.stderr
    assert cli(*step, env=elsewhere, cwd=tmp_path).returncode == 0
    assert service.proc.wait(timeout=60) == 0


@pytest.mark.parametrize("finisher", ["doctor", "rollback"])
@pytest.mark.parametrize("killed", ["rollback:step:1", "rm:unlinked"])
def test_finishing_a_killed_rollback_names_the_flags_given_in_its_undo_and_restore_and_they_act_on_that_workspace(
        workspace, state_dir, cli, tmp_path, finisher, killed):
    """`doctor -w WS --fix` finishing a killed rollback said `To undo: openclaw-memory rollback --to T`: run as
    printed from another folder, it rolled back $OPENCLAW_WORKSPACE's workspace. Killed inside its removal
    of a note made since, the removal's `restore --last` is finished too, in the same report."""
    other = tmp_path / "other"
    a = write(other / "memory" / "a.md", "a at the snapshot\n")
    flags = ("-w", str(other), "--agent", "ops")
    assert cli("read", *flags, "memory/a.md").returncode == 0
    assert cli("watchdog", "snapshot", *flags, "base").returncode == 0
    assert cli("write", *flags, "memory/a.md", "--stdin", input="a since\n").returncode == 0
    made = write(other / "memory" / "new note.md", "made since\n")
    assert cli("read", *flags, "memory/new note.md").returncode == 0
    run_killed(workspace, state_dir, killed, *flags, "rollback", "--to", "base", "--force")  # (in $OPENCLAW_WORKSPACE)
    elsewhere = {"OPENCLAW_WORKSPACE": str(workspace)}  # not the rolled back workspace: only -w names it
    if finisher == "doctor":
        said = cli(*flags, "doctor", "--fix", env=elsewhere, cwd=tmp_path)
        assert said.returncode == 0, said.stdout + said.stderr
        said_it = said.stdout
    else:
        said = cli(*flags, "rollback", "--to", "base", "--force", env=elsewhere, cwd=tmp_path)
        assert said.returncode == 0, said.stdout + said.stderr
        said_it = said.stderr
    assert a.read_text() == "a at the snapshot\n" and not made.exists(), said_it
    if killed == "rm:unlinked":
        restore = bidden(said_it, r"its bytes are in the history \(`([^`]*)` brings it back\)")
        assert restore == [*flags, "restore", "memory/new note.md", "--last"], said_it
        assert cli(*restore, env=elsewhere, cwd=tmp_path).returncode == 0 and made.read_text() == "made since\n"
    undo = bidden(said_it, r"(?m)finished the interrupted rollback .*\. To undo: (openclaw-memory .*)$")
    assert undo[:-1] == [*flags, "rollback", "--to"], said_it
    undone = cli(*undo, env=elsewhere, cwd=tmp_path)
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert a.read_text() == "a since\n" and made.read_text() == "made since\n"


def test_restores_changed_while_restored_hint_names_the_note_and_the_flags_given_and_lists_its_history(
        workspace, state_dir, cli, tmp_path):
    """A restore that an editor's save overtook said ``Check `openclaw-memory -w WS history` and try again``:
    run as printed, `error: missing argument PATH`."""
    other = tmp_path / "other"
    note = write(other / "memory" / "my note.md", "first\n")
    flags = ("-w", str(other), "--agent", "ops")
    assert cli("read", *flags, "memory/my note.md").returncode == 0
    assert cli("write", *flags, "memory/my note.md", "--append", "second").returncode == 0
    first = cli("history", *flags, "memory/my note.md", "--json").json()["versions"][-1]["version"]

    def editor_saves() -> None:
        (other / "memory" / ".my note.md.swp").write_text("the editor's\n")
        (other / "memory" / ".my note.md.swp").replace(note)

    code, _, err = run_paused(workspace, state_dir, (*flags, "restore", "memory/my note.md", first[:12]), "write:checked",
                              editor_saves)
    assert code == 3 and "changed while it was being restored" in err, err
    history = bidden(err, r"Check `([^`]*)` and try again")
    assert history == [*flags, "history", "memory/my note.md"], err
    listed = cli(*history, env={"OPENCLAW_WORKSPACE": str(workspace)}, cwd=tmp_path)
    assert listed.returncode == 0 and first[:12] in listed.stdout, listed.stdout + listed.stderr
    assert note.read_text() == "the editor's\n"


def _index_folder_blocked(workspace: Path, state_dir: Path) -> None:
    """A file where the index's folder goes: a search fails naming `doctor --fix`, which moves it aside."""
    from conftest import settings_for

    data_dir = settings_for(workspace, state_dir).data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "index").write_text("not a folder\n")


def test_memory_search_names_the_flags_the_mcp_server_was_given(workspace: Path, state_dir: Path):
    # The model's shell may not have the server's environment: the command it is told to run names
    # the workspace and state dir the server was started with (test_mcp's server: -w and --state-dir).
    write(workspace / "MEMORY.md", "The heron nests by the pier.\n")
    _index_folder_blocked(workspace, state_dir)

    async def script(session):
        return await session.call_tool("memory_search", {"query": "heron"})

    blocked = run_session(workspace, state_dir, script)
    assert blocked.is_error
    assert bidden(text_of(blocked), r"not a folder: `([^`]*)` moves it aside") == [
        "-w", str(workspace), "--state-dir", str(state_dir), "--agent", "main", "doctor", "--fix"]


def test_memory_search_names_the_settings_an_mcp_server_took_from_its_environment(workspace: Path, state_dir: Path):
    """An agent host gives the server its settings in the environment (docs/mcp.md's own entry sets
    OPENCLAW_STATE_DIR): the hint named only the flags given, `openclaw-memory doctor --fix`, which from
    the model's shell repaired another state dir and left the server's broken."""
    import asyncio
    import subprocess
    import sys

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from conftest import env_for

    write(workspace / "MEMORY.md", "The heron nests by the pier.\n")
    _index_folder_blocked(workspace, state_dir)
    env = env_for(workspace, state_dir)  # the workspace and state dir in the environment, no flag
    params = StdioServerParameters(command=sys.executable, args=["-m", "openclaw_memory", "mcp"], env=env, cwd=str(workspace))

    async def main():
        async with stdio_client(params) as (read, write_stream), ClientSession(read, write_stream) as session:
            await session.initialize()
            return await session.call_tool("memory_search", {"query": "heron"})

    blocked = asyncio.run(asyncio.wait_for(main(), timeout=120))
    assert blocked.is_error
    args = bidden(text_of(blocked), r"not a folder: `([^`]*)` moves it aside")
    assert args == ["-w", str(workspace), "--state-dir", str(state_dir), "--agent", "main", "doctor", "--fix"]
    clean = {k: v for k, v in env.items() if not k.startswith("OPENCLAW_") or k == "OPENCLAW_MEMORY_EMBEDDING_BACKEND"}
    fixed = subprocess.run([sys.executable, "-m", "openclaw_memory", *args, "--yes"], env=clean, capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr  # run as printed from a shell without the server's environment

    found = asyncio.run(asyncio.wait_for(main(), timeout=120))
    assert not found.is_error, text_of(found)


def test_doctors_finding_and_its_fix_line_name_the_flags_given_and_fix_that_workspace(workspace, cli, tmp_path):
    # A finding worded by the doctor (the legacy memory.md) and the report's "Run ... --fix" line.
    other = tmp_path / "other"
    write(other / "MEMORY.md", "kept\n")
    write(other / "memory.md", "legacy\n")
    flags = ("-w", str(other), "--agent", "ops")
    report = cli("doctor", *flags)
    assert report.returncode != 0, report.stdout
    fix = bidden(report.stdout, r'Run "(openclaw-memory [^"]*)" to repair the fixable ones')
    assert fix == [*flags, "doctor", "--fix"], report.stdout
    assert bidden(report.stdout, r'Run "(openclaw-memory [^"]*)" to merge the legacy file') == fix, report.stdout
    # The JSON too: a tool runs the fixHint it reads (it named the default workspace; review).
    (split,) = [f for f in cli("doctor", *flags, "--json").json()["findings"] if f["id"] == "split-root"]
    assert bidden(split["fixHint"], r'Run "(openclaw-memory [^"]*)" to merge') == fix and split["message"].endswith(split["fixHint"])
    assert cli(*fix, "--yes").returncode == 0
    assert not (other / "memory.md").exists() and "legacy" in (other / "MEMORY.md").read_text()


def test_the_doctors_no_index_finding_names_the_flags_given_and_builds_that_index(workspace, cli, tmp_path):
    other = tmp_path / "other"
    write(other / "MEMORY.md", "The heron nests by the pier.\n")
    assert cli("index", "-w", str(other)).returncode == 0  # main's: an index folder without ops's index is a finding
    flags = ("-w", str(other), "--agent", "ops")
    report = cli("doctor", *flags)
    build = bidden(report.stdout, r"no search index for agent ops yet \([^)]*\); `([^`]*)` builds it")
    assert build == [*flags, "index"], report.stdout
    assert cli(*build).returncode == 0
    assert cli("search", *flags, "heron").returncode == 0


def test_rm_and_restores_hints_name_the_flags_given_and_a_name_with_a_space_quoted(workspace, cli, tmp_path):
    other = tmp_path / "other"
    note = write(other / "memory" / "my note.md", "hi\n")
    flags = ("-w", str(other), "--agent", "ops")
    assert cli("read", *flags, "memory/my note.md").returncode == 0
    removed = cli("rm", *flags, "memory/my note.md")
    assert removed.returncode == 0, removed.stderr
    restore = bidden(removed.stdout, r"it is kept in the history: (openclaw-memory .*)$")
    assert restore == [*flags, "restore", "memory/my note.md", "--last"], removed.stdout
    assert cli(*restore).returncode == 0 and note.read_text() == "hi\n"
    # An error raised below (history/moves.py), worded by the front-end: run, it lists that note's history.
    write(other / "memory" / "never gone.md", "here\n")
    never = cli("restore", *flags, "memory/never gone.md", "--last")
    assert never.returncode == 2
    history = bidden(never.stderr, r"\(see `([^`]*)`;")
    assert history == [*flags, "history", "memory/never gone.md"], never.stderr
    listed = cli(*history)
    assert listed.returncode == 0 and listed.stdout.strip(), listed.stderr
    doctor = bidden(never.stderr, r"which `([^`]*)` names")  # where a workspace moved leaves its history
    assert doctor == [*flags, "doctor"], never.stderr


def test_mv_onto_a_file_names_the_flags_given_in_its_refusal_and_its_restore_hint(workspace, cli, tmp_path):
    other = tmp_path / "other"
    write(other / "memory" / "a.md", "a\n")
    target = write(other / "memory" / "b c.md", "b\n")
    flags = ("-w", str(other), "--agent", "ops")
    for name in ("memory/a.md", "memory/b c.md"):
        assert cli("read", *flags, name).returncode == 0
    refused = cli("mv", *flags, "memory/a.md", "memory/b c.md")
    assert refused.returncode == 2
    later = bidden(refused.stderr, r"archived as `rm` archives: `([^`]*)` brings it back")
    assert later == [*flags, "restore", "memory/b c.md", "--last"], refused.stderr
    moved = cli("mv", *flags, "memory/a.md", "memory/b c.md", "--force")
    assert moved.returncode == 0, moved.stderr
    assert bidden(moved.stdout, r"is archived: (openclaw-memory .*)$") == later, moved.stdout
    assert cli(*later).returncode == 0 and target.read_text() == "b\n"


def test_search_on_an_index_of_other_embedding_settings_names_the_flags_given_and_reindexing_as_printed_answers(
        workspace, state_dir, cli, tmp_path):
    # index/api.py raises it; the CLI's error line words it with the flags of the search.
    other = tmp_path / "other"
    write(other / "MEMORY.md", "The heron nests by the pier.\n")
    flags = ("-w", str(other), "--agent", "ops")
    assert cli("index", *flags).returncode == 0
    (state_dir / "openclaw-memory.toml").write_text("[index]\nchunk_tokens = 64\n")
    refused = cli("search", *flags, "--no-sync", "heron")
    assert refused.returncode == 1, refused.stderr
    reindex = bidden(refused.stderr, r"other embedding settings .*; run `([^`]*)` to re-embed it")
    assert reindex == [*flags, "index"], refused.stderr
    assert cli(*reindex).returncode == 0
    assert cli("search", *flags, "--no-sync", "heron").returncode == 0


def test_a_name_with_a_control_character_is_quoted_so_that_a_shell_gives_it_back(workspace, cli):
    """`rm $'memory/a\\nb.md'` bid `restore 'memory/a\\x0ab.md' --last`: pasted, that named another file,
    refused (`contains a backslash`). It is bash's $'...' now, whose \\xNN the shell turns back."""
    import subprocess

    name = "memory/a\nb.md"
    write(workspace / name, "kept\n")
    assert cli("read", name).returncode == 0
    removed = cli("rm", name)
    assert removed.returncode == 0, removed.stderr
    word = re.search(r" restore (.*) --last$", removed.stdout.strip()).group(1)
    assert word == "$'memory/a\\x0ab.md'", removed.stdout
    typed = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, text=True).stdout
    assert typed == name
    assert cli("restore", typed, "--last").returncode == 0 and (workspace / name).read_text() == "kept\n"


def test_a_hint_never_prints_the_qdrant_urls_credentials(workspace, state_dir, cli):
    """A hint's command line repeated --qdrant-url as given, user:password and api_key and all; the MCP
    server added the URL from its host's environment to every hint, shown to the model."""
    from openclaw_memory.settings import Overrides, command_line, resolve_settings

    secret = "http://admin:S3CRET-PASS@127.0.0.1:1/?api_key=K3Y"
    write(workspace / "memory" / "x.md", "x\n")
    blocked = cli("write", "memory/x.md", "--append", "y", "--qdrant-url", secret)
    assert blocked.returncode == 3 and "--qdrant-url http://127.0.0.1:1/ read memory/x.md" in blocked.stderr
    assert "S3CRET" not in blocked.stderr and "K3Y" not in blocked.stderr
    settings = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir)),
                                environ={"OPENCLAW_MEMORY_QDRANT_URL": secret})
    assert command_line(settings, in_force=True).endswith("--qdrant-url http://127.0.0.1:1/")
    # A URL refused as malformed is named without them too (an MCP tool error shows the model).
    for bad in ("http://user:SECRET1@127.0.0.1:99999/?api_key=SECRET2", "http://user:SECRET1@[::1:1/?api_key=SECRET2",
                "ftp://user:SECRET1@host/?api_key=SECRET2", "user:SECRET1@127.0.0.1:1"):
        refused = cli("search", "heron", "--qdrant-url", bad, "--json")
        assert refused.returncode == 2 and "SECRET" not in refused.stdout + refused.stderr, (bad, refused.stdout)


def test_files_names_the_flags_given_in_the_legacy_roots_doctor_fix(workspace, cli, tmp_path):
    """`files -w WS --state-dir SD` said `run openclaw-memory doctor --fix` of a legacy memory.md: run as
    printed, it renamed the memory.md of the default workspace, not this one (review)."""
    write(workspace / "memory.md", "legacy\n")
    other = tmp_path / "elsewhere"
    listed = cli("-w", str(workspace), "--state-dir", str(other), "files")
    (line,) = [line for line in listed.stdout.splitlines() if line.startswith("skipped: memory.md")]
    args = bidden(line, r"\(run `([^`]*)`\)")
    assert args == ["-w", str(workspace), "--state-dir", str(other), "doctor", "--fix"], line
    (skipped,) = cli("-w", str(workspace), "--state-dir", str(other), "files", "--json").json()["skipped"]
    assert bidden(skipped["reason"], r"\(run `([^`]*)`\)") == args  # the JSON too (a tool runs it)
    # An MCP server names the workspace, state dir and agent it serves, however it was given them.
    import json

    async def script(session):
        return json.loads(text_of(await session.call_tool("memory_files", {})))

    (served,) = run_session(workspace, other, script)["skipped"]
    assert bidden(served["reason"], r"\(run `([^`]*)`\)") == ["-w", str(workspace), "--state-dir", str(other),
                                                               "--agent", "main", "doctor", "--fix"]
