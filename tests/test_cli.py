"""The CLI as a user runs it: flags anywhere, JSON, exit codes, no tracebacks."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys

import pytest

from conftest import env_for, run_in_process, write


def test_settings_flags_before_between_and_after(cli, workspace, tmp_path):
    other = tmp_path / "other"
    write(other / "MEMORY.md", "other\n")
    write(workspace / "MEMORY.md", "mine\n")
    before = cli("-w", str(other), "files", "--json").json()
    after = cli("files", "--json", "-w", str(other)).json()
    eq = cli("files", "--json", f"--workspace={other}").json()
    assert before == after == eq
    assert before["workspace"] == str(other)
    assert cli("files", "--json").json()["workspace"] == str(workspace)
    assert cli("-w", str(workspace), "files", "--json", "-w", str(other)).json()["workspace"] == str(other)


def test_files_json_shape(cli, workspace, tmp_path):
    write(workspace / "MEMORY.md", "m")
    write(workspace / "memory.md", "legacy")
    write(tmp_path / "x/e.md", "e")
    data = cli("files", "--json", "--extra", str(tmp_path / "x"), "--agent", "ops").json()
    assert data["agent"] == "ops" and data["workspace"] == str(workspace)
    assert data["files"][0] == {"path": "MEMORY.md", "absPath": str(workspace / "MEMORY.md"), "source": "root", "kind": "markdown", "size": 1}
    assert data["files"][1]["path"] == "../x/e.md" and data["files"][1]["source"] == "extra"  # relative, as OpenClaw shows it
    assert data["files"][1]["absPath"] == str(tmp_path / "x/e.md")
    assert data["skipped"][0]["path"] == "memory.md"


def test_extra_paths_from_environment(cli, workspace, tmp_path):
    write(tmp_path / "a/one.md", "1")
    write(tmp_path / "b/two.md", "2")
    env = {"OPENCLAW_MEMORY_EXTRA_PATHS": f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}"}
    files = [f["path"] for f in cli("files", "--json", env=env).json()["files"]]
    assert files == ["../a/one.md", "../b/two.md"]


def test_read_refusal_exit_2_with_json_error(cli, workspace):
    write(workspace / "notes.md", "x")
    res = cli("read", "notes.md", "--json")
    assert res.returncode == 2
    assert "not a memory path" in res.json()["error"] and "not a memory path" in res.stderr
    plain = cli("read", "../etc/passwd.md")
    assert plain.returncode == 2 and plain.stdout == "" and "Traceback" not in plain.stderr


def test_read_relative_to_workspace_not_cwd(cli, workspace, tmp_path):
    write(workspace / "memory/a.md", "from workspace\n")
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere / "memory/a.md", "from cwd\n")
    res = cli("read", "memory/a.md", "--json", cwd=elsewhere)
    assert res.json()["text"] == "from workspace"


def test_read_plain_and_paging(cli, workspace):
    write(workspace / "MEMORY.md", "a\nb\nc\n")
    res = cli("read", "MEMORY.md", "--from", "2", "--lines", "1")
    assert res.stdout == "b\n\n[More content available. Use from=3 to continue.]\n"
    bad = cli("read", "MEMORY.md", "--lines", "0", "--json")
    assert bad.returncode == 2 and "at least 1" in bad.json()["error"]


@pytest.mark.parametrize("args,needle", [
    (("-w", "/definitely/missing", "files"), "workspace not found"),
    (("files", "--bogus"), "no such option"),
    (("read",), "missing argument"),
])
def test_user_mistakes_are_messages_not_tracebacks(cli, args, needle):
    res = cli(*args)
    assert res.returncode == 2
    assert needle in res.stderr and "Traceback" not in res.stderr


def test_file_given_as_workspace(cli, workspace):
    f = write(workspace / "MEMORY.md", "x")
    res = cli("files", "--json", "-w", str(f))
    assert res.returncode == 2 and "not a folder" in res.json()["error"]


def test_malformed_config_is_a_clear_error(cli, state_dir):
    write(state_dir / "openclaw-memory.toml", "[read\n")
    res = cli("files")
    assert res.returncode == 2 and "openclaw-memory.toml" in res.stderr and "line 1" in res.stderr


def test_non_utf8_read_warns(cli, workspace):
    write(workspace / "MEMORY.md", b"caf\xe9\n")
    res = cli("read", "MEMORY.md", "--json")
    assert res.returncode == 0 and res.json()["text"] == "caf\ufffd"
    assert "not valid UTF-8" in res.stderr


def test_console_script_and_module_entry_points(workspace):
    exe = os.path.join(os.path.dirname(sys.executable), "openclaw-memory")
    out = subprocess.run([exe, "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "files" in out.stdout and "read" in out.stdout


def test_the_first_hour_wording_and_exit_statuses(cli, workspace):
    missing = cli("read", "memory/nope.md")
    assert missing.returncode == 1 and "memory/nope.md does not exist" in missing.stderr
    as_json = cli("read", "memory/nope.md", "--json")
    assert as_json.returncode == 1 and as_json.json() == {"status": "not_found", "text": "", "path": "memory/nope.md"}
    # --diff of the same missing file exits as the read does (it exited 0)
    diff = cli("read", "memory/nope.md", "--diff")
    assert diff.returncode == 1 and "memory/nope.md does not exist" in diff.stderr
    diff_json = cli("read", "memory/nope.md", "--diff", "--json")
    assert diff_json.returncode == 1 and diff_json.json()["mode"] == "missing"
    refused = cli("read", "/etc/passwd")
    assert refused.returncode == 2 and "refused: /etc/passwd is not a memory path" in refused.stderr
    write(workspace / "MEMORY.md", "# Memory\n")
    status = cli("status")
    assert "never indexed" in status.stdout and "last indexed never" not in status.stdout


def test_the_exit_statuses_of_the_situations_docs_cli_md_names(cli, workspace, tmp_path):
    """docs/cli.md's exit status table, situation by situation (for 3 it named a blocked `write`
    alone; for 2 neither a file `mv` or `rm` cannot find nor a missing baseline)."""
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "a.md", "a\n")
    assert cli("watchdog", "verify").returncode == 2  # no baseline yet
    for argv in [("mv", "memory/nope.md", "memory/c.md"), ("rm", "memory/nope.md"), ("restore", "memory/nope.md", "--last"),
                 ("links", "memory/nope.md"), ("-w", str(tmp_path / "nowhere"), "files"),
                 ("import", str(tmp_path / "none.tar.gz")), ("search", "x", "--bogus")]:
        assert cli(*argv).returncode == 2, argv
    for argv in [("search", "x", "--no-sync"), ("read", "memory/nope.md")]:  # (a search that syncs builds it)
        assert cli(*argv).returncode == 1, argv
    assert cli("watchdog", "snapshot", "start").returncode == 0
    write(workspace / "memory" / "a.md", "a, edited\n")  # never read by this agent
    for argv in [("rm", "memory/a.md"), ("mv", "memory/a.md", "memory/c.md"), ("write", "memory/a.md", "--append", "x"),
                 ("rollback", "--to", "start")]:
        assert cli(*argv).returncode == 3, argv
    assert (workspace / "memory" / "a.md").read_text() == "a, edited\n"

def test_inputs_that_would_hang_or_overflow_are_usage_errors(workspace, state_dir, cli):
    write(workspace / "MEMORY.md", "# Memory\n")
    assert cli("read", "MEMORY.md").returncode == 0
    fifo = workspace.parent / "pipe"
    os.mkfifo(fifo)
    for source in (str(fifo), "/dev/zero"):  # would wait forever, or fill memory
        refused = cli("write", "MEMORY.md", "--replace-file", source, "--json")
        assert refused.returncode == 2 and "not a regular file" in refused.json()["error"], refused.stderr
    huge = cli("search", "tea", "--limit", str(2**63), "--json")
    assert huge.returncode == 2 and "--limit must be from 1 to" in huge.json()["error"], huge.stderr
    zero = cli("search", "tea", "--max-results", "0", "--json")  # OpenClaw's spelling, named as typed (it said --limit)
    assert zero.returncode == 2 and zero.json()["error"] == "--max-results must be from 1 to 1000, not 0", zero.stdout
    url = cli("--qdrant-url", "http://[::1", "status", "--json")
    assert url.returncode == 2 and "is not a Qdrant URL" in url.json()["error"], url.stderr
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n"


def test_a_citation_of_a_file_whose_name_holds_a_newline_reads_back(workspace, cli):
    write(workspace / "memory" / "new\nline.md", "one\ntwo\nthree\n")
    assert cli("read", "memory/new\nline.md#L2-L3").stdout == "two\nthree\n"
    assert cli("read", "MEMORY.md#L1\n").returncode == 2  # a newline after a citation is no citation


def test_read_from_past_the_end_says_so_on_stderr_and_its_json_is_unchanged(workspace, cli):
    # It printed nothing at all, exit 0: a --from past the end looked like an empty note.
    write(workspace / "MEMORY.md", "a\n\nb\n")
    write(workspace / "memory" / "e.md", "")
    past = cli("read", "MEMORY.md", "--from", "50")
    assert (past.returncode, past.stdout, past.stderr) == (0, "", "MEMORY.md: it ends before line 50: no line to show\n")
    empty = cli("read", "memory/e.md")
    assert (empty.returncode, empty.stdout, empty.stderr) == (0, "", "memory/e.md: the file is empty\n")
    as_json = cli("read", "MEMORY.md", "--from", "50", "--json")
    assert as_json.stderr == "" and as_json.json()["lines"] == 0 and as_json.json()["text"] == ""


def test_read_of_blank_lines_prints_each_line_and_says_nothing_on_stderr(workspace, cli):
    # A window of one blank line printed nothing (its text is "", OpenClaw's JSON), exit 0, while the
    # JSON said lines 1, truncated, nextFrom 3; a window ending in a blank line lost that line.
    write(workspace / "MEMORY.md", "a\n\nb\n\n")
    blank = cli("read", "MEMORY.md", "--from", "2", "--lines", "1")
    assert (blank.returncode, blank.stdout, blank.stderr) == (0, "\n", "")
    as_json = cli("read", "MEMORY.md", "--from", "2", "--lines", "1", "--json").json()
    assert (as_json["text"], as_json["lines"], as_json["truncated"], as_json["nextFrom"]) == ("", 1, True, 3)
    whole = cli("read", "MEMORY.md")
    assert (whole.stdout, whole.stderr) == ("a\n\nb\n\n", "")  # the file as it is, its last blank line too
    assert cli("read", "MEMORY.md", "--from", "3").stdout == "b\n\n"

def test_read_of_a_notes_fragment_that_is_no_line_citation_names_the_note(workspace, cli):
    # `links` shows [[a#H]]: an agent passes the fragment on. It was "not a Markdown (.md) memory file".
    write(workspace / "memory" / "a.md", "# H\nx\ny\n")
    heading = cli("read", "memory/a.md#H")
    assert heading.returncode == 2 and heading.stderr == (
        "error: memory/a.md#H: only a line citation (memory/a.md#L10-L24) can be read; read memory/a.md for the whole note\n")
    assert cli("read", "memory/a.md#l2-l3").stdout == "x\ny\n"  # a lowercase l, typed by hand
    write(workspace / "memory" / "b.md#c.md", "a file of that name\n")
    assert cli("read", "memory/b.md#c.md").stdout == "a file of that name\n"


def test_a_citation_past_the_largest_safe_integer_is_refused_as_from_is(workspace, cli):
    """#L9007199254740993 read an empty window answering "from": 9007199254740993, a number no JSON
    reader holds whole; memory_get's `from` refuses it (at most 2^53 - 1), so does a citation now."""
    write(workspace / "memory" / "notes.md", "a\nb\n")
    for cited, number in (("memory/notes.md#L9007199254740993", 9007199254740993),
                          ("memory/notes.md#L1-L9007199254740992", 9007199254740992)):
        res = cli("read", cited, "--json")
        assert res.returncode == 2 and res.json()["error"] == (
            f"{cited}: a citation's line number must be a positive integer (at most 9007199254740991), not {number}")
    assert cli("read", "memory/notes.md#L9007199254740991", "--json").json()["from"] == 9007199254740991


