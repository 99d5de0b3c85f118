"""What the docs say, checked against the product: their Python examples compile, the lists they give
are the product's lists, the versions they name exist, and `serve` prints what they say it prints."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys

import pytest

from conftest import FAKE_MODEL, REPO, env_for, wait_for_line, write
from openclaw_memory import __version__
from openclaw_memory.history.versions import ORIGINS
from openclaw_memory.index.results import SearchResult
from openclaw_memory.settings import default_model_cache
from openclaw_memory.wire import to_json

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _text(name: str) -> str:
    return (REPO / name).read_text(encoding="utf-8")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_python_example_compiles(page):
    """As written, to be pasted into a file: a top-level `async with` is a SyntaxError there."""
    for number, block in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S), 1):
        compile(block, f"{page.name} python example {number}", "exec")


def test_every_history_origin_is_documented():
    bullet = _text("docs/watch.md").split("- `origin`: ", 1)[1].split("\n- ", 1)[0]
    listed = re.sub(r"\([^()]*\)", "", bullet)  # the names, without what each one means
    assert set(re.findall(r"`([a-z-]+)`", listed)) == set(ORIGINS), bullet


def test_the_mcp_search_result_names_every_key_of_search_json():
    row = next(line for line in _text("docs/mcp.md").splitlines() if line.startswith("| `memory_search` |"))
    shape = row.split("the JSON of `search --json`: `", 1)[1].split("`", 1)[0]
    top = re.sub(r"\[.*\]", "", shape)  # the keys of the result itself, not of its hits
    documented = {k.rstrip("?") for k in re.findall(r"[A-Za-z]+\??", top)}
    # Every key it may print: stale (with its warning and action) and updating never print together;
    # a path filter that matched nothing is a key of its own.
    stale = to_json(SearchResult((), "hybrid", stale_paths=("a.md",), notes=("n",), filtered_out=True))
    updating = to_json(SearchResult((), "hybrid", stale_paths=("a.md",), updating=True))
    assert documented == set(stale) | set(updating), shape


def test_the_model_cache_is_documented_where_it_is():
    """One place: the per-machine cache (ONNX exports), not the state dir."""
    cache = str(default_model_cache({})).replace(str(default_model_cache({}).home()), "~", 1)
    page = _text("docs/configuration.md")
    assert cache == "~/.cache/openclaw-memory/models" and cache in page
    assert "<state-dir>/openclaw-memory/models" not in page


def test_no_page_or_module_speaks_of_releases_that_never_were():
    """0.1.0 was the first release: nothing describes the import of what development builds kept in
    the data dir, and a release named as an earlier one came after 0.1 and before this version."""
    current = tuple(int(n) for n in __version__.split(".")[:2])
    for path in [*PAGES, *sorted((REPO / "openclaw_memory").rglob("*.py"))]:
        text = path.read_text(encoding="utf-8")
        assert not re.findall(r"[Dd]evelopment builds? before|before-state-db|the upgrade imports", text), path.name
        # "releases before 0.2", "before version 0.3", "before 0.2/0.3"; not a timing ("before 0.65 -> 4.60").
        named = r"(?:[Rr]eleases? before |[Bb]efore (?:release |version |v))(\d+)\.(\d+)\b|[Bb]efore (\d+)\.(\d+)/"
        for found in re.findall(named, text):
            major, minor = found[0] or found[2], found[1] or found[3]
            assert (0, 1) < (int(major), int(minor)) <= current, f"{path.name} names release {major}.{minor}"


@pytest.mark.slow
def test_serve_prints_each_applied_change_as_watch_does(workspace, state_dir):
    """docs/serve.md and docs/watch.md: `serve` with its live sync prints one line per applied change
    on stdout (a service's journal), the line `watch` prints."""
    write(workspace / "MEMORY.md", "# Memory\n\nThe user prefers green tea.\n")
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "serve"], cwd=workspace, env=env_for(workspace, state_dir),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(proc.stderr, "watching ", timeout=120)
        with open(workspace / "MEMORY.md", "a", encoding="utf-8") as f:
            f.write("\nBackups run at 02:00.\n")
        line = wait_for_line(proc.stdout, "MEMORY.md: updated", timeout=120)  # (the first sync printed "added")
        assert re.fullmatch(r"MEMORY\.md: updated, \d+ chunks embedded, \d+ reused, \d+ removed \(\d+ ms\)\n", line), line
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120)
    assert proc.returncode == 0


# The README's commands that run until they are stopped (tests/test_watch.py, test_serve.py, test_mcp.py run them).
RUN_UNTIL_STOPPED = {"watch", "serve", "mcp"}


