"""The one command-line parser, generated from cli/spec.py: what it makes of command lines, its
usage errors, its help (every flag of every command, checked from the spec), and the handlers
the spec names."""

from __future__ import annotations

import datetime as dt
import inspect
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write
from openclaw_memory.cli.main import main
from openclaw_memory.cli.parse import SETTINGS_TITLE, parse
from openclaw_memory.cli.spec import COMMANDS, GROUPS, HELP, SETTINGS, Command

NO_SETTINGS = {"workspace": None, "agent": None, "state_dir": None, "extra": [], "multimodal": None, "qdrant_url": None, "session": None}


def defaults(command: Command) -> dict:
    """What the handler gets for a command line that gives none of the command's flags."""
    return ({o.dest: o.default_value() for o in command.opts} | {a.dest: None for a in command.args}
            | {dest: None for dest in command.given_settings})


def command(words: str) -> Command:
    return next(c for c in COMMANDS if c.name == words)


def flat(text: str) -> str:
    """Help text without its line breaks and indentation (argparse wraps to the terminal)."""
    return "".join(text.split())


@pytest.fixture
def tree(workspace, state_dir, tmp_path):
    write(workspace / "MEMORY.md", "alpha\nbeta\ngamma\n")
    write(workspace / "memory/2026-11-30.md", "today's note\n")
    write(tmp_path / "extra/e.md", "e")
    return ["-w", str(workspace), "--state-dir", str(state_dir), "--extra", str(tmp_path / "extra")]


# The command lines the parser was once compared on with the typer app: what each one means.
LINES = [
    (["files"], "files", {}, {}),
    (["files", "--json"], "files", {"json_out": True}, {}),
    (["--multimodal", "files", "--json"], "files", {"json_out": True}, {"multimodal": True}),
    (["files", "--no-multimodal", "--json"], "files", {"json_out": True}, {"multimodal": False}),
    (["read", "MEMORY.md"], "read", {"path": "MEMORY.md"}, {}),
    (["read", "MEMORY.md", "--json", "--from", "2", "--lines", "1"], "read", {"path": "MEMORY.md", "json_out": True, "from_line": 2, "lines": 1}, {}),
    (["read", "memory/2026-11-30.md", "--max-chars", "3", "--json"], "read", {"path": "memory/2026-11-30.md", "max_chars": 3, "json_out": True}, {}),
    (["read", "memory/none.md", "--json"], "read", {"path": "memory/none.md", "json_out": True}, {}),
    (["read", "--from=2", "MEMORY.md"], "read", {"path": "MEMORY.md", "from_line": 2}, {}),
    (["prompt", "--peek", "--date", "2026-11-30"], "prompt", {"consume": False, "today": dt.date(2026, 11, 30)}, {}),
    (["prompt", "--json", "--peek", "--date", "2026-11-30"], "prompt", {"consume": False, "today": dt.date(2026, 11, 30), "json_out": True}, {}),
    (["state", "--json"], "state", {"json_out": True}, {}),
    (["history", "MEMORY.md", "--json"], "history", {"path": "MEMORY.md", "json_out": True}, {}),
    (["doctor", "--json"], "doctor", {"json_out": True}, {}),
    (["watchdog", "verify", "--json"], "watchdog verify", {"json_out": True}, {}),
    # flags of every kind, and settings at every level
    (["doctor", "--repair", "--yes"], "doctor", {"fix": True, "yes": True}, {}),
    (["watchdog", "snapshot", "--json", "lab"], "watchdog snapshot", {"label": "lab", "json_out": True}, {}),
    (["search", "q", "--collection", "a", "--path=memory/*.md", "--collection", "b", "--limit", "3", "--min-score", "-0.5"], "search",
     {"query": "q", "collections": ["a", "b"], "paths": ["memory/*.md"], "limit": 3, "min_score": -0.5}, {}),
    (["search", "--mode", "text", "--", "--agent"], "search", {"query": "--agent", "mode": "text"}, {}),
    (["write", "memory/x.md", "--append", "-wow", "--no-index"], "write", {"path": "memory/x.md", "append": "-wow", "update_index": False}, {}),
    (["restore", "a", "b", "--json"], "restore", {"path": "a", "version": "b", "json_out": True}, {}),
    (["migrate", "--to", "embedded", "--from", "http://h:6333"], "migrate", {"to": "embedded", "source": "http://h:6333"}, {}),
    (["read", "-wX", "MEMORY.md", "-w", "-Y"], "read", {"path": "MEMORY.md"}, {"workspace": "-Y"}),
    (["--agent", "--json", "files"], "files", {}, {"agent": "--json"}),  # before the command, --json is no flag
    (["-w", "w1", "watchdog", "-w", "w2", "verify"], "watchdog verify", {}, {"workspace": "w2"}),
    (["-w", "w1", "watchdog", "-w", "w2", "verify", "-w", "w3"], "watchdog verify", {}, {"workspace": "w3"}),
    (["--extra", "a", "watchdog", "--extra", "b", "verify", "--extra", "c"], "watchdog verify", {}, {"extra": ["a", "b", "c"]}),
    (["files", "--extra", "b", "--agent=x", "--session", "s", "--qdrant-url", "http://q", "--state-dir", "d"], "files", {},
     {"extra": ["b"], "agent": "x", "session": "s", "qdrant_url": "http://q", "state_dir": "d"}),
    (["--", "files"], "files", {}, {}),
    # OpenClaw's spellings of the same thing (`openclaw memory index --force`, `memory search --max-results N --query Q`)
    (["index", "--force"], "index", {"full": True}, {}),
    # restore --all is rollback (every file back at a moment), wherever the settings flags are
    (["restore", "--all", "--to", "snap", "--dry-run"], "rollback", {"to": "snap", "dry_run": True}, {}),
    (["-w", "w1", "restore", "--to", "snap", "--all"], "rollback", {"to": "snap"}, {"workspace": "w1"}),
    (["restore", "--", "--all", "v"], "restore", {"path": "--all", "version": "v"}, {}),
    (["search", "--max-results", "3", "q"], "search", {"query": "q", "limit": 3}, {}),
    (["search", "--query", "q"], "search", {"query_flag": "q"}, {}),
    (["search", "a", "--query", "b"], "search", {"query": "a", "query_flag": "b"}, {}),  # --query wins (the handler)
    # -w=PATH is -w PATH, as argparse reads it (it was the path "=PATH", after the hint had said to write -w=VALUE)
    (["files", "-w=ws"], "files", {}, {"workspace": "ws"}),
    (["-w=-ws", "files"], "files", {}, {"workspace": "-ws"}),
    (["files", "-w==ws"], "files", {}, {"workspace": "=ws"}),
    # `--flag=--` is the value `--`, and `--` after the bare `--` an argument (argparse dropped both:
    # `--agent=--` was [], a traceback further on; `restore a -- --` lost its VERSION)
    (["files", "--agent=--", "--extra=--", "-w--"], "files", {}, {"agent": "--", "extra": ["--"], "workspace": "--"}),
    (["write", "memory/x.md", "--append=--"], "write", {"path": "memory/x.md", "append": "--"}, {}),
    (["restore", "a", "--", "--"], "restore", {"path": "a", "version": "--"}, {}),
    (["search", "--", "--"], "search", {"query": "--"}, {}),
]


