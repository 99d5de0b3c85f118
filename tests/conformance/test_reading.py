"""``read`` / ``memory_get`` against OpenClaw's ``readMemoryFile``: the window, the budget, the refusals."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from openclaw_memory.files.read import read_memory_file
from openclaw_memory.wire import to_json

from .workspaces import build, openclaw_keys, our_extras, our_read, read_request, their_read

EMOJI_LINES = "😀😀\n😀😀\n😀😀\n"
LONG = "x" * 50 + "😀" + "y" * 30

TREE = {
    "MEMORY.md": "line 1\nline 2\r\nline 3\n\n\nline 6 😀 end\n",
    "USER.md": "user prefs\n",
    "DREAMS.md": "dream\n",
    "Dreams.md": "odd case dream\n",
    "memory/emoji.md": EMOJI_LINES,
    "memory/long.md": LONG + "\nsecond\n",
    "memory/crlf.md": "a\r\nb\r\nc\r\n",
    "memory/empty.md": "",
    "memory/blank.md": "   \n\t\n",
    "memory/nolf.md": "one\ntwo",
    "memory/astral-cut.md": "ab😀cd\n",
    "memory/bad-utf8.md": b"ok \xff\xfe bytes\n\xc3(\n",
    "memory/folder.md/inner.md": "inner",
    "memory/.openclaw-repair/x.md": "archived",
    "memory.md": "legacy",
    "notes.md": "not memory",
    "../outside/one.md": "outside one\nline two\n",
    "../outside/sub/two.md": "two",
    "../outside/skip.txt": "txt",
    "../pat/a.md": "a", "../pat/b.md": "b", "../pat/sub/c.md": "c",
    "../single.md": "single\n",
    "../single.txt": "text single\n",
}
EXTRA = ["../outside", {"path": "../pat", "pattern": "a*.md"}, "../single.md", "../single.txt", "../gone"]

WINDOWS = [
    (None, None, None), (1, 1, None), (2, 2, None), (3, None, None), (99, None, None), (None, None, 8),
    (None, None, 4), (None, None, 3), (None, None, 1), (None, None, 2), (2, 1, 5), (None, None, 5),
    # Clamped below 1 to 1, floored, as OpenClaw's readMemoryFile takes them (the reader only: MCP memory_get
    # refuses them first, as OpenClaw's tool does, test_tool_arguments.py; the CLI refuses them as usage errors).
    (0, None, None), (-3, 0, None), (None, -1, 0), (1.9, 2.5, 7.9),
]
PATHS = [
    "MEMORY.md", " MEMORY.md ", "\tMEMORY.md\n", "./MEMORY.md", "USER.md", "memory/emoji.md", "memory/long.md",
    "memory/crlf.md", "memory/empty.md", "memory/blank.md", "memory/nolf.md", "memory/astral-cut.md",
    "memory/bad-utf8.md", "memory/missing.md", "memory/no/such/dir.md", "memory/folder.md", "memory/folder.md/inner.md",
    "memory.md", "notes.md", "MEMORY.txt", "memory/emoji.txt", "", "   ", "~/MEMORY.md", "~",
    "../outside/one.md", "../outside/sub/two.md", "../outside/skip.txt", "../outside/missing.md",
    "../pat/a.md", "../pat/b.md", "../pat/sub/c.md", "../single.md", "../single.txt", "../gone/x.md",
    "../elsewhere/x.md", "memory/../MEMORY.md", "memory/../../outside/one.md", "Dreams.md",
]

# Deliberate differences in reading, by name, with the reason.
REFUSED_HERE = {
    "memory/.openclaw-repair/x.md": ("repair-archive-read-refused", "a .openclaw-repair archive is never memory"),
    "memory\\emoji.md": ("backslash-path-refused", "a backslash path is ambiguous across systems; memory paths use '/'"),
    "memory/\ud83d.md": ("lone-surrogate-refused", "half an emoji names no file; OpenClaw reads it as U+FFFD, another name"),
}


def test_the_legacy_root_is_never_read_through_an_extra_path_holding_the_workspace(oracle, new_ws, checks):
    ws = new_ws()
    build(ws, {"MEMORY.md": "# M\n", "memory.md": "legacy\n", "notes.md": "an extra file\n"})
    extra = ["."]
    legacy, notes = oracle.batch([read_request(ws, "memory.md", extra), read_request(ws, "notes.md", extra)])
    checks.same("read 'notes.md' through the extra path '.'", our_read(ws, "notes.md", extra), their_read(notes))
    checks.deliberate("legacy-root-read-refused", "memory.md is never memory, whichever extra path holds it (OpenClaw's own listing leaves it out)",
                      our_read(ws, "memory.md", extra) == "ERROR" and their_read(legacy) != "ERROR", "memory.md")
    checks.done()


def test_the_repair_archive_is_never_memory_through_an_extra_path_naming_it(oracle, new_ws, checks):
    from .workspaces import our_scan, their_list

    ws = new_ws()
    build(ws, {"MEMORY.md": "# M\n", ".openclaw-repair/other.md": "archived\n", ".openclaw-repair/root-memory/a.md": "a\n"})
    extra = [".openclaw-repair"]
    read, listing = oracle.batch([read_request(ws, ".openclaw-repair/other.md", extra),
                                  {"op": "list", "ws": str(ws), "extra": extra}])
    checks.deliberate("repair-archive-read-refused", "a .openclaw-repair archive is never memory",
                      our_read(ws, ".openclaw-repair/other.md", extra) == "ERROR" and their_read(read) != "ERROR", "via extra path")
    checks.deliberate("repair-archive-not-listed", "a .openclaw-repair archive is never memory",
                      [f.path for f in our_scan(ws, extra).files] == ["MEMORY.md"]
                      and ".openclaw-repair/other.md" in their_list(ws, listing), str(listing))
    checks.done()


def test_a_path_through_a_file(oracle, new_ws, checks):
    """A folder on the way that is a file (or a FIFO) is a refusal; a missing one is "not found"."""
    ws = new_ws()
    build(ws, {"memory/a.md": "a", "memory/f": "f", "notes/n.md": "n", "notes/pipe": ("fifo",), "memory.md": "legacy",
               "../out/file": "x", "notes/sub/s.md": "s"})
    cases = [([], "memory/a.md/x.md"), ([], "memory/f/deeper/x.md"), ([], "memory/no/x.md"), (["notes"], "notes/n.md/x.md"),
             (["notes"], "notes/pipe/x.md"), (["notes"], "notes/no/deeper/x.md"), (["notes"], "notes/sub/x.md"),
             (["../out/file"], "../out/file/x.md"), (["."], "memory.md/x.md"), ([".."], "memory.md/inner.md")]
    for (extra, path), answer in zip(cases, oracle.batch([read_request(ws, p, e) for e, p in cases])):
        checks.same(f"read {path!r} extra={extra}", our_read(ws, path, extra), their_read(answer))
    checks.done()


def test_hand_written_reads(oracle, new_ws, checks):
    ws = new_ws()
    build(ws, TREE)
    requests, ours = [], []
    for path in PATHS:
        for window in WINDOWS:
            absolute = str(ws / path.strip()) if path.strip().startswith("../outside") else None
            for p in filter(None, [path, absolute]):
                requests.append(read_request(ws, p, EXTRA, *window))
                ours.append((p, window, our_read(ws, p, EXTRA, *window)))
    answers = oracle.batch(requests)
    for (p, window, mine), answer in zip(ours, answers):
        checks.same(f"read {p!r} window={window}", mine, their_read(answer))
    bad = next(answer for (p, window, _), answer in zip(ours, answers) if p == "memory/bad-utf8.md")
    said = to_json(read_memory_file("memory/bad-utf8.md", str(ws), extra_paths=our_extras(ws, EXTRA)))
    checks.deliberate("read-warnings", "a read says when it showed invalid UTF-8 as U+FFFD",
                      bool(said.get("warnings")) and "warnings" not in their_read(bad))
    cut = next(answer for (p, window, _), answer in zip(ours, answers) if p == "memory/long.md" and window == (None, None, 8))
    said = to_json(read_memory_file("memory/long.md", str(ws), extra_paths=our_extras(ws, EXTRA), max_chars=8))
    checks.deliberate("read-line-chars", "a hard cut says the cut line's length, the maxChars that shows it whole",
                      said.get("lineChars") == 82 and "nextFrom" not in said and "lineChars" not in their_read(cut), str(said))
    deliberate = [read_request(ws, p, EXTRA) for p in REFUSED_HERE]
    for (p, (name, reason)), answer in zip(REFUSED_HERE.items(), oracle.batch(deliberate)):
        checks.deliberate(name, reason, our_read(ws, p, EXTRA) == "ERROR" and their_read(answer) != "ERROR", p)
    checks.done()


def test_the_issue_example(oracle, new_ws, checks):
    ws = new_ws()
    build(ws, {"memory/e.md": EMOJI_LINES})
    (answer,) = oracle.batch([read_request(ws, "memory/e.md", [], None, None, 8)])
    mine = our_read(ws, "memory/e.md", [], None, None, 8)
    checks.same("emoji maxChars 8", mine, their_read(answer))
    checks.same("one line, from=2", (mine["lines"], mine["nextFrom"]), (1, 2))
    checks.done()


def test_symlinks_refused_like_openclaw(oracle, new_ws, checks):
    ws = new_ws()
    build(ws, {"real.md": "r\n", "memory/a.md": "a\n", "MEMORY.md": ("symlink", "real.md"),
               "memory/link.md": ("symlink", "a.md"), "../ext/n.md": "n", "../extlink": ("symlink", "ext"),
               "../ext2/in.md": "i", "../ext2/dir": ("symlink", "../ext")})
    extra = ["../extlink", "../ext2"]
    paths = ["MEMORY.md", "memory/link.md", "../extlink/n.md", "../ext2/dir/n.md"]
    answers = oracle.batch([read_request(ws, p, extra) for p in paths])
    for p, answer in zip(paths, answers):
        checks.same(f"read through symlink {p}", our_read(ws, p, extra), their_read(answer))
    checks.done()


LINE_CHARS = st.sampled_from(["a", "b", " ", "\t", "\r", "é", "\u2028", "😀", "\U00010348", "\ufeff", "```", "-"])
LINES = st.lists(st.lists(LINE_CHARS, max_size=14).map("".join), max_size=9)


@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
          phases=[Phase.explicit, Phase.generate])  # every example costs an OpenClaw run: no shrinking
@given(
    files=st.lists(st.tuples(LINES, st.booleans()), min_size=12, max_size=12),
    windows=st.lists(
        st.tuples(st.one_of(st.none(), st.integers(-1, 11)), st.one_of(st.none(), st.integers(0, 6)),
                  st.one_of(st.none(), st.integers(0, 40))),
        min_size=4, max_size=4,
    ),
)
def test_generated_contents_and_windows(oracle, new_ws, files, windows):
    from .conftest import Checks

    checks = Checks()
    ws = new_ws()
    tree = {}
    for i, (lines, final_newline) in enumerate(files):
        text = "\n".join(lines) + ("\n" if final_newline and lines else "")
        tree[f"memory/n{i}.md" if i % 3 else f"../ext/n{i}.md"] = text
    build(ws, tree)
    extra = ["../ext"]
    requests, ours = [], []
    for rel in tree:
        for window in windows:
            requests.append(read_request(ws, rel, extra, *window))
            ours.append((rel, window, our_read(ws, rel, extra, *window)))
    for (rel, window, mine), answer in zip(ours, oracle.batch(requests)):
        checks.same(f"read {rel} {window} of {tree[rel]!r}", mine, their_read(answer))
    checks.done()


def test_mcp_memory_get_clamps_and_uses_context_limit(oracle, new_ws, tmp_path, checks):
    """The reader ``memory_get`` calls (``Memory.read(clamp=True)``) next to OpenClaw's: below 1 -> 1,
    ``contextLimits.memoryGetMaxChars`` the budget. (The tool refuses a window below 1 or a fraction
    before reading, as OpenClaw's does: test_tool_arguments.py.)"""
    import json

    from openclaw_memory.memory.local import LocalMemory
    from openclaw_memory.settings import Overrides, resolve_settings

    ws = new_ws()
    build(ws, {"MEMORY.md": "".join(f"line {i} 😀\n" for i in range(1, 40))})
    state = tmp_path / "state"
    state.mkdir()
    (state / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {"contextLimits": {"memoryGetMaxChars": 25}}}}))
    s = resolve_settings(Overrides(workspace=str(ws), state_dir=str(state)))
    cases = [(None, None, None), (0, 0, 0), (-2, 3, None), (5, None, 100), (2.7, 1, -4)]
    requests = [read_request(ws, "MEMORY.md", [], f, n, m if m is not None else 25) for f, n, m in cases]
    memory = LocalMemory(s)
    for (f, n, m), answer in zip(cases, oracle.batch(requests)):
        mine = to_json(memory.read("MEMORY.md", from_line=f, lines=n, max_chars=m, clamp=True))
        checks.deliberate("read-version", "a read also gives the version it came from (for write --expect)",
                          "version" in mine and "version" not in their_read(answer))
        checks.same(f"memory_get from={f} lines={n} maxChars={m}", openclaw_keys(mine), their_read(answer))
    checks.done()
