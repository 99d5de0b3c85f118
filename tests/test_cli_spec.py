"""One declaration of every flag: the parser that runs commands and the typer app that renders
help are both built from cli/spec.py, and give the same results."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

import pytest

from conftest import write
from openclaw_memory.cli.app import app as typer_app
from openclaw_memory.cli.main import main
from openclaw_memory.cli.output import error
from openclaw_memory.cli.parse import parse
from openclaw_memory.cli.spec import COMMANDS, SETTINGS
from openclaw_memory.errors import MemoryToolError


def _capture(run):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run()
    return code, out.getvalue()


def via_parser(args):
    return _capture(lambda: main(args))


def via_typer(args):
    def run():
        try:
            return typer_app(args=args, prog_name="openclaw-memory", standalone_mode=False)
        except MemoryToolError as exc:  # main() maps these to an exit status and a message
            error(exc.message, "--json" in args)
            return exc.exit_code

    return _capture(run)


@pytest.fixture
def tree(workspace, state_dir, tmp_path):
    write(workspace / "MEMORY.md", "alpha\nbeta\ngamma\n")
    write(workspace / "memory/2026-11-30.md", "today's note\n")
    write(tmp_path / "extra/e.md", "e")
    return ["-w", str(workspace), "--state-dir", str(state_dir), "--extra", str(tmp_path / "extra")]


@pytest.mark.parametrize("argv", [
    ["files"], ["files", "--json"], ["--multimodal", "files", "--json"], ["files", "--no-multimodal", "--json"],
    ["read", "MEMORY.md"], ["read", "MEMORY.md", "--json", "--from", "2", "--lines", "1"],
    ["read", "memory/2026-11-30.md", "--max-chars", "3", "--json"], ["read", "memory/none.md", "--json"],
    ["read", "--from=2", "MEMORY.md"],
    ["prompt", "--peek", "--date", "2026-11-30"], ["prompt", "--json", "--peek", "--date", "2026-11-30"],
    ["state", "--json"], ["history", "MEMORY.md", "--json"], ["doctor", "--json"],
    ["watchdog", "verify", "--json"],
])
def test_parser_and_typer_give_the_same_output(tree, argv):
    assert via_parser(tree + argv) == via_typer(tree + argv)


def test_settings_between_a_group_and_its_subcommand(tree, workspace, state_dir):
    code, out = via_parser(["watchdog", "-w", str(workspace), "--state-dir", str(state_dir), "snapshot", "--json"])
    assert code == 0 and '"label"' in out


def test_a_value_that_starts_with_a_dash_is_taken(tree, workspace):
    code, out = via_parser(tree + ["write", "memory/x.md", "--append", "-wow, dashes", "--json", "--no-index"])
    assert code == 0, out
    assert (workspace / "memory/x.md").read_text() == "-wow, dashes\n"


def test_a_flag_is_never_taken_as_a_value(capsys):
    assert main(["search", "--agent", "--mode", "text"]) == 2
    err = capsys.readouterr().err
    assert "--agent needs a value" in err and "--agent=VALUE" in err


def test_a_query_that_starts_with_a_dash_after_double_dash():
    parsed = parse(["search", "--mode", "text", "--", "--agent"])
    assert parsed.values["query"] == "--agent" and parsed.values["mode"] == "text" and parsed.settings["agent"] is None


@pytest.mark.parametrize("argv, message", [
    (["files", "--bogus"], "no such option: --bogus"),
    (["fiels"], "did you mean 'files'"),
    (["read"], "missing argument PATH"),
    (["read", "a", "b"], "unexpected argument 'b'"),
    (["read", "a", "--lines", "x"], "--lines must be an integer"),
    (["migrate"], "missing option --to"),
    (["files", "--json=1"], "--json takes no value"),
])
def test_usage_errors_exit_2_with_a_hint(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "--help' for help" in err and "Traceback" not in err


def test_version_and_short_help(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("openclaw-memory ")
    assert main(["read", "-h"]) == 0
    assert "--max-chars" in capsys.readouterr().out


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_every_flag_and_every_settings_flag_is_in_the_help(capsys, command):
    assert main([*command.words, "--help"]) == 0
    text = capsys.readouterr().out
    for opt in command.opts + SETTINGS:
        assert opt.flags[0] in text, f"{opt.flags[0]} missing from `{command.name} --help`"


def test_the_parser_path_never_imports_typer_or_rich(tree):
    for argv in (["files", "--json"], ["read", "MEMORY.md"], ["prompt", "--peek"], ["state"], ["watchdog", "verify"],
                 ["history", "MEMORY.md"], ["write", "memory/y.md", "--append", "y", "--no-index"], ["doctor", "--json"]):
        child = ("import sys\nfrom openclaw_memory.cli.main import main\nmain(sys.argv[1:])\n"
                 "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'rich', 'click'))\n"
                 "sys.stderr.write('HEAVY:' + ','.join(heavy))\n")
        proc = subprocess.run([sys.executable, "-c", child, *tree, *argv], capture_output=True, text=True)
        assert proc.stderr.rsplit("HEAVY:", 1)[1] == "", f"{argv} imported {proc.stderr.rsplit('HEAVY:', 1)[1]}"