def test_messages_name_what_was_given_and_stay_short(workspace, state_dir, cli):
    write(workspace / "MEMORY.md", "# Memory\n")
    assert "refused: . is not a memory path" in cli("read", ".").stderr
    zero = cli("read", "MEMORY.md#L0-L2")
    assert zero.returncode == 2 and "counted from 1 (MEMORY.md#L1-L2)" in zero.stderr
    long_key = cli("read", "MEMORY.md") and cli("write", "MEMORY.md", "--append", "x", "--idempotency-key", "k" * 100_000)
    assert long_key.returncode == 2 and len(long_key.stderr) < 300, len(long_key.stderr)
    as_text = cli("read", "--", "--json")  # after --, --json is the path, and the error is not JSON
    assert as_text.returncode == 2 and as_text.stdout == "" and "--json" in as_text.stderr


def test_a_file_name_with_a_newline_stays_one_line_in_the_listing(workspace, cli):
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "two\nlines.md", "# Odd\n")
    listed = cli("files")
    assert listed.returncode == 0
    assert "memory/two\\x0alines.md\tmemory" in listed.stdout
    assert len(listed.stdout.splitlines()) == 2
    assert "memory/two\nlines.md" in {f["path"] for f in cli("files", "--json").json()["files"]}  # exact in JSON