@pytest.mark.parametrize("argv, name, values, settings", LINES, ids=[" ".join(line[0]) for line in LINES])
def test_what_a_command_line_means(argv, name, values, settings):
    parsed = parse(argv)
    assert parsed.action == "run" and parsed.command == command(name) and parsed.words == tuple(name.split())
    assert parsed.values == defaults(command(name)) | values
    assert parsed.settings == NO_SETTINGS | settings
    assert parsed.json == bool(values.get("json_out"))


EXIT = {"read memory/none.md --json": 1, "watchdog verify --json": 2}  # a missing file; no baseline yet


@pytest.mark.parametrize("argv", [line[0] for line in LINES[:15]], ids=[" ".join(line[0]) for line in LINES[:15]])
def test_the_command_lines_run(tree, capsys, argv):
    assert main(tree + argv) == EXIT.get(" ".join(argv), 0)
    out = capsys.readouterr().out
    if "--json" in argv:
        json.loads(out)


def test_settings_between_a_group_and_its_subcommand(tree, workspace, state_dir, capsys):
    assert main(["watchdog", "-w", str(workspace), "--state-dir", str(state_dir), "snapshot", "--json"]) == 0
    assert '"label"' in capsys.readouterr().out


def test_a_value_that_starts_with_a_dash_is_taken(tree, workspace, capsys):
    assert main(tree + ["write", "memory/x.md", "--append", "-wow, dashes", "--json", "--no-index"]) == 0, capsys.readouterr()
    assert (workspace / "memory/x.md").read_text() == "-wow, dashes\n"