def test_the_readme_usage_runs_as_written_in_order(tmp_path):
    """README.md's Usage block, line by line, as a user pastes it into a shell with a home of their own
    (~/agent: a copy of the sample workspace, ~/.openclaw the state dir), nothing else configured: each
    command succeeds. It named the workspace on its first command only, so every later one looked in
    OpenClaw's default workspace and failed (exit 2, "workspace not found")."""
    block = _text("README.md").split("## Usage", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    home = tmp_path / "home"
    shutil.copytree(REPO / "fixtures" / "workspace", home / "agent")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env.update(FAKE_MODEL, HOME=str(home), PATH=f"{os.path.dirname(sys.executable)}{os.pathsep}{env.get('PATH', '')}")
    script, commands = [], []
    for line in filter(None, (line.strip() for line in block.splitlines())):
        words = shlex.split(line, comments=True)
        if words[0] == "source":  # the venv's activation: the PATH above stands for it
            continue
        if words[0] == "openclaw-memory":
            if words[1] in RUN_UNTIL_STOPPED:
                continue
            commands.append(line.split("  #", 1)[0].strip())
            line = f'{line}\necho "exit status $? of {len(commands) - 1}" >&2'
        script.append(line)
    assert len(commands) >= 10, block
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    statuses = [int(n) for n in re.findall(r"^exit status (\d+) of \d+$", done.stderr, re.M)]
    assert len(statuses) == len(commands), done.stderr
    for command, status in zip(commands, statuses, strict=True):
        # doctor finds the sample's legacy memory.md (exit 1: problems found, docs/cli.md)
        assert status == (1 if command == "openclaw-memory doctor" else 0), f"{command}: exit {status}\n{done.stderr}"
    assert (home / "main.tar.gz").is_file() and "- met Alice" in (home / "agent" / "memory" / "2026-11-30.md").read_text()


def test_docs_cli_md_names_every_flag_of_every_command_and_no_other():
    """Each command's synopsis (or a sentence naming the command with the flag) in docs/cli.md
    gives every flag `--help` lists, and no flag the command does not take, but OpenClaw's flags
    that answer with what does the same (`status --deep`) and `restore --all --to` (read as
    `rollback`); the settings flags are in the settings table."""
    from openclaw_memory.cli.spec import SETTINGS, commands

    page = re.sub(r"```.*?```", "", _text("docs/cli.md"), flags=re.S)
    spans = re.findall(r"`([^`\n]+)`", page)
    spelled = {f for o in SETTINGS for f in (*o.flags, *((o.negative,) if o.kind == "toggle" else ()))}
    table = page.split("## Settings flags", 1)[1].split("\n## ", 1)[0]
    assert spelled == set(re.findall(r"(?<![\w-])--?[a-z][a-z-]*", table)), table
    for command in commands():
        words = " ".join(("watchdog", *command.words) if command.name in ("snapshot", "verify", "heartbeat") else command.words)
        takes = {f for o in command.opts for f in (*o.flags, *((o.negative,) if o.kind == "toggle" else ()))}
        named = {f for s in spans if s == words or s.startswith(words + " ") for f in re.findall(r"--[a-z][a-z-]*", s)}
        assert takes <= named, f"docs/cli.md does not name {sorted(takes - named)} of `{words}`"
        answered = {flag for flag, _ in command.instead} | ({"--all", "--to"} if words == "restore" else set())
        assert named - spelled - takes <= answered, f"docs/cli.md gives `{words}` {sorted(named - spelled - takes - answered)}"


def test_every_environment_variable_the_package_reads_is_in_docs_configuration_md():
    """The test suite's fault hook aside (docs/architecture.md names it): a user meets every other."""
    from openclaw_memory.faults import ENV as FAULTS

    read = {name for path in (REPO / "openclaw_memory").rglob("*.py")
            for name in re.findall(r"[\"'](OPENCLAW_[A-Z_]+)[\"']", path.read_text(encoding="utf-8"))}
    assert len(read) > 10 and FAULTS in read
    page = _text("docs/configuration.md")
    assert not sorted(name for name in read - {FAULTS} if f"`{name}" not in page)


def test_the_python_calls_docs_search_md_shows_have_the_memory_methods_defaults():
    """search.md documented `search(query, limit=6, ...)` where the method's limit is None (openclaw.json's
    maxResults, else 6): a caller copying it overrode the configured default."""
    import ast
    import inspect

    from openclaw_memory import Memory

    text = " ".join(_text("docs/search.md").split())
    calls = re.findall(r"`((?:index|search)\(.*?\))`", text)
    assert {call.split("(")[0] for call in calls} == {"index", "search"}, calls
    for call in calls:
        parsed = ast.parse(call, mode="eval").body
        assert isinstance(parsed, ast.Call) and isinstance(parsed.func, ast.Name)
        params = inspect.signature(getattr(Memory, parsed.func.id)).parameters
        for given in parsed.keywords:
            assert given.arg in params, call
            assert ast.literal_eval(given.value) == params[given.arg].default, (call, given.arg)