def test_a_closed_stdout_is_no_traceback_and_a_write_still_says_it_wrote(workspace, state_dir):
    """`cmd >&-`: Python's sys.stdout is None; the write happens, so the exit status says it did."""
    import subprocess

    write(workspace / "memory" / "pipe.md", "a note\n")
    for args in (["read", "memory/pipe.md"], ["write", "memory/new.md", "--append", "hi", "--json"], ["files", "--json"]):
        done = subprocess.run([sys.executable, "-m", "openclaw_memory", *args], capture_output=False, stderr=subprocess.PIPE,
                              env=env_for(workspace, state_dir), cwd=workspace, timeout=120, preexec_fn=lambda: os.close(1))
        assert done.returncode == 0 and b"Traceback" not in done.stderr, (args, done.stderr)
    assert (workspace / "memory" / "new.md").read_text() == "hi\n"


def test_a_name_or_text_with_terminal_escapes_never_reaches_the_terminal_raw(cli, workspace):
    write(workspace / "memory" / "\x1b[31mred.md", "# Red\n\nThe \x1b[2J kestrel note.\n")
    assert cli("index").returncode == 0
    outputs = [cli("files"), cli("search", "kestrel"), cli("read", "memory/\x1b[2Jx.txt"), cli("-w", "/nonexist\x1b[31mRED", "files")]
    for res in outputs:
        assert "\x1b" not in res.stdout + res.stderr, res
    assert "memory/\\x1b[31mred.md#L1-L3" in outputs[1].stdout and "\\x1b[2J kestrel" in outputs[1].stdout
    assert cli("search", "kestrel", "--json").json()["results"][0]["path"] == "memory/\x1b[31mred.md"  # JSON: exact


def test_the_management_commands_never_print_a_names_escapes_raw(cli, workspace):
    """state, history, restore (and mv, rm, log, links, rollback beside them) print a memory file's
    name; one holding terminal escapes reached the terminal raw from state, history and restore."""
    name = "memory/\x1b[31mred\x07.md"
    write(workspace / name, "# Red\n\n[[\x1b[2Jgone]] and [x](a\x1b[2Jb.md)\n")
    outputs = [cli("state"), cli("history", name), cli("read", name, "--json"), cli("rm", name), cli("history", name),
               cli("restore", name, "--last"), cli("restore", name, "--last"), cli("mv", name, "memory/plain.md"),
               cli("log"), cli("links"), cli("rollback", "--to", "2026-01-01", "--dry-run")]
    assert [res.returncode for res in outputs] == [0] * len(outputs), [res.stderr for res in outputs]
    for res in outputs:
        assert "\x1b" not in res.stdout + res.stderr and "\x07" not in res.stdout + res.stderr, res
    assert "memory/\\x1b[31mred\\x07.md" in outputs[0].stdout + outputs[5].stdout


def test_a_bad_value_is_named_by_its_flag_on_the_command_line(cli, workspace):
    write(workspace / "MEMORY.md", "# Memory\n")
    assert cli("index").returncode == 0
    since = cli("search", "x", "--since", "yesterday")
    assert since.returncode == 2 and "--since must be a date like 2026-11-03, not 'yesterday'" in since.stderr
    order = cli("search", "x", "--since", "2027-01-01", "--until", "2020-01-01")
    assert "--since 2027-01-01 is after the until date, 2020-01-01" in order.stderr
    expect = cli("write", "MEMORY.md", "--append", "x", "--expect", "59cc")
    assert expect.returncode == 2 and "--expect must be a version" in expect.stderr and "`read --json`" in expect.stderr