@pytest.mark.parametrize("argv, message, where", [
    (["files", "--bogus"], "no such option: --bogus", "files"),
    (["files", "--jso"], "no such option: --jso (did you mean --json?)", "files"),
    (["read", "MEMORY.md", "--max", "4"], "no such option: --max (did you mean --max-chars?)", "read"),  # no abbreviations
    (["--bogus", "files"], "no such option: --bogus", ""),
    (["files", "--version"], "no such option: --version", "files"),
    # A note pasted as a query, front matter first: it was echoed whole, over as many lines as it has.
    (["search", "---\ntitle: Trip\n---\n\n# Packing list for the trip to the coast"],
     "no such option: '---\\ntitle: Trip\\n---\\n\\n# Packing list for the trip to ... "
     "(an argument that starts with - goes after --)", "search"),
    # A query or text that starts with -w and holds a space: it was -w "ith space", another workspace, exit 0.
    (["search", "-with space", "hello"], "no such option: '-with space' (an argument that starts with - goes after --; "
                                         "a value holding white space goes apart from its flag: -w 'VALUE')", "search"),
    (["write", "memory/n.md", "--append", "x", "-w /elsewhere"],
     "no such option: '-w /elsewhere' (an argument that starts with - goes after --; a value holding white space goes "
     "apart from its flag: -w 'VALUE')", "write"),
    (["fiels"], "no such command 'fiels' (did you mean 'files'?)", ""),
    (["watchdog", "verfy"], "no such command 'verfy' (did you mean 'verify'?)", "watchdog"),
    # the whole line, the flag and its value moved (it said `openclaw-memory read --lines`: no value, no PATH)
    (["--lines", "3", "read", "a"], "--lines is an option of a command, so it goes after the command's name: "
                                    "openclaw-memory read --lines 3 a", ""),
    (["read"], "missing argument PATH", "read"),
    (["restore"], "missing argument PATH", "restore"),
    (["read", "a", "b"], "unexpected argument 'b': read takes PATH (quote a value of several words)", "read"),
    (["search", "likes", "tea"], "unexpected argument 'tea': search takes QUERY (quote a value of several words)", "search"),
    (["write", "MEMORY.md", "# tea"],
     "unexpected argument '# tea': write takes PATH; the text is given with --append TEXT, --replace-file FILE or --stdin",
     "write"),
    (["files", "--", "x"], "unexpected argument 'x': files takes no arguments", "files"),
    (["restore", "a", "b", "c"], "unexpected argument 'c': restore takes PATH [VERSION] (quote a value of several words)",
     "restore"),
    (["read", "a", "--lines", "x"], "--lines must be an integer, not 'x'", "read"),
    (["search", "q", "--min-score", "high"], "--min-score must be a number, not 'high'", "search"),
    (["migrate"], "missing option --to", "migrate"),
    (["files", "--json=1"], "--json takes no value", "files"),
    (["files", "--no-multimodal=yes"], "--no-multimodal takes no value", "files"),
    (["search", "--agent", "--mode", "text"], "--agent needs a value (write --agent=VALUE for a value that starts with -)", "search"),
    (["files", "-w"], "-w needs a value", "files"),
    # the hint's spelling works (it said -w=VALUE, which was the path "=VALUE")
    (["files", "-w", "--json"], "-w needs a value (write --workspace=VALUE for a value that starts with -)", "files"),
    (["read", "--lines", "-h"], "--lines needs a value", "read"),
    # a bare `--` after a value flag ends the flags: no value (it was the value `--`: a traceback,
    # or the flag silently dropped, and a --help after it printed the help)
    (["files", "--agent", "--"], "--agent needs a value (write --agent=VALUE for a value that starts with -)", "files"),
    (["files", "-w", "--"], "-w needs a value", "files"),
    (["search", "--query", "--", "x"], "--query needs a value", "search"),
    (["read", "MEMORY.md", "--from", "--"], "--from needs a value", "read"),
    (["write", "memory/a.md", "--append", "--", "--help"], "--append needs a value", "write"),
    (["write", "memory/a.md", "--", "--help"], "unexpected argument '--help': write takes PATH", "write"),
    (["search", "q", "--min-score=--"], "--min-score must be a number, not '--'", "search"),
    (["prompt", "--date=--", "--peek"], "--date must be a date like 2026-11-30, not '--'", "prompt"),
    (["files", "--", "--"], "unexpected argument '--': files takes no arguments", "files"),
    # a date of the right form that names no day says why (it said only "must be a date like ...")
    (["prompt", "--date", "2028-02-30"], "--date must be a date like 2026-11-30, not '2028-02-30': February 2028 has 29 days",
     "prompt"),
    # OpenClaw's flags with no use here say what does the same (`--force` was "did you mean --workspace?")
    (["status", "--deep"], "no such option: --deep: status always reads the index itself", "status"),
    (["status", "--index"], "no such option: --index: `openclaw-memory index` updates the index", "status"),
    (["index", "--verbose"], "no such option: --verbose: progress is always on stderr", "index"),
    (["files", "--verbose"], "no such option: --verbose: progress and warnings always go to stderr", "files"),
    (["search"], "missing argument QUERY (or --query TEXT)", "search"),
    # `--json` of the two commands that print no JSON result was "did you mean --session?"
    (["completion", "bash", "--json"], "no such option: --json: completion prints a shell script", "completion"),
    (["mcp", "--json"], "no such option: --json: mcp speaks MCP's JSON-RPC", "mcp"),
    # `--version` after a command was "did you mean --session?"
    (["files", "--version"], "no such option: --version: the version is `openclaw-memory --version`, before any command", "files"),
    # names people type for a command, and a command flag before the command it belongs to
    (["get", "MEMORY.md"], "no such command 'get' (did you mean 'read'?)", ""),
    (["ls"], "no such command 'ls' (did you mean 'files'?)", ""),
    (["FILES"], "no such command 'FILES' (did you mean 'files'?)", ""),  # (caps lock: no suggestion was made)
    (["list"], "no such command 'list' (did you mean 'files'?)", ""),
    # `help` of a command that does not exist showed the root's help, exit 0, as if that were the answer
    (["help", "serach"], "no such command 'serach' (did you mean 'search'?)", ""),
    (["help", "get"], "no such command 'get' (did you mean 'read'?)", ""),
    (["help", "watchdog", "verfy"], "no such command 'verfy' (did you mean 'verify'?)", "watchdog"),
    (["--json", "search", "q"], "--json is an option of a command, so it goes after the command's name: "
                                "openclaw-memory search --json q", ""),
    (["--limit", "3", "search", "q"], "--limit is an option of a command, so it goes after the command's name: "
                                      "openclaw-memory search --limit 3 q", ""),
    # a command named that does not take it, or a command that does not exist: what that command says
    (["--limit", "3", "files"], "no such option: --limit", "files"),
    (["--json", "serach", "q"], "no such command 'serach' (did you mean 'search'?)", ""),
    # restore's --help lists restore --all's flags: `restore --to X` was "did you mean --last?"
    (["restore", "--to", "2026-01-01", "--json"],
     "no such option: --to: a flag of `restore --all` (no PATH), the same as `rollback`, not of `restore PATH [VERSION]`",
     "restore"),
    (["restore", "MEMORY.md", "--dry-run"],
     "no such option: --dry-run: a flag of `restore --all` (no PATH), the same as `rollback`, not of `restore PATH [VERSION]`",
     "restore"),
])
def test_usage_errors_exit_2_with_a_hint(capsys, argv, message, where):
    assert main(argv) == 2
    captured = capsys.readouterr()
    help_line = f"Try '{' '.join(['openclaw-memory', *where.split()])} --help' for help."
    assert captured.err.startswith(f"error: {message}") and help_line in captured.err and "Traceback" not in captured.err
    assert captured.out == "" or "--json" in argv  # (with --json the error is JSON on stdout too)


