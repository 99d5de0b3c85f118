"""The start-up fast path (argparse) and the typer commands give the same results."""

from __future__ import annotations

import contextlib
import io

import pytest

from conftest import write
from openclaw_memory.cli import app as typer_app
from openclaw_memory.cli.fast import parse_fast, run_fast
from openclaw_memory.cli.main import main


def via_typer(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = typer_app.app(args=args, prog_name="openclaw-memory", standalone_mode=False)
    return code, out.getvalue()


def via_fast(args):
    ns = parse_fast(args)
    assert ns is not None, f"fast path refused {args}"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_fast(ns)
    return code, out.getvalue()


@pytest.mark.parametrize("argv", [
    ["files"], ["files", "--json"], ["--multimodal", "files", "--json"],
    ["read", "MEMORY.md"], ["read", "MEMORY.md", "--json", "--from", "2", "--lines", "1"],
    ["read", "memory/2026-11-30.md", "--max-chars", "3", "--json"], ["read", "memory/none.md", "--json"],
    ["prompt", "--peek", "--date", "2026-11-30"], ["prompt", "--json", "--peek", "--date", "2026-11-30"],
])
def test_same_output(workspace, state_dir, tmp_path, argv):
    write(workspace / "MEMORY.md", "alpha\nbeta\ngamma\n")
    write(workspace / "memory/2026-11-30.md", "today's note\n")
    write(tmp_path / "extra/e.md", "e")
    settings = ["-w", str(workspace), "--state-dir", str(state_dir), "--extra", str(tmp_path / "extra")]
    assert via_fast(settings + argv) == via_typer(settings + argv)


@pytest.mark.parametrize("argv", [["files", "--help"], ["read"], ["files", "--bogus"], ["index"], ["read", "a", "b"], ["--version"]])
def test_anything_unusual_goes_to_typer(argv):
    assert parse_fast(argv) is None


def test_errors_map_the_same_on_both_paths(workspace, state_dir, capsys):
    code = main(["read", "notes.md", "--json", "-w", str(workspace), "--state-dir", str(state_dir)])
    assert code == 2 and '"error"' in capsys.readouterr().out