def test_a_path_typed_from_a_folder_inside_the_workspace_is_answered_with_the_workspace_path(cli, workspace):
    """`cd ~/agent/memory && read 2025-11-30.md` said "not a memory path" and nothing about why."""
    write(workspace / "memory" / "2025-11-30.md", "# Sunday\n")
    for args in (("read", "2025-11-30.md"), ("write", "2025-11-30.md", "--append", "x"), ("history", "2025-11-30.md")):
        refused = cli(*args, cwd=workspace / "memory")
        assert refused.returncode == 2 and "is not a memory path" in refused.stderr, args
        assert f"paths are relative to the workspace ({workspace}), not the current folder: memory/2025-11-30.md" in refused.stderr
    assert "relative to the workspace" not in cli("read", "2025-11-30.md", cwd=workspace).stderr  # typed from the workspace


def test_an_unknown_user_timezone_and_an_empty_prompt_are_said(cli, workspace, state_dir):
    write(state_dir / "openclaw.json", '{agents: {defaults: {userTimezone: "Europe/Lisboa"}}}')
    empty = cli("prompt", "--peek")
    assert empty.returncode == 0 and empty.stdout == ""
    assert "userTimezone 'Europe/Lisboa' is not a time zone this system knows (did you mean 'Europe/Lisbon'?)" in empty.stderr
    assert f"the startup memory section is empty: {workspace} has no MEMORY.md" in empty.stderr
    as_json = cli("prompt", "--peek", "--json")  # (it said nothing with --json)
    assert as_json.returncode == 0 and as_json.json()["text"] == ""
    assert f"the startup memory section is empty: {workspace} has no MEMORY.md" in as_json.stderr
    write(workspace / "MEMORY.md", "# Memory\n\n- tea\n")
    write(state_dir / "openclaw.json", '{agents: {defaults: {userTimezone: "Europe/Lisbon"}}}')
    shown = cli("prompt", "--peek")
    assert "- tea" in shown.stdout and shown.stderr == ""


def test_doctor_names_the_files_a_finding_is_about(cli, workspace):
    write(workspace / "MEMORY.md", "# Memory\n\n- tea\n")
    write(workspace / "memory" / "a.md", "a\n")
    write(workspace / "memory" / "b.md", "b\n")
    assert cli("index").returncode == 0
    write(workspace / "memory" / "a.md", "a, changed\n")
    write(workspace / "memory" / "b.md", "b, changed\n")
    said = cli("doctor").stdout
    assert "2 memory file(s) changed since the last index\n  memory/a.md\n  memory/b.md\n" in said, said


def test_a_workspace_that_is_a_symlink_loop_is_one_line_never_a_traceback(cli, tmp_path, state_dir):
    """Python 3.11's Path.resolve raises RuntimeError, not OSError, on a symlink loop: the CLI died
    with a traceback wherever the workspace came from."""
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    write(state_dir / "openclaw.json", '{agents: {defaults: {workspace: "%s"}}}' % (tmp_path / "a"))
    for args, env, source in ((("-w", str(tmp_path / "a"), "files", "--json"), {}, "given with --workspace"),
                              (("files", "--json"), {"OPENCLAW_WORKSPACE": str(tmp_path / "b")}, "from OPENCLAW_WORKSPACE"),
                              (("files", "--json"), {"OPENCLAW_WORKSPACE": ""}, "agents.defaults.workspace")):
        res = cli(*args, env=env)
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
        assert res.stderr.count("\n") == 1 and "Too many levels of symbolic links" in res.stderr and source in res.stderr, res.stderr
        assert "symbolic links" in res.json()["error"]


def test_write_status_and_read_diff_never_print_a_names_escapes_or_bytes_raw(cli, workspace):
    """A name holding terminal escapes reached the terminal raw from `write`, `read --diff` and the
    stale files of `status`; a name that is not UTF-8 was shown as `\\udce9` in warnings and raw elsewhere.
    (A write refuses to create a file so named, and says so as safely: one already there is written.)"""
    name = "memory/\x1b[2Jcaf\udce9.md"
    shown = "memory/\\x1b[2Jcaf\\xe9.md"
    write(workspace / "MEMORY.md", "# Memory\n")
    assert cli("index").returncode == 0
    write(workspace / "memory" / "\x1b[31mred.md", "# Red\n")  # changed since the index: stale
    refused = cli("write", "memory/\x1b[2Jnew\udce9.md", "--append", "one")
    write(workspace / name, "# Cafe\n")
    assert cli("read", name).returncode == 0
    outputs = [cli("write", name, "--append", "one"), cli("read", name, "--diff"), cli("write", name, "--append", "two"),
               cli("read", name, "--diff"), cli("status"), cli("read", "memory/\x1b[2Jgone\udce9.md"), refused]
    assert [res.returncode for res in outputs] == [0, 0, 0, 0, 0, 1, 2], [res.stderr for res in outputs]
    for res in outputs:
        assert "\x1b" not in res.stdout + res.stderr and "\udce9" not in res.stdout + res.stderr, res
    assert f"appended to {shown}: version" in outputs[0].stdout
    assert "refused: memory/\\x1b[2Jnew\\xe9.md: its name is not UTF-8" in refused.stderr
    assert outputs[1].stderr.startswith(f"{shown}: unchanged since your last read")
    assert "stale: memory/\\x1b[31mred.md" in outputs[4].stdout, outputs[4].stdout
    assert outputs[5].stderr == "warning: memory/\\x1b[2Jgone\\xe9.md does not exist\n"


def test_read_diff_headers_name_the_note_as_every_message_does(cli, workspace):
    """The ``---``/``+++`` headers held the name raw: a newline in it split each in two, and its
    escape sequences reached the terminal."""
    name = "memory/n\nl\x1b[2J.md"
    write(workspace / name, "one\n")
    assert cli("read", name).returncode == 0
    write(workspace / name, "one\ntwo\n")
    for json_out in (False, True):
        done = cli("read", name, "--diff", *(["--json"] if json_out else []))
        shown = done.json()["diff"] if json_out else done.stdout
        headers = [line for line in shown.splitlines() if line.startswith(("--- ", "+++ "))]
        assert [h[:4] + h[4:].split(" (version")[0] for h in headers] == [
            "--- a/memory/n\\x0al\\x1b[2J.md", "+++ b/memory/n\\x0al\\x1b[2J.md"], shown
        assert "\x1b" not in shown
        write(workspace / name, "one\ntwo\nthree\n")