def test_a_command_flag_given_to_a_group_says_where_it_goes(capsys):
    # No subcommand named: none is put in its place (it said `watchdog snapshot --json`, which, run,
    # moved the baseline a verify reports against), and those that take the flag are named.
    assert main(["watchdog", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error == ("--json is an option of a command, so it goes after the command's name: "
                     "openclaw-memory watchdog COMMAND --json (COMMAND: snapshot, verify, heartbeat)")
    assert main(["--limit", "3"]) == 2
    assert capsys.readouterr().err.splitlines()[0] == ("error: --limit is an option of a command, so it goes after the "
                                                       "command's name: openclaw-memory COMMAND --limit 3 (COMMAND: search, log)")


@pytest.mark.parametrize("flag, before, after", [
    # a group's subcommand is the one named: it was always `watchdog snapshot`, and run, that moved the
    # baseline past the tampering the verify was to report
    ("--json", ["--json", "-w", "WS", "watchdog", "verify"], ["-w", "WS", "watchdog", "verify", "--json"]),
    ("--json", ["-w", "WS", "watchdog", "--json", "--agent", "main", "heartbeat"],
     ["-w", "WS", "watchdog", "--agent", "main", "heartbeat", "--json"]),
    # the settings flags, the arguments and the flag's value are kept (they were dropped)
    ("--json", ["--json", "-w", "WS", "--agent", "main", "files"], ["-w", "WS", "--agent", "main", "files", "--json"]),
    ("--limit", ["-w", "WS", "--limit", "3", "search", "backups"], ["-w", "WS", "search", "--limit", "3", "backups"]),
    ("--from", ["--from", "2", "-w", "WS", "read", "MEMORY.md"], ["-w", "WS", "read", "--from", "2", "MEMORY.md"]),
    # every command flag before the name moves with it: the line printed runs
    ("--json", ["--json", "--limit=3", "-w", "WS", "search", "it's"], ["-w", "WS", "search", "--json", "--limit=3", "it's"]),
])
def test_a_command_flag_before_the_command_is_answered_with_the_line_to_run(cli, workspace, flag, before, after):
    write(workspace / "MEMORY.md", "backups nightly\nline two\n")
    assert cli("-w", str(workspace), "watchdog", "snapshot").returncode == 0
    write(workspace / "MEMORY.md", "tampered\n")
    result = cli(*(str(workspace) if w == "WS" else w for w in before))
    assert result.returncode == 2
    line = shlex.join(["openclaw-memory", *(str(workspace) if w == "WS" else w for w in after)])
    assert result.stderr.splitlines()[0] == f"error: {flag} is an option of a command, so it goes after the command's name: {line}"
    ran = cli(*shlex.split(line)[1:])  # run as printed
    assert ran.returncode in (0, 1), ran.stderr  # (verify: 1, a file changed)
    if "verify" in after:
        assert [c["path"] for c in ran.json()["changed"]] == ["MEMORY.md"]


def test_a_usage_error_with_json_is_json_too(capsys):
    assert main(["read", "--json"]) == 2
    captured = capsys.readouterr()
    # one line for a program (it was an indented object over three lines, but for watch and serve);
    # where to get help is the terminal's second line only
    assert captured.out == '{"error": "missing argument PATH"}\n'
    assert captured.err == "error: missing argument PATH\nTry 'openclaw-memory read --help' for help.\n"


@pytest.mark.parametrize("argv, error", [
    (["files", "--json", "--agent", "--"], "--agent needs a value (write --agent=VALUE for a value that starts with -)"),
    (["log", "--json", "--since=--"], "--since must be a date like 2026-11-03, not '--'"),
    (["search", "q", "--json", "--mode=--"], "--mode must be one of hybrid, vector, text, not '--'"),
])
def test_a_value_of_dashes_is_a_usage_error_in_json_too(cli, argv, error):
    result = cli(*argv)
    assert result.returncode == 2 and result.json() == {"error": error}, result


@pytest.mark.parametrize("argv, error", [
    (["log", "--json", "--since", "2026-02-29"],
     "--since must be a date like 2026-11-03, not '2026-02-29': February 2026 has 28 days (2026 is not a leap year)"),
    (["log", "--json", "--until", "2026-13-01"], "--until must be a date like 2026-11-03, not '2026-13-01': there is no month 13"),
    (["search", "q", "--json", "--since", "2026-04-31"],
     "--since must be a date like 2026-11-03, not '2026-04-31': April 2026 has 30 days"),
    (["log", "--json", "--since", "2026-02-00"], "--since must be a date like 2026-11-03, not '2026-02-00': a month's days count from 1"),
    (["log", "--json", "--since", "2026-2-1"], "--since must be a date like 2026-11-03, not '2026-2-1'"),  # the form is the error
    (["log", "--json", "--since", "2026-02-29T10:00:00Z"],  # a form never taken: the form is the error, not the day
     "--since must be a date like 2026-11-03, not '2026-02-29T10:00:00Z'"),
])
def test_a_date_that_names_no_day_says_why(cli, argv, error):
    result = cli(*argv)
    assert result.returncode == 2 and result.json() == {"error": error}, result


def test_version(capsys):
    for argv in (["--version"], ["--version", "files"], ["-w", "x", "--version"]):
        assert main(argv) == 0
        assert capsys.readouterr().out.startswith("openclaw-memory ")


@pytest.mark.parametrize("argv, words", [
    ([], ()), (["-h"], ()), (["--help"], ()), (["-w", "x"], ()),
    (["read", "-h"], ("read",)), (["-h", "read"], ("read",)), (["read", "MEMORY.md", "--json", "--help"], ("read",)),
    (["watchdog"], ("watchdog",)), (["watchdog", "-h"], ("watchdog",)), (["watchdog", "snapshot", "--help"], ("watchdog", "snapshot")),
    (["migrate", "-h"], ("migrate",)),  # help before a missing required option
    (["help"], ()), (["help", "search"], ("search",)), (["-w", "x", "help", "watchdog", "verify"], ("watchdog", "verify")),
    (["help", "help"], ()),  # (was "no such command 'help'", which completion offers after `help`)
])
def test_help_wherever_it_is_asked(capsys, argv, words):
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: {' '.join(('openclaw-memory', *words))} [OPTIONS]")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_the_help_of_every_command_lists_every_flag(capsys, command):
    assert main([*command.words, "--help"]) == 0
    text = capsys.readouterr().out
    usage = " ".join(["openclaw-memory", *command.words, "[OPTIONS]"] + [a.metavar or a.dest.upper() if a.required else f"[{(a.metavar or a.dest.upper())}]"
                                                                       for a in command.args])
    assert text.startswith(f"usage: {usage}\n")
    assert flat(command.help) in flat(text)
    for arg in command.args:
        assert (arg.metavar or arg.dest.upper()) in text and flat(arg.help) in flat(text)
    own, settings = text.split(SETTINGS_TITLE)
    for opt, part in [(o, own) for o in command.opts] + [(o, settings) for o in SETTINGS]:
        for flag in opt.flags + ((opt.negative,) if opt.kind == "toggle" else ()):
            assert flag in part.replace(",", " ").split(), f"{flag} missing from `{command.name} --help`"
        if opt.kind == "value":
            assert (opt.metavar or opt.dest.upper()) in part
        assert flat(opt.help) in flat(part), f"the help of {opt.flags[0]} missing from `{command.name} --help`"
        if opt.kind == "value" and opt.default_value() not in (None, []) and "default" not in opt.help:
            assert flat(f"(default: {opt.default_value()})") in flat(part)
    # The flags of a command this one's name runs with a switch (`restore --all --to X --dry-run` is
    # `rollback`): `restore --help` listed neither --all nor --to.
    for other in COMMANDS:
        if other.spelled is not None and other.spelled[0] == command.name:
            words = own.replace(",", " ").split()
            assert other.spelled[1] in words, f"{other.spelled[1]} missing from `{command.name} --help`"
            for opt in other.opts:
                for flag in opt.flags:
                    assert flag in words, f"{flag} ({' '.join(other.spelled)}) missing from `{command.name} --help`"


@pytest.mark.parametrize("words", [()] + [(g,) for g in GROUPS], ids=lambda w: " ".join(w) or "root")
def test_the_help_of_the_root_and_of_a_group_lists_its_commands(capsys, words):
    assert main([*words, "--help"]) == 0
    text = capsys.readouterr().out
    commands, settings = text.split(SETTINGS_TITLE)
    assert flat(HELP if not words else GROUPS[words[0]]) in flat(commands)
    listed = {c.words[len(words)]: (c.help if len(c.words) == len(words) + 1 else GROUPS[c.words[len(words)]])
              for c in COMMANDS if c.words[: len(words)] == words}
    for name, help_text in listed.items():
        assert f"\n    {name} " in commands and flat(help_text) in flat(commands)
    for opt in SETTINGS:
        assert opt.flags[0] in settings and flat(opt.help) in flat(settings)
    assert ("--version" in commands) == (not words)


def test_every_handler_takes_exactly_its_commands_arguments_and_flags():
    for command in COMMANDS:
        params = list(inspect.signature(command.handler).parameters.values())
        assert params[0].name == "settings", command.name
        assert {p.name for p in params[1:]} == set(defaults(command)), f"{command.name}: {[p.name for p in params]}"
        inspect.signature(command.handler).bind(None, **defaults(command))  # called with one keyword per dest


def test_a_level_has_each_flag_once():
    for command in COMMANDS:
        spellings = [f for o in command.opts + SETTINGS for f in o.flags + ((o.negative,) if o.kind == "toggle" else ())]
        dests = [o.dest for o in command.opts + SETTINGS] + [a.dest for a in command.args]
        assert len(spellings) == len(set(spellings)) and len(dests) == len(set(dests)), command.name


HEAVY = ("typer", "rich", "click", "numpy", "onnxruntime", "torch", "sentence_transformers", "tokenizers", "qdrant_edge",
         "qdrant_client", "mcp", "watchfiles")


def test_a_light_command_imports_nothing_heavy(tree):
    """The spec imports every command module, so none of them may import a heavy library at its top."""
    for argv in (["files", "--json"], ["read", "MEMORY.md"], ["prompt", "--peek"], ["state"], ["watchdog", "verify"],
                 ["history", "MEMORY.md"], ["write", "memory/y.md", "--append", "y", "--no-index"], ["doctor", "--json"], ["read", "--help"]):
        child = ("import sys\nfrom openclaw_memory.cli.main import main\nmain(sys.argv[1:])\n"
                 f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})\n"
                 "sys.stderr.write('HEAVY:' + ','.join(heavy))\n")
        proc = subprocess.run([sys.executable, "-c", child, *tree, *argv], capture_output=True, text=True)
        assert proc.stderr.rsplit("HEAVY:", 1)[1] == "", f"{argv} imported {proc.stderr.rsplit('HEAVY:', 1)[1]}"