def test_write_stdin_with_stdin_closed_is_refused_and_writes_nothing(workspace, state_dir):
    """`write MEMORY.md --stdin <&-` read the null device put in place of the closed stream and
    replaced the file with nothing; a pipe (even an empty one) is still content given."""
    write(workspace / "MEMORY.md", "# Memory\n\n- keep me\n")
    env = env_for(workspace, state_dir)

    def run(preexec=None, input=None):
        return subprocess.run([sys.executable, "-m", "openclaw_memory", "write", "MEMORY.md", "--stdin", "--json"], input=input,
                              capture_output=True, env=env, cwd=workspace, timeout=120, preexec_fn=preexec)

    assert subprocess.run([sys.executable, "-m", "openclaw_memory", "read", "MEMORY.md"], env=env, cwd=workspace,
                          capture_output=True, timeout=120).returncode == 0
    closed = run(preexec=lambda: os.close(0))
    assert closed.returncode == 2 and b"Traceback" not in closed.stderr, closed.stderr
    assert b"standard input is closed" in closed.stderr and b"standard input is closed" in closed.stdout
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n\n- keep me\n"
    piped = run(input=b"# Memory\n\n- replaced\n")  # the control: content given on stdin is written
    assert piped.returncode == 0, piped.stderr
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n\n- replaced\n"


def test_write_stdin_from_a_device_is_refused_and_an_empty_pipe_still_writes(workspace, state_dir):
    """`write MEMORY.md --stdin </dev/null` emptied the file, exit 0, where `--replace-file /dev/null`
    and a closed stdin were refused; a device is no content given. An empty pipe is: it empties the file."""
    write(workspace / "MEMORY.md", "important\n")
    env = env_for(workspace, state_dir)

    def run(**stdin):
        return subprocess.run([sys.executable, "-m", "openclaw_memory", "write", "MEMORY.md", "--stdin"], capture_output=True,
                              env=env, cwd=workspace, timeout=120, **stdin)

    assert subprocess.run([sys.executable, "-m", "openclaw_memory", "read", "MEMORY.md"], env=env, cwd=workspace,
                          capture_output=True, timeout=120).returncode == 0
    for device in ("/dev/null", "/dev/zero"):
        with open(device, "rb") as fh:
            refused = run(stdin=fh)
        assert refused.returncode == 2 and refused.stdout == b"", refused
        assert refused.stderr.startswith(b"error: --stdin: standard input is a device") and refused.stderr.count(b"\n") == 1
        assert b"--replace-file with an empty file" in refused.stderr
        assert (workspace / "MEMORY.md").read_text() == "important\n"
    emptied = run(input=b"")  # an empty pipe: a legitimate request
    assert emptied.returncode == 0, emptied.stderr
    assert (workspace / "MEMORY.md").read_bytes() == b""