def test_the_parser_loads_no_state_database():
    """Every command module is imported with the parser: one importing the watchdog's store at its top
    put sqlite3 and the state database's modules (5.6 ms) on the start of `files`, `read` and `--help`."""
    child = "import sys, openclaw_memory.cli.main\nprint(sorted(m for m in sys.modules if m == 'sqlite3' or m.startswith('openclaw_memory.database')))"
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout

def test_the_entry_point_keeps_what_it_loaded_out_of_the_collector(tree):
    """The modules' objects live as long as the process: `run` freezes them, so no collection (nor
    the one at exit) walks them again."""
    child = ("import atexit, gc, sys\n"
             "atexit.register(lambda: sys.stderr.write(f'FROZEN:{gc.get_freeze_count()}'))\n"
             "from openclaw_memory.cli.main import run\nsys.argv[0] = 'openclaw-memory'\nrun()\n")
    proc = subprocess.run([sys.executable, "-c", child, *tree, "read", "MEMORY.md"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stderr.rsplit("FROZEN:", 1)[1]) > 10_000


def test_a_command_line_reads_only_its_own_declaration(tree):
    """Reading a declaration's annotations costs a light command more than the rest of the spec:
    `read` builds the parameters of `read` alone, not those of the other operations."""
    child = ("import sys\nfrom openclaw_memory.cli.main import main\nmain(sys.argv[1:])\n"
             "from openclaw_memory.memory import OPERATIONS\n"
             "sys.stderr.write('BUILT:' + ','.join(sorted(n for n, op in OPERATIONS.items() if 'params' in vars(op))))\n")
    proc = subprocess.run([sys.executable, "-c", child, *tree, "read", "MEMORY.md"], capture_output=True, text=True)
    assert proc.stderr.rsplit("BUILT:", 1)[1] == "read", proc.stderr


def _flag_spellings(opts) -> set[str]:
    return {f for o in opts for f in o.flags + ((o.negative,) if o.kind == "toggle" else ())}


def test_bash_completion_offers_exactly_what_the_parser_accepts(tmp_path):
    """`openclaw-memory completion bash`, generated from the spec, run in a real bash: the commands,
    a group's subcommands, each command's flags (and the settings flags), file names for a path."""
    write(tmp_path / "notes-a.md", "a")
    cases = [[""], ["watchdog", ""], *[[*c.words, "-"] for c in COMMANDS], ["--state-dir", str(tmp_path / "notes")],
             ["search", "--limit", ""]]
    calls = "\n".join("comp openclaw-memory " + " ".join(f"'{w}'" for w in case) for case in cases)
    program = ('eval "$(' + f"'{sys.executable}'" + ' -m openclaw_memory completion bash)"\n'
               'comp() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _openclaw_memory; echo "${COMPREPLY[*]}"; }\n'
               + calls + "\n")
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin",
                          "OPENCLAW_WORKSPACE": str(tmp_path / "no-such-workspace")})  # it needs none
    assert done.returncode == 0 and done.stderr == "", done.stderr
    got = [set(line.split()) for line in done.stdout.splitlines()]
    assert got[0] == {c.words[0] for c in COMMANDS} | {"help"}
    assert got[1] == {c.words[1] for c in COMMANDS if c.words[0] == "watchdog"}
    for command, offered in zip(COMMANDS, got[2:], strict=False):
        # and the switch and flags of a command its name also runs (`restore --all --to T` is `rollback`):
        # `restore --` offered neither --all nor --to, --dry-run, --force, which the parser takes
        also = [c for c in COMMANDS if c.spelled is not None and c.spelled[0] == command.name]
        accepted = _flag_spellings(command.opts + SETTINGS + tuple(o for c in also for o in c.opts))
        assert offered == accepted | {c.spelled[1] for c in also} | {"-h", "--help"}, command.name
    assert got[-2] == {str(tmp_path / "notes-a.md")} and got[-1] == set()  # a path, then a number: no names


def test_bash_completion_offers_a_file_name_with_spaces_whole(tmp_path):
    """A file name with a space is one reply (`COMPREPLY=($(compgen -f))` split it into `memory/my` and
    `note.md`), and the word is read as the shell reads it: escaped or quoted, it still finds the file
    (a file of this machine: `export ARCHIVE`, `-w PATH`)."""
    write(tmp_path / "memory/my note.md", "a")
    write(tmp_path / 'memory/a"b.md', "b")
    cases = ["memory/my", "memory/my\\ n", '"memory/my n', "'memory/my n", 'memory/a\\"']
    program = ('eval "$(' + f"'{sys.executable}'" + ' -m openclaw_memory completion bash)"\n'
               'comp() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _openclaw_memory; printf "[%s]" "${COMPREPLY[@]}"; echo; }\n'
               + "".join(f"comp openclaw-memory export {shlex.quote(word)}\ncomp openclaw-memory -w {shlex.quote(word)}\n" for word in cases))
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.splitlines() == ["[memory/my note.md]"] * 8 + ['[memory/a"b.md]'] * 2


def _bash_completions(lines: list[list[str]], cwd, env: dict | None = None) -> list[list[str]]:
    """What bash offers for each line (its last word being completed), with this venv's
    openclaw-memory on the PATH."""
    program = ('eval "$(openclaw-memory completion bash)"\n'
               'comp() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _openclaw_memory; printf "[%s]" "${COMPREPLY[@]}"; echo; }\n'
               + "".join("comp openclaw-memory " + " ".join(shlex.quote(w) for w in line) + "\n" for line in lines))
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, cwd=cwd,
                          env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", **(env or {})})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return [line[1:-1].split("][") if line != "[]" else [] for line in done.stdout.splitlines()]


def test_bash_completion_of_memory_paths_archives_and_choices(tmp_path, workspace, state_dir):
    """A memory file's argument (read PATH, mv SOURCE DESTINATION) completes the workspace's paths as
    `files` lists them, a folder at a time, with the settings given on the line, wherever the shell
    is (mv had no completion at all, read the shell's folder's names); export/import ARCHIVE
    complete file names (none before); `completion`, `help` and `search --mode` their words."""
    write(workspace / "MEMORY.md", "a")
    write(workspace / "memory/my note.md", "b")
    write(workspace / "memory/sub/c.md", "c")
    write(workspace / "memory/sub/tab\tname.md", "t")  # `files` shows it escaped (\x09), a name no read takes: not offered
    write(tmp_path / "here/backup.tar.gz", "x")
    write(tmp_path / "here/MEMORY-old.md", "x")
    settings = ["-w", str(workspace), "--state-dir", str(state_dir)]
    got = _bash_completions([
        [*settings, "mv", ""],
        [*settings, "mv", "MEMORY.md", "memory/"],
        ["mv", "--workspace", "=", str(workspace), "--state-dir", str(state_dir), "memory/my\\ "],
        [*settings, "read", "'memory/s"],
        [*settings, "read", "memory/sub/"],
        [*settings, "restore", "MEMORY.md", ""],  # VERSION: no names
        [*settings, "read", "--json", "--", "-"],
        ["export", ""],
        ["import", "b"],
        ["completion", ""],
        ["help", "s"],
        ["help", "watchdog", ""],
        ["search", "--mode", ""],
        ["search", "--mode", "=", "v"],
        ["log", "--origin", "ag"],
        ["search", "--limit", ""],
    ], cwd=tmp_path / "here")
    got[7].sort()  # (the folder's order)
    assert got == [
        ["MEMORY.md", "memory/"],
        ["memory/my note.md", "memory/sub/"],
        ["memory/my note.md"],
        ["memory/sub/"],
        ["memory/sub/c.md"],
        [],
        [],
        ["MEMORY-old.md", "backup.tar.gz"],
        ["backup.tar.gz"],
        ["bash", "zsh", "fish"],
        ["search", "status", "state", "serve"],
        ["snapshot", "verify", "heartbeat"],
        ["hybrid", "vector", "text"],
        ["vector"],
        ["agent-write"],
        [],
    ]
    # the settings from the environment too; a workspace `files` cannot list offers nothing
    env = {"OPENCLAW_WORKSPACE": str(workspace), "OPENCLAW_STATE_DIR": str(state_dir)}
    assert _bash_completions([["rm", "M"], ["-w", str(tmp_path / "none"), "rm", ""]], cwd=tmp_path, env=env) == [["MEMORY.md"], []]


def test_zsh_and_fish_completion_come_from_the_same_spec(capsys):
    assert main(["completion", "zsh"]) == 0
    zsh = capsys.readouterr().out
    assert zsh.startswith("#compdef openclaw-memory") and "bashcompinit" in zsh and "complete -o filenames -F _openclaw_memory" in zsh
    assert main(["completion", "fish"]) == 0
    fish = capsys.readouterr().out
    for command in COMMANDS:
        assert f"-a {command.words[-1]} " in fish, command.name
        for flag in _flag_spellings(command.opts):
            assert (f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}") in fish, (command.name, flag)
    assert "-n '__fish_seen_subcommand_from restore' -l all" in fish and "__fish_seen_subcommand_from restore' -l dry-run" in fish
    assert main(["completion", "tcsh"]) == 2 and "the shells are bash, zsh, fish" in capsys.readouterr().err
    # fish: memory paths from `files`, archives from the folder, the choices of an argument and a flag, help's commands
    for command in ("read", "mv", "links"):
        assert f"-n '__fish_seen_subcommand_from {command}' -a '(_openclaw_memory_notes)'" in fish
    for command in ("export", "import"):
        assert f"-n '__fish_seen_subcommand_from {command}' -F" in fish
    assert "-n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'" in fish
    assert "-l mode -r -f -a 'hybrid vector text'" in fish
    assert "__fish_seen_subcommand_from help; and not __fish_seen_subcommand_from files read" in fish