def _with_a_reader_gone(workspace, state_dir, args: tuple[str, ...], stream: str) -> subprocess.CompletedProcess:
    """``openclaw-memory ARGS`` whose stdout or stderr (``stream``) is a pipe nobody reads any more
    (`| true`, `| head -1` that has exited), the other stream captured."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, stream: write_end}
        return subprocess.run([sys.executable, "-m", "openclaw_memory", *args], env=env_for(workspace, state_dir), cwd=workspace,
                              timeout=120, **pipes)
    finally:
        os.close(write_end)


def test_a_reader_that_went_away_is_no_traceback_and_keeps_the_exit_status(workspace, state_dir):
    """`files --json | true`: the output waited in the buffer until exit, whose flush failed:
    `Exception ignored ... BrokenPipeError` and status 120; an error with stderr gone, status 120 too."""
    write(workspace / "MEMORY.md", "# Memory\n")
    for args, code in ((("files", "--json"), 0), (("files", "--bogus", "--json"), 2), (("write", "MEMORY.md", "--json"), 2)):
        gone = _with_a_reader_gone(workspace, state_dir, args, "stdout")
        assert gone.returncode == code and b"BrokenPipe" not in gone.stderr and b"Traceback" not in gone.stderr, (args, gone)
    for args, code in ((("files", "--bogus"), 2), (("read", "memory/nope.md"), 1), (("files",), 0)):
        gone = _with_a_reader_gone(workspace, state_dir, args, "stderr")
        assert gone.returncode == code, (args, gone)
    assert _with_a_reader_gone(workspace, state_dir, ("files",), "stderr").stdout.startswith(b"MEMORY.md\t")  # the control


def test_a_value_quoted_in_a_message_shows_a_byte_that_is_not_utf8_as_listings_do(cli, workspace):
    """`--agent $'\\xff'` was refused quoting '\\udcff' (Python's escape), where every listing shows \\xff."""
    refused = cli("files", "--agent", "\udcff\\!", "--json")
    assert refused.returncode == 2
    assert "not '\\xff\\\\!'" in refused.stderr, refused.stderr  # a backslash typed as such stays one
    assert refused.json()["error"] == refused.stderr.removeprefix("error: ").rstrip("\n")


def test_a_stream_that_cannot_hold_a_character_gets_its_escape_never_a_traceback(cli_process, workspace):
    """A stdout whose encoding cannot hold a name's or a note's characters (a Latin-1 or ASCII locale,
    PYTHONIOENCODING=ascii): each is shown as its escape, and --json stays one valid JSON document
    (\\u escapes), its error too. It was a UnicodeEncodeError traceback, exit 1."""
    write(workspace / "memory" / "café.md", "# Café ☕\n")
    env = {"PYTHONIOENCODING": "ascii"}
    listed = cli_process("files", env=env)
    assert listed.returncode == 0 and "memory/caf\\u00e9.md\tmemory" in listed.stdout, listed
    read = cli_process("read", "memory/café.md", env=env)
    assert read.returncode == 0 and read.stdout == "# Caf\\u00e9 \\u2615\n", read
    as_json = cli_process("read", "memory/café.md", "--json", env=env)
    assert as_json.returncode == 0 and as_json.json()["text"] == "# Café ☕", as_json
    refused = cli_process("read", "memory/café.txt", "--json", env=env)
    assert refused.returncode == 2 and "café.txt" in refused.json()["error"] and "Traceback" not in refused.stderr, refused
    # A Latin-1 stdout can hold é: JSON is still UTF-8 by its rule, so it is all ASCII there (\u escapes)
    latin = subprocess.run([sys.executable, "-m", "openclaw_memory", "files", "--json"], capture_output=True, cwd=workspace,
                           env=env_for(workspace, workspace.parent / "state", PYTHONIOENCODING="latin-1"), timeout=120)
    assert latin.returncode == 0 and latin.stdout.isascii() and b"caf\\u00e9.md" in latin.stdout, latin


def test_a_number_or_a_date_is_taken_only_as_typed_in_ascii_digits(cli, workspace):
    """int(), float() and date.fromisoformat took '1_000', full-width and Arabic-Indic digits,
    '20261130' and the week date '2026-W48-1': a slip read as some other number or day."""
    write(workspace / "MEMORY.md", "# Memory\n\nline\n")
    for args in (("read", "MEMORY.md", "--from", "1_000"), ("read", "MEMORY.md", "--lines", "\uff15"),
                 ("read", "MEMORY.md", "--max-chars", "\u0663"), ("search", "x", "--limit", "1_0"),
                 ("search", "x", "--min-score", "\uff10.5"), ("prompt", "--date", "20261130"),
                 ("prompt", "--date", "2026-W48-1")):
        res = cli(*args, "--json")
        wanted = {"--date": "a date like 2026-11-30", "--min-score": "a number"}.get(args[-2], "an integer")
        assert res.returncode == 2 and res.json()["error"] == f"{args[-2]} must be {wanted}, not {args[-1]!r}", (args, res)
    assert cli("read", "MEMORY.md", "--from", "+2", "--lines", " 2 ", "--max-chars", "50", "--json").json()["text"] == "\nline"
    assert cli("prompt", "--date", "2026-11-30", "--peek", "--json").returncode == 0


def test_an_error_quoting_a_name_with_a_line_end_stays_one_line(cli, workspace):
    """A refused path holding a newline split the error over two lines on stderr (what a script
    reads as the message was half of it); the JSON error keeps the exact name."""
    write(workspace / "MEMORY.md", "# Memory\n")
    for args in (("read", "memory/a\nb.txt"), ("read", "note\r\n.md"), ("-w", "/no\nwhere", "files")):
        res = cli(*args, "--json")
        assert res.returncode == 2 and len(res.stderr.splitlines()) == 1 and "\\x0a" in res.stderr, (args, res.stderr)
        assert "\n" in res.json()["error"], res.stdout


def test_doctor_never_prints_a_names_escapes_bytes_or_line_ends_raw(cli, workspace):
    """doctor printed a finding's message as its check wrote it: a file name's terminal escapes
    reached the terminal raw, a byte that is not UTF-8 went out as that byte (a U+FFFD on screen
    where every listing shows \\xff), and a newline in a name split it over two lines."""
    write(workspace / "MEMORY.md", "# Memory\n")
    (workspace / "memory").mkdir()
    (workspace / "memory" / "\x1b[31mred\x07.md").write_bytes(b"bad \xff\n")
    (workspace / "memory" / os.fsdecode(b"two\nlines\xfe.md")).write_bytes(b"a\x00b\n")
    said = cli("doctor")
    assert said.returncode == 1 and "\x1b" not in said.stdout and "\x07" not in said.stdout, said.stdout
    assert "memory/\\x1b[31mred\\x07.md is not valid UTF-8" in said.stdout, said.stdout
    assert "memory/two\\x0alines\\xfe.md holds a NUL byte" in said.stdout, said.stdout
    exact = {p for f in cli("doctor", "--json").json()["findings"] for p in f["paths"]}
    assert {"memory/\x1b[31mred\x07.md", os.fsdecode(b"memory/two\nlines\xfe.md")} <= exact


@pytest.mark.parametrize("encoding, errors", [("ascii", "backslashreplace"), ("utf-8", "surrogateescape")])
def test_the_json_lines_of_watch_and_serve_stay_json_whatever_stdout_writes(monkeypatch, encoding, errors):
    """watch --json and serve --json wrote each line with its own json.dumps: a note named café.md
    was a \\xe9 escape (no JSON) on an ASCII stdout, a name that is not UTF-8 its raw byte (no UTF-8)."""
    import io
    import json

    from openclaw_memory.cli.commands.serve_cmd import _emit_json

    out = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding=encoding, errors=errors))
    _emit_json({"path": "memory/café.md"})
    _emit_json({"path": "memory/bad\udcff.md"})
    lines = out.getvalue().decode("utf-8").splitlines()
    assert [json.loads(line)["path"] for line in lines] == ["memory/café.md", "memory/bad\udcff.md"], lines


@pytest.mark.parametrize("buffered", [True, False])
def test_output_to_a_full_disk_is_one_line_and_exit_1_never_a_traceback(workspace, state_dir, buffered):
    """`files > out` on a full disk: the output waited in the buffer until exit, whose flush failed
    ('Exception ignored ... OSError: No space left on device', exit 120); with --json the error
    itself was then written to that stdout, and failed again with a traceback."""
    write(workspace / "MEMORY.md", "# Memory\n")
    env = {k: v for k, v in env_for(workspace, state_dir).items() if k != "PYTHONUNBUFFERED" or not buffered}
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    for args in (("files",), ("files", "--json"), ("read", "MEMORY.md"), ("--help",), ("bogus", "--json")):
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-m", "openclaw_memory", *args], stdout=full, stderr=subprocess.PIPE,
                                  text=True, env=env, cwd=workspace, timeout=120)
        assert done.returncode == (2 if "bogus" in args else 1), (args, done.returncode, done.stderr)
        said = "no such command 'bogus'" if "bogus" in args else "disk is full"  # (the error's JSON copy is what is lost)
        assert "Traceback" not in done.stderr and said in done.stderr, (args, done.stderr)


@pytest.mark.parametrize("args", [("read",), ("read", "--json"), ("read", "--diff")])
def test_a_read_whose_text_never_reached_its_reader_lets_no_write_through(workspace, state_dir, args):
    """`read MEMORY.md > /dev/full` exits 1, but its read stayed recorded for the write guard: a write
    after it went through over an edit made before it, which the reader never saw (a memory_get lost
    on its way is taken back; so is this now)."""
    write(workspace / "MEMORY.md", "# Memory\n- edited by a person\n")
    env = env_for(workspace, state_dir)
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "openclaw_memory", *args, "MEMORY.md"], stdout=full,
                              stderr=subprocess.PIPE, text=True, env=env, cwd=workspace, timeout=120)
    assert done.returncode == 1 and "the output was not written" in done.stderr, done.stderr
    blocked = run_in_process(["write", "MEMORY.md", "--append", "- the agent's line"], env=env, cwd=workspace)
    assert blocked.returncode == 3 and "read" in blocked.stderr, blocked.stderr
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n- edited by a person\n"
    assert run_in_process(["read", "MEMORY.md"], env=env, cwd=workspace).returncode == 0
    assert run_in_process(["write", "MEMORY.md", "--append", "- the agent's line"], env=env, cwd=workspace).returncode == 0


@pytest.mark.parametrize("how", ["reader gone", "stdout closed"])
def test_a_read_whose_reader_left_before_the_end_or_had_no_stdout_lets_no_replace_through(workspace, state_dir, how):
    """`read | head -c 40` (the reader gone before the end: past what the pipe holds, 64 KiB) and `read
    >&-` (no stdout at all) kept the read recorded: a replace then dropped the lines nobody saw (review)."""
    note = write(workspace / "memory" / "big.md", "".join(f"precious line {i}\n" for i in range(30000)))
    env = env_for(workspace, state_dir)
    command = [sys.executable, "-m", "openclaw_memory", "read", "memory/big.md", "--lines", "30000", "--max-chars",
               "10000000"]
    if how == "reader gone":
        reader = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=workspace)
        assert reader.stdout.read(40)
        reader.stdout.close()  # as `head -c 40` leaves
        reader.wait(timeout=120)
        assert b"Traceback" not in reader.stderr.read()
    else:
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=workspace,
                              timeout=120, pass_fds=(), preexec_fn=lambda: os.close(1))
        assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    (entry,) = run_in_process(["state", "--json"], env=env, cwd=workspace).json()["files"]
    assert entry["state"] == "discovered_unread", entry
    blocked = run_in_process(["write", "memory/big.md", "--stdin"], env=env, cwd=workspace, input="replacement\n")
    assert blocked.returncode == 3 and note.read_text().count("precious line") == 30000, blocked.stderr


def test_what_a_command_takes_back_is_its_own(workspace, state_dir, monkeypatch):
    """A read's take-back registered by one command line (in one process: a library's, the tests')
    must not run when a later command's output is lost."""
    from openclaw_memory.cli.main import main
    from openclaw_memory.cli.output import GuardedStdout, OutputLost, if_lost

    class Full(io.StringIO):
        def write(self, text):
            raise OSError(28, "No space left on device")

    ran: list[int] = []
    if_lost(lambda: ran.append(1))
    monkeypatch.setenv("OPENCLAW_WORKSPACE", str(workspace))
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state_dir))
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["--version"]) == 0  # a new command line: nothing of the earlier one's to take back
    with pytest.raises(OutputLost):
        GuardedStdout(Full()).write("x")
    assert ran == []


def test_a_workspace_named_with_a_line_end_is_one_line_in_doctor_and_prompt(cli, tmp_path, state_dir):
    """doctor's 'Workspace:' line and prompt's empty-section warning printed the workspace raw: a
    newline in its name split them (files, status, links and state show it as \\x0a)."""
    odd = tmp_path / "two\nlines"
    odd.mkdir()
    said = cli("-w", str(odd), "doctor").stdout.splitlines()[0]
    assert said == f"Workspace: {tmp_path}/two\\x0alines", said
    empty = cli("-w", str(odd), "prompt").stderr
    assert f"{tmp_path}/two\\x0alines has no MEMORY.md" in empty and len(empty.splitlines()) == 1, empty
    none = cli("-w", str(odd), "serve", "--stop").stderr  # (serve's own lines too)
    assert none == f"no memory service runs for {tmp_path}/two\\x0alines\n", none


@pytest.mark.parametrize("unbuffered", [True, False])
def test_a_change_whose_output_is_lost_is_said_done_never_bid_again(workspace, state_dir, unbuffered):
    """An unbuffered stdout (or an output past the buffer) fails in the command, not at exit: `mv a b >
    /dev/full` said 'the disk is full: free some space and run the command again' of the move it had
    made, and run again, it failed ('does not exist; nothing was moved')."""
    write(workspace / "memory" / "a.md", "- a\n")
    for i in range(400):  # `files` writes more than a buffer holds
        write(workspace / "memory" / f"long-name-of-a-note-{i:04d}.md", "- x\n")
    env = dict(env_for(workspace, state_dir))
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    subprocess.run([sys.executable, "-m", "openclaw_memory", "read", "memory/a.md"], stdout=subprocess.DEVNULL, env=env,
                   cwd=workspace, timeout=120, check=True)  # (a move is guarded as a write)
    for args in (("mv", "memory/a.md", "memory/b.md"), ("files",), ("files", "--json")):
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-m", "openclaw_memory", *args], stdout=full, stderr=subprocess.PIPE,
                                  text=True, env=env, cwd=workspace, timeout=120)
        assert done.returncode == 1 and done.stderr == "error: the output was not written: the disk is full\n", (args, done.stderr)
    assert (workspace / "memory" / "b.md").read_text() == "- a\n" and not (workspace / "memory" / "a.md").exists()


def test_an_agent_named_memory_is_told_its_workspace_is_the_default_agents_memory_folder(cli, tmp_path, state_dir):
    """An agent named memory under agents.defaults.workspace gets <defaults>/memory (OpenClaw's
    resolveAgentWorkspaceDir does so too): main's memory/ folder. Its write said "give -w <defaults>",
    which would put agent memory in main's workspace outright; doctor said nothing."""
    import json

    agent = tmp_path / "agent"
    write(agent / "MEMORY.md", "# main\n")
    write(agent / "memory" / "n.md", "main's note\n")
    (state_dir / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {"workspace": str(agent)},
                                                                    "entries": {"main": {"default": True}, "memory": {}}}}))
    env = {"OPENCLAW_WORKSPACE": ""}
    overlap = (f"agent memory's workspace {agent / 'memory'} (its folder memory/ in agents.defaults.workspace, as OpenClaw "
               f"gives an agent with no workspace of its own) is the memory/ folder of agent main's workspace {agent}: "
               "agent main lists, reads and searches agent memory's notes as its own; rename agent memory or give it a "
               "workspace of its own (agents.entries.memory.workspace in openclaw.json)")
    done = cli("--agent", "memory", "files", env=env)
    assert f"warning: {overlap}\n" in done.stderr and "give -w" not in done.stderr
    for who in ("main", "memory"):  # doctor names it for every agent: it is openclaw.json's
        doctor = cli("--agent", who, "doctor", "--json", env=env)
        (finding,) = [f for f in doctor.json()["findings"] if f["id"] == "workspace-in-memory"]
        assert (finding["severity"], finding["message"], finding["paths"]) == ("warning", overlap, [str(agent / "memory")])
    # Given with -w, the folder is what the user named: the old advice stands.
    assert "give -w" in cli("--agent", "memory", "-w", str(agent / "memory"), "files").stderr
    # A workspace of its own: no warning, no finding.
    write(tmp_path / "own" / "MEMORY.md", "# own\n")
    (state_dir / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {"workspace": str(agent)}, "entries": {
        "main": {"default": True}, "memory": {"workspace": str(tmp_path / "own")}}}}))
    assert "warning" not in cli("--agent", "memory", "files", env=env).stderr
    assert "workspace-in-memory" not in cli("--agent", "main", "doctor", env=env).stdout


def test_an_agents_workspace_in_another_agents_extra_path_is_a_doctor_warning(cli, tmp_path, state_dir):
    import json

    a, b = tmp_path / "a", tmp_path / "notes" / "b"
    write(a / "MEMORY.md", "# a\n")
    write(b / "MEMORY.md", "# b\n")
    (state_dir / "openclaw.json").write_text(json.dumps({"agents": {"entries": {
        "a": {"default": True, "workspace": str(a), "memorySearch": {"extraPaths": [str(tmp_path / "notes")]}},
        "b": {"workspace": str(b)}}}}))
    doctor = cli("--agent", "a", "doctor", "--json", env={"OPENCLAW_WORKSPACE": ""})
    (finding,) = [f for f in doctor.json()["findings"] if f["id"] == "workspace-in-memory"]
    assert finding["message"].startswith(f"agent b's workspace {b} (agents.entries.b.workspace in openclaw.json) lies in "
                                         f"the extra path {tmp_path / 'notes'} of agent a's workspace {a}: ")


def test_a_workspace_given_as_its_notes_folder_is_told_the_folder_above(cli, workspace, tmp_path):
    """`-w ws/memory` found no memory system and said only that (doctor: "Memory system not found ...
    Install the memory system", files: "No memory files"): a warning names the workspace above."""
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "a.md", "a\n")
    told = (f"warning: {workspace / 'memory'} is the memory/ folder of the workspace {workspace}, which holds MEMORY.md: "
            f"give -w {workspace} (the folder that holds memory/)")
    doctor = cli("doctor", "-w", str(workspace / "memory"))
    assert told in doctor.stderr and doctor.stderr.count("warning: ") == 1, doctor.stderr
    files = cli("files", "--json", "-w", str(workspace / "memory"))
    assert told in files.stderr and files.json()["files"] == []
    assert "warning" not in cli("files", "-w", str(workspace)).stderr
    write(tmp_path / "solo" / "memory" / "n.md", "n\n")  # no MEMORY.md above: its notes say what it is
    solo = cli("files", "-w", str(tmp_path / "solo" / "memory"))
    assert f"holds notes but no MEMORY.md: it looks like the memory/ folder of the workspace {tmp_path / 'solo'}" in solo.stderr
    write(tmp_path / "own" / "memory" / "MEMORY.md", "# Own\n")  # a workspace named memory with its own memory
    write(tmp_path / "own" / "MEMORY.md", "# Above\n")
    assert "warning" not in cli("files", "-w", str(tmp_path / "own" / "memory")).stderr
    for name in ("AGENTS.md", "SOUL.md"):  # OpenClaw's workspace files: an agent's workspace named memory, not notes
        write(tmp_path / name / "memory" / name, "# Agent\n")
        assert "warning" not in cli("files", "-w", str(tmp_path / name / "memory")).stderr
